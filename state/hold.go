package state

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
)

// holdPrefix starts the key of a hold: a config content that one workload must not be reloaded
// for again, because its rollout failed and was rolled back. The entry's value is that content's
// hash (the workload's marker value), so that a change to another content lifts the hold.
//
// A hold key is "hold.<config kind>.<workload kind>_<namespace>_<workload>_<config>", the
// namespace only in all-namespaces mode; names never contain '_'. An over-long key becomes
// "hold.<config kind>.-<sha1>". The config kind stays readable, as it decides which hashes the
// entry may hold (keyed only for a Secret).
const holdPrefix = "hold."

// HoldKey returns the state key of a hold on workload kind/namespace/name for config
// configKind/config. namespace is empty in single-namespace mode.
func HoldKey(workloadKind, namespace, name, configKind, config string) string {
	parts := []string{workloadKind, name, config}
	if namespace != "" {
		parts = []string{workloadKind, namespace, name, config}
	}
	k := holdPrefix + configKind + "." + strings.Join(parts, "_")
	if len(k) <= maxKeyLen {
		return k
	}
	sum := sha1.Sum([]byte(strings.Join(parts, "/")))
	return holdPrefix + configKind + ".-" + hex.EncodeToString(sum[:])
}

// isHold reports whether key is a hold.
func isHold(key string) bool { return strings.HasPrefix(key, holdPrefix) }

// holdKind returns the config kind of a hold key.
func holdKind(key string) string {
	kind, _, _ := strings.Cut(strings.TrimPrefix(key, holdPrefix), ".")
	return kind
}

// Hold records that workload must not be reloaded for content hash of a config again; it is
// written by the next flush (or Flush).
func (s *Store) Hold(key, hash string) { s.Set(key, hash) }

// Held returns the content hash a hold names, if there is one.
func (s *Store) Held(key string) (string, bool) {
	e, ok := s.Get(key)
	return e.Hash, ok && isHold(key)
}
