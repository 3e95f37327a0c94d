package confighash

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// KeySum is the SHA1 of one key's entry, in the byte format of the package doc.
type KeySum struct {
	Key string
	Sum [sha1.Size]byte
}

// ConfigMapKeys returns the per-key sums of cm, sorted by key.
func ConfigMapKeys(cm *corev1.ConfigMap) []KeySum {
	h := newHasher()
	out := make([]KeySum, 0, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		h.Reset()
		h.entry(tagData, k)
		h.length(len(v))
		h.writeString(v)
		out = append(out, h.keySum(k))
	}
	for k, v := range cm.BinaryData {
		out = append(out, h.bytesSum(tagBinary, k, v))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// SecretKeys returns the per-key sums of s, sorted by key.
func SecretKeys(s *corev1.Secret) []KeySum {
	h := newHasher()
	out := make([]KeySum, 0, len(s.Data))
	for k, v := range s.Data {
		out = append(out, h.bytesSum(tagBinary, k, v))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func (h *hasher) bytesSum(tag byte, key string, value []byte) KeySum {
	h.Reset()
	h.entry(tag, key)
	h.length(len(value))
	h.Write(value)
	return h.keySum(key)
}

func (h *hasher) keySum(key string) KeySum {
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
	h := newHasher()
	keys := make([]string, 0, len(cm.Data)+len(cm.BinaryData))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	for k := range cm.BinaryData {
		keys = append(keys, k)
	}
	for i, k := range stakaterOrder(keys) {
		h.pairKey(i, k)
		if v, ok := cm.Data[k]; ok {
			h.writeString(v)
			continue
		}
		enc := base64.NewEncoder(base64.StdEncoding, h.Hash)
		enc.Write(cm.BinaryData[k])
		enc.Close()
	}
	return hex.EncodeToString(h.Sum(nil))
}

// StakaterSecret is stakater Reloader's hash of s: as for a ConfigMap, with decoded data values.
func StakaterSecret(s *corev1.Secret) string {
	h := newHasher()
	keys := make([]string, 0, len(s.Data))
	for k := range s.Data {
		keys = append(keys, k)
	}
	for i, k := range stakaterOrder(keys) {
		h.pairKey(i, k)
		h.Write(s.Data[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// pairKey writes the separator before pair i and its "key=".
func (h *hasher) pairKey(i int, key string) {
	if i > 0 {
		h.writeString(";")
	}
	h.writeString(key)
	h.writeString("=")
}

// stakaterOrder sorts keys as stakater sorts its "key=value" strings. Keys are unique and hold no
// '=' (the API server allows only [-._a-zA-Z0-9]), so that order is the order of "key=": a key
// that is a prefix of another compares '=' with the other's next byte.
func stakaterOrder(keys []string) []string {
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		n := min(len(a), len(b))
		if a[:n] != b[:n] {
			return a[:n] < b[:n]
		}
		if len(a) < len(b) {
			return '=' < b[n]
		}
		return len(a) > len(b) && a[n] < '='
	})
	return keys
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
