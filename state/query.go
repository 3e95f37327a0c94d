package state

import "strings"

// ParseKey splits a config entry key made by Key into its kind, namespace ("" in
// single-namespace mode) and name. It reports false for data-key entries, for keys that are not
// ours, and for over-long keys, which were replaced by a hash and cannot be reversed.
func ParseKey(key string) (kind, namespace, name string, ok bool) {
	if !isConfigEntry(key) {
		return "", "", "", false
	}
	kind, rest, _ := strings.Cut(strings.TrimPrefix(key, "v1."), "_")
	if rest == "" || strings.HasPrefix(rest, "_") {
		return "", "", "", false
	}
	if ns, n, found := strings.Cut(rest, "_"); found {
		return kind, ns, n, true
	}
	return kind, "", rest, true
}
