// Package confighash owns the content hash of ConfigMaps and Secrets: the value that the
// reloader stores in its state and writes into workloads.
//
// The hash is the lower-case hex SHA1 of this byte stream:
//
//	for each section, in the order ConfigMap.data, ConfigMap.binaryData (a Secret has one section, data):
//	  for each key of the section, in ascending byte order:
//	    tag    1 byte: 'd' for ConfigMap.data, 'b' for ConfigMap.binaryData and Secret.data
//	    klen   8 bytes: len(key), big-endian
//	    key    klen bytes
//	    vlen   8 bytes: len(value), big-endian
//	    value  vlen bytes (a Secret's decoded bytes; a ConfigMap data string's UTF-8 bytes)
//
// Every field is length-prefixed, so no two different contents share a stream: {a:"1", b:"2"} and
// {a:"1;b=2"} differ, as do a key moved between data and binaryData. Metadata never counts.
// An empty object hashes to the SHA1 of the empty stream.
package confighash

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

const (
	tagData   = 'd'
	tagBinary = 'b'
)

// ConfigMap returns the content hash of cm.
func ConfigMap(cm *corev1.ConfigMap) string {
	h := sha1.New()
	writeStrings(h, tagData, cm.Data)
	writeBytes(h, tagBinary, cm.BinaryData)
	return hex.EncodeToString(h.Sum(nil))
}

// Secret returns the content hash of s. The API server folds stringData into data, so data is
// the whole content.
func Secret(s *corev1.Secret) string {
	h := sha1.New()
	writeBytes(h, tagBinary, s.Data)
	return hex.EncodeToString(h.Sum(nil))
}

func writeStrings(h hash.Hash, tag byte, m map[string]string) {
	for _, k := range sortedKeys(m) {
		writeEntry(h, tag, k, []byte(m[k]))
	}
}

func writeBytes(h hash.Hash, tag byte, m map[string][]byte) {
	for _, k := range sortedKeys(m) {
		writeEntry(h, tag, k, m[k])
	}
}

func writeEntry(h hash.Hash, tag byte, key string, value []byte) {
	var buf [1 + 8]byte
	buf[0] = tag
	binary.BigEndian.PutUint64(buf[1:], uint64(len(key)))
	h.Write(buf[:])
	h.Write([]byte(key))
	binary.BigEndian.PutUint64(buf[1:], uint64(len(value)))
	h.Write(buf[1:])
	h.Write(value)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
