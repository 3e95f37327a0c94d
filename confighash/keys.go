package confighash

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"sort"
	"unique"

	corev1 "k8s.io/api/core/v1"
)

// KeySum is the SHA1 of one key's entry, in the byte format of the package doc. The key's name
// is interned: configs kept for long (the reloader's records) share one copy of each name, and
// most clusters reuse a few names (config.yaml, application.properties) across many configs.
type KeySum struct {
	key unique.Handle[string]
	Sum [sha1.Size]byte
}

// NewKeySum is the sum of key's entry.
func NewKeySum(key string, sum [sha1.Size]byte) KeySum {
	return KeySum{key: unique.Make(key), Sum: sum}
}

// Key is the key's name.
func (ks KeySum) Key() string { return ks.key.Value() }

// byKey sorts sums by key.
func byKey(sums []KeySum) {
	sort.Slice(sums, func(i, j int) bool { return sums[i].Key() < sums[j].Key() })
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
	byKey(out)
	return out
}

// SecretKeys returns the plain per-key sums of s, sorted by key: what versions before keyed
// hashes recorded. They are kept in memory only, to judge those values without restarts; see
// Key.SecretKeys for the sums that are written.
func SecretKeys(s *corev1.Secret) []KeySum { return secretKeys(newHasher(), s) }

func secretKeys(h *hasher, s *corev1.Secret) []KeySum {
	out := make([]KeySum, 0, len(s.Data))
	for k, v := range s.Data {
		out = append(out, h.bytesSum(tagBinary, k, v))
	}
	byKey(out)
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
	ks := KeySum{key: unique.Make(key)}
	h.Sum(ks.Sum[:0])
	return ks
}

// Subset returns the hash of only the given keys of a config, for a workload that reads just
// those keys: the hex SHA1 over, for each wanted key in ascending order, 'p' and its 20-byte
// KeySum when present, or 'a', its 8-byte big-endian length and the key when absent. Changes to
// other keys leave it unchanged.
func Subset(sums []KeySum, keys []string) string {
	return hex.EncodeToString(subset(sha1.New(), sums, keys))
}

// subset writes the stream that Subset describes into h and returns its sum.
func subset(h hash.Hash, sums []KeySum, keys []string) []byte {
	wanted := append([]string(nil), keys...)
	sort.Strings(wanted)
	for _, k := range wanted {
		if sum, ok := find(sums, k); ok {
			h.Write([]byte{'p'})
			h.Write(sum[:])
			continue
		}
		var buf [1 + 8]byte
		buf[0] = 'a'
		binary.BigEndian.PutUint64(buf[1:], uint64(len(k)))
		h.Write(buf[:])
		h.Write([]byte(k))
	}
	return h.Sum(nil)
}

// find returns the sum of key in sums, which are sorted by key.
func find(sums []KeySum, key string) ([sha1.Size]byte, bool) {
	i := sort.Search(len(sums), func(i int) bool { return sums[i].Key() >= key })
	if i < len(sums) && sums[i].Key() == key {
		return sums[i].Sum, true
	}
	return [sha1.Size]byte{}, false
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
		h.writeBase64(cm.BinaryData[k])
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
	if sum, ok := find(sums, key); ok {
		return hex.EncodeToString(sum[:])
	}
	return Subset(nil, []string{key})
}
