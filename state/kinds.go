package state

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
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

// KindView is the view of the entries of some registered kinds (Store.Kind), for the part that
// owns them: it reads, writes and lists those entries only. A key of another kind is a mistake in
// the part's wiring, not in the state: the view panics on it, in Value as in the writes, so that
// a part can neither write nor read another part's entries.
type KindView struct {
	mu    *sync.Mutex // the store's
	t     *table
	log   *slog.Logger
	kinds kindSet // a subset of the store's
}

// Kind returns the view of the entries of the registered kinds whose prefixes are given. It
// panics on a prefix no registered kind has.
func (s *Store) Kind(prefixes ...string) *KindView {
	v := &KindView{mu: &s.mu, t: &s.t, log: s.log}
	for _, p := range prefixes {
		i := slices.IndexFunc(s.kinds, func(k EntryKind) bool { return k.Prefix == p })
		if i < 0 {
			panic(fmt.Sprintf("state: no registered kind of entry has the prefix %q", p))
		}
		v.kinds = append(v.kinds, s.kinds[i])
	}
	return v
}

// of returns the kind of key, panicking if it is not one of the view's.
func (v *KindView) of(key string) *EntryKind {
	k := v.kinds.of(key)
	if k == nil {
		panic(fmt.Sprintf("state: key %q is of none of this view's kinds", key))
	}
	return k
}

// Value returns the value of the entry under key.
func (v *KindView) Value(key string) (string, bool) {
	v.of(key)
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.t.entries.m[key]
	if !ok || !e.opaque {
		return "", false
	}
	return v.t.entries.public(key, e).Hash, true
}

// SetValue records value under key; it is written by the next flush. A value its kind refuses is
// refused and logged: it would not load back.
func (v *KindView) SetValue(key, value string) {
	if err := v.of(key).Valid(key, value); err != nil {
		v.log.Error("refusing to record a state value its kind does not accept", "key", key, "reason", err.Error())
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.t.put(key, Entry{Hash: value, opaque: true})
}

// Delete removes the entry under key; the removal is written by the next flush.
func (v *KindView) Delete(key string) {
	v.of(key)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.t.remove(key)
}

// Keys returns, sorted, the key of every entry of the view's kinds.
func (v *KindView) Keys() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for k, e := range v.t.entries.m {
		if e.opaque && v.kinds.of(k) != nil {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
