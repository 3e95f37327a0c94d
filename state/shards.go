package state

import "github.com/reloader/reloader/confighash"

// Placement: which shard holds which entry, and how full each shard is. The caller holds s.mu.

// tombstoneOverhead is what a tombstone adds to its hash: the prefix, a time with as many digits
// as maxUnix, and ':'.
const tombstoneOverhead = len(tombstonePrefix) + len("253402300799") + len(":")

// maxValue is the longest value a config entry or a data-key entry can take. Only config
// entries can become tombstones, and only a Secret's entries hold keyed hashes (mayHold); the
// others a plain hash. A ConfigMap's entries reserve what they did before keyed hashes, so an
// upgrade moves nothing.
func maxValue(key string) int {
	n := confighash.PlainLen
	if KindOf(key) == "Secret" {
		n = confighash.KeyedLen
	}
	if isConfigEntry(key) {
		n += tombstoneOverhead
	}
	return n
}

// reserved is how many bytes a config's key takes of its shard's budget: the most its value can
// ever take, so that an entry never outgrows its shard and never has to move.
func reserved(key string) int { return len(key) + maxValue(key) }

// reserve is reserved for any of our keys: for one of a registered kind, what its kind says.
func (s *Store) reserve(key string) int {
	if k := s.kindOf(key); k != nil {
		return len(key) + k.MaxLen(key)
	}
	return reserved(key)
}

// put stores e under key: in its shard if it has one, else in a shard with room, else in memory
// only.
func (s *Store) put(key string, e Entry) {
	if s.update(key, e) {
		s.markDirty(key)
	}
}

// update is put without marking key dirty; it reports whether the entry changed.
func (s *Store) update(key string, e Entry) bool {
	old, had := s.entries[key]
	if had && encodeEntry(old.public()) == encodeEntry(e) {
		return false
	}
	shard := int(old.shard)
	if !had || shard == memoryOnly {
		shard = s.place(key)
	}
	p := packEntry(e, shard)
	p.stored = had && old.stored && shard == int(old.shard)
	s.entries[key] = p
	s.setUnsaved(key, shard == memoryOnly)
	s.link(key, true)
	return true
}

// place picks the shard for key and counts its bytes there. A shard the key was just
// removed from comes first: the key returns there and the flush writes one value, not a removal
// in one shard and an addition in another. Then the first shard with room; memoryOnly if none.
func (s *Store) place(key string) int {
	size, gone := s.reserve(key), s.gone[key]
	for i := range MaxShards {
		if gone[i] && s.fits(i, size) {
			s.bytes[i] += size
			return i
		}
	}
	for i := range MaxShards {
		if s.fits(i, size) {
			s.bytes[i] += size
			return i
		}
	}
	return memoryOnly
}

func (s *Store) fits(shard, size int) bool {
	return s.bytes[shard]+size <= s.budget
}

// unplace takes key out of its shard: its bytes no longer count there, and the next flush
// removes it there if it may be stored there: an entry set and removed between two flushes
// costs no write.
func (s *Store) unplace(key string, e entry) {
	if e.shard == memoryOnly {
		return
	}
	s.bytes[e.shard] -= s.reserve(key)
	if e.stored {
		s.noteGone(key, int(e.shard))
		s.markDirty(key)
	}
}

// noteGone records that the copy of key in shard must be removed by the next flush; the caller
// marks key dirty.
func (s *Store) noteGone(key string, shard int) {
	g := s.gone[key]
	g[shard] = true
	s.gone[key] = g
}

// placeUnsaved moves memory-only entries into shards that have room again.
func (s *Store) placeUnsaved() {
	for k := range s.unsaved {
		e := s.entries[k]
		e.shard = int8(s.place(k))
		if e.shard == memoryOnly {
			continue
		}
		s.entries[k] = e
		s.setUnsaved(k, false)
		s.markDirty(k)
	}
}

// setUnsaved records whether key is kept in memory only. The state turning full is logged once,
// not once per entry that does not fit, and so is it having room again.
func (s *Store) setUnsaved(key string, unsaved bool) {
	_, was := s.unsaved[key]
	switch {
	case unsaved && !was:
		if len(s.unsaved) == 0 {
			s.log.Error("state is full: new entries are kept in memory only, are lost on restart, and are written once entries are deleted",
				"key", key, "shards", MaxShards, "budget_bytes", s.budget)
		}
		s.unsaved[key] = struct{}{}
	case !unsaved && was:
		delete(s.unsaved, key)
		if len(s.unsaved) == 0 {
			s.log.Info("state has room again: no entry is kept in memory only")
		}
	}
}
