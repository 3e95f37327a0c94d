package confighash

import (
	"encoding/hex"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// CollaborneConfigMap is Collaborne kubernetes-reloader's hash of cm, which it stores in its
// state entry and in _RELOADER_CONFIGMAP_<NAME>: the hex SHA1 of "key=value" for each data entry,
// concatenated with no separator. binaryData does not count. The reloader reads it only to take
// over from Collaborne without a restart wave.
func CollaborneConfigMap(cm *corev1.ConfigMap) string {
	return collaborne(cm.Data, (*hasher).writeString)
}

// CollaborneSecret is Collaborne's hash of s: as for a ConfigMap, over the data values as the
// API's JSON carries them, base64-encoded.
func CollaborneSecret(s *corev1.Secret) string {
	return collaborne(s.Data, (*hasher).writeBase64)
}

// collaborne hashes through the hasher's buffer: the values are not copied into new strings
// (at 20,000 ConfigMaps, that copy was 189 MB of the start-up's allocations).
func collaborne[V any](data map[string]V, write func(*hasher, V)) string {
	h := newHasher()
	for _, k := range jsObjectOrder(data) {
		h.writeString(k)
		h.writeString("=")
		write(h, data[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// jsObjectOrder is the order in which Collaborne, in JavaScript, visits the keys of the data the
// API server sent: the API sends them in ascending byte order, and a JavaScript object lists the
// keys that are array indexes ("0" … "4294967294", without leading zeros) first, in numeric
// order, then the others as they came.
func jsObjectOrder[V any](data map[string]V) []string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, aIndex := arrayIndex(keys[i])
		b, bIndex := arrayIndex(keys[j])
		switch {
		case aIndex && bIndex:
			return a < b
		case aIndex != bIndex:
			return aIndex
		}
		return keys[i] < keys[j]
	})
	return keys
}

// arrayIndex reports whether k is a canonical JavaScript array index, and its value.
func arrayIndex(k string) (uint64, bool) {
	n, err := strconv.ParseUint(k, 10, 64)
	if err != nil || n > 4294967294 || strconv.FormatUint(n, 10) != k {
		return 0, false
	}
	return n, true
}
