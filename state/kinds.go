package state

import (
	"errors"
	"slices"
	"strings"
)

// EntryKind is a kind of entry the store keeps for its owner without knowing what it means: every
// key that starts with Prefix (which must not start with "v1.", the config entries' prefix). The
// owner encodes keys and values. The store checks a value with Valid before it writes it and
// when it loads it, and reserves MaxLen(key) bytes for the entry in its shard, so that the entry
// never outgrows its shard. A value Valid refuses is corrupt: refused and logged on write,
// dropped and logged at load.
type EntryKind struct {
	Prefix string
	MaxLen func(key string) int
	Valid  func(key, value string) error
}

// kindSet is the kinds registered with the store (New), fixed: it says which keys are ours, how
// many bytes each reserves, and how a stored value reads.
type kindSet []EntryKind

// of returns the registered kind of key; nil for a config entry or someone else's key.
func (ks kindSet) of(key string) *EntryKind {
	for i := range ks {
		if strings.HasPrefix(key, ks[i].Prefix) {
			return &ks[i]
		}
	}
	return nil
}

// owns reports whether key is one of our entries (a config's, or of a registered kind) rather
// than someone else's.
func (ks kindSet) owns(key string) bool { return isConfigPrefixed(key) || ks.of(key) != nil }

// reserve is reserved for any of our keys: for one of a registered kind, what its kind says.
func (ks kindSet) reserve(key string) int {
	if k := ks.of(key); k != nil {
		return len(key) + k.MaxLen(key)
	}
	return reserved(key)
}

// decode reads the stored value v of our key k: as its kind says for a registered kind, else as a
// config entry's or a data-key entry's.
func (ks kindSet) decode(k, v string) (Entry, error) {
	if kind := ks.of(k); kind != nil {
		return Entry{Hash: v, opaque: true}, kind.Valid(k, v)
	}
	e, err := decodeEntry(v)
	switch {
	case err != nil:
	case e.Deleted && !isConfigEntry(k):
		err = errors.New("a data-key entry cannot be a tombstone")
	case e.Hash != "":
		err = mayHold(k, e.Hash)
	}
	return e, err
}

// Value returns the value of the entry under key, of a registered kind.
func (s *Store) Value(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries.m[key]
	if !ok || !e.opaque {
		return "", false
	}
	return s.entries.public(key, e).Hash, true
}

// SetValue records value under key, of a registered kind; it is written by the next flush. A key
// of no registered kind, or a value its kind refuses, is refused and logged: it would not load
// back.
func (s *Store) SetValue(key, value string) {
	k := s.kinds.of(key)
	if k == nil {
		s.log.Error("refusing to record a state value under a key of no registered kind", "key", key)
		return
	}
	if err := k.Valid(key, value); err != nil {
		s.log.Error("refusing to record a state value its kind does not accept", "key", key, "reason", err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(key, Entry{Hash: value, opaque: true})
}

// Keys returns, sorted, the key of every entry whose key starts with one of prefixes, each the
// Prefix of a registered kind.
func (s *Store) Keys(prefixes ...string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, e := range s.entries.m {
		if e.opaque && slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
