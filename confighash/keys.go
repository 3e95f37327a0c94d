package confighash

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// KeySum is the SHA1 of one key's entry, in the byte format of the package doc.
type KeySum struct {
	Key string
	Sum [sha1.Size]byte
}

// ConfigMapKeys returns the per-key sums of cm, sorted by key.
func ConfigMapKeys(cm *corev1.ConfigMap) []KeySum {
	out := make([]KeySum, 0, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		out = append(out, keySum(tagData, k, []byte(v)))
	}
	for k, v := range cm.BinaryData {
		out = append(out, keySum(tagBinary, k, v))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// SecretKeys returns the per-key sums of s, sorted by key.
func SecretKeys(s *corev1.Secret) []KeySum {
	out := make([]KeySum, 0, len(s.Data))
	for k, v := range s.Data {
		out = append(out, keySum(tagBinary, k, v))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func keySum(tag byte, key string, value []byte) KeySum {
	h := sha1.New()
	writeEntry(h, tag, key, value)
	ks := KeySum{Key: key}
	h.Sum(ks.Sum[:0])
	return ks
}

// Subset returns the hash of only the given keys of a config, for a workload that reads just
// those keys: the hex SHA1 over, for each wanted key in ascending order, 'p' and its 20-byte
// KeySum when present, or 'a', its 8-byte big-endian length and the key when absent. Changes to
// other keys leave it unchanged.
func Subset(sums []KeySum, keys []string) string {
	wanted := append([]string(nil), keys...)
	sort.Strings(wanted)
	h := sha1.New()
	for _, k := range wanted {
		i := sort.Search(len(sums), func(i int) bool { return sums[i].Key >= k })
		if i < len(sums) && sums[i].Key == k {
			h.Write([]byte{'p'})
			h.Write(sums[i].Sum[:])
			continue
		}
		var buf [1 + 8]byte
		buf[0] = 'a'
		binary.BigEndian.PutUint64(buf[1:], uint64(len(k)))
		h.Write(buf[:])
		h.Write([]byte(k))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// StakaterConfigMap is stakater Reloader's hash of cm, which it stores in STAKATER_<NAME>_CONFIGMAP:
// the hex SHA1 of the sorted "key=value" strings joined by ";", binaryData values base64-encoded.
// The reloader reads it only to take over from stakater without a restart wave.
func StakaterConfigMap(cm *corev1.ConfigMap) string {
	pairs := make([]string, 0, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		pairs = append(pairs, k+"="+v)
	}
	for k, v := range cm.BinaryData {
		pairs = append(pairs, k+"="+base64.StdEncoding.EncodeToString(v))
	}
	return stakaterSum(pairs)
}

// StakaterSecret is stakater Reloader's hash of s: as for a ConfigMap, with decoded data values.
func StakaterSecret(s *corev1.Secret) string {
	pairs := make([]string, 0, len(s.Data))
	for k, v := range s.Data {
		pairs = append(pairs, k+"="+string(v))
	}
	return stakaterSum(pairs)
}

func stakaterSum(pairs []string) string {
	sort.Strings(pairs)
	sum := sha1.Sum([]byte(strings.Join(pairs, ";")))
	return hex.EncodeToString(sum[:])
}

// KeyValue is what the state records for one key a workload reads: the hex of its KeySum when
// the config has the key, else Subset of just that key, which marks it absent. Recording absence
// too means a workload reading an optional key that does not exist is not taken for changed when
// another key changes.
func KeyValue(sums []KeySum, key string) string {
	i := sort.Search(len(sums), func(i int) bool { return sums[i].Key >= key })
	if i < len(sums) && sums[i].Key == key {
		return hex.EncodeToString(sums[i].Sum[:])
	}
	return Subset(nil, []string{key})
}
