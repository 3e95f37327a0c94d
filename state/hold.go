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

// stripPrefix starts the key of a strip, in the same form as a hold's: the content a workload
// runs after someone else's template change (a helm upgrade) removed the reloader's marker for
// a config that held it. The value is that content's hash. It outlives a restart, so that a
// reloader started while the config's entry is behind neither restarts the workload again nor
// misses a revert to that entry.
const stripPrefix = "strip."

// HoldKey returns the state key of a hold on workload kind/namespace/name for config
// configKind/config. namespace is empty in single-namespace mode.
func HoldKey(workloadKind, namespace, name, configKind, config string) string {
	return workloadEntryKey(holdPrefix, workloadKind, namespace, name, configKind, config)
}

// StripKey returns the state key of a strip, as HoldKey does a hold's.
func StripKey(workloadKind, namespace, name, configKind, config string) string {
	return workloadEntryKey(stripPrefix, workloadKind, namespace, name, configKind, config)
}

func workloadEntryKey(prefix, workloadKind, namespace, name, configKind, config string) string {
	parts := []string{workloadKind, name, config}
	if namespace != "" {
		parts = []string{workloadKind, namespace, name, config}
	}
	k := prefix + configKind + "." + strings.Join(parts, "_")
	if len(k) <= maxKeyLen {
		return k
	}
	sum := sha1.Sum([]byte(strings.Join(parts, "/")))
	return prefix + configKind + ".-" + hex.EncodeToString(sum[:])
}

// isHold reports whether key is a hold.
func isHold(key string) bool { return strings.HasPrefix(key, holdPrefix) }

// isStrip reports whether key is a strip.
func isStrip(key string) bool { return strings.HasPrefix(key, stripPrefix) }

// isWorkloadEntry reports whether key is a hold or a strip: an entry of one workload and config.
func isWorkloadEntry(key string) bool { return isHold(key) || isStrip(key) }

// workloadEntryKind returns the config kind of a hold's or a strip's key.
func workloadEntryKind(key string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(key, holdPrefix), stripPrefix)
	kind, _, _ := strings.Cut(rest, ".")
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

// Strip records that a workload stripped of its marker runs content hash of a config.
func (s *Store) Strip(key, hash string) { s.Set(key, hash) }

// Stripped returns the content hash a strip names, if there is one.
func (s *Store) Stripped(key string) (string, bool) {
	e, ok := s.Get(key)
	return e.Hash, ok && isStrip(key)
}

// WorkloadEntryKeys returns the key of every hold and strip.
func (s *Store) WorkloadEntryKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.entries {
		if isWorkloadEntry(k) {
			out = append(out, k)
		}
	}
	return out
}
