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
//
// A ConfigMap's hashes are plain SHA1. A Secret's are HMAC-SHA1 of the same streams under a
// per-installation Key, and written "hmac-<key id>-<40 hex>" (keyed.go): a plain hash of Secret
// content would let anyone who may read ConfigMaps or Deployments confirm a guessed value.
package confighash

import (
	"encoding/binary"
	"encoding/hex"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

const (
	tagData   = 'd'
	tagBinary = 'b'
)

// ConfigMap returns the content hash of cm.
func ConfigMap(cm *corev1.ConfigMap) string {
	h := newHasher()
	for _, k := range sortedKeys(cm.Data) {
		h.entry(tagData, k)
		h.length(len(cm.Data[k]))
		h.writeString(cm.Data[k])
	}
	writeBytes(h, tagBinary, cm.BinaryData)
	return hex.EncodeToString(h.Sum(nil))
}

// Secret returns the plain content hash of s: what versions before keyed hashes recorded and
// wrote for a Secret. It is kept in memory only, to judge those values without restarts; see
// Key.Secret for the value that is written. The API server folds stringData into data, so data
// is the whole content.
func Secret(s *corev1.Secret) string {
	h := newHasher()
	writeBytes(h, tagBinary, s.Data)
	return hex.EncodeToString(h.Sum(nil))
}

func writeBytes(h *hasher, tag byte, m map[string][]byte) {
	for _, k := range sortedKeys(m) {
		h.entry(tag, k)
		h.length(len(m[k]))
		h.Write(m[k])
	}
}

// entry writes an entry's tag and length-prefixed key; its value's length and bytes follow.
func (h *hasher) entry(tag byte, key string) {
	h.buf[0] = tag
	binary.BigEndian.PutUint64(h.buf[1:9], uint64(len(key)))
	h.Write(h.buf[:9])
	h.writeString(key)
}

func (h *hasher) length(n int) {
	binary.BigEndian.PutUint64(h.buf[:8], uint64(n))
	h.Write(h.buf[:8])
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
