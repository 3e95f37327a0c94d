package state

import (
	"log/slog"

	"github.com/reloader/reloader/confighash"
)

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

// put stores e under key: in its shard if it has one, else in a shard with room, else in memory
// only.
func (s *Store) put(key string, e Entry) {
	if s.update(key, e) {
		s.flusher.due.mark(key)
	}
}

// update is put without marking key dirty; it reports whether the entry changed.
func (s *Store) update(key string, e Entry) bool {
	old, had := s.entries.m[key]
	if had && encodeEntry(s.entries.public(key, old)) == encodeEntry(e) {
		return false
	}
	shard := int(old.shard)
	if !had || shard == memoryOnly {
		shard = s.place(key)
	}
	s.entries.put(key, e, shard, had && old.stored && shard == int(old.shard))
	s.room.setUnsaved(key, shard == memoryOnly)
	s.children.link(key, true)
	return true
}

// place picks the shard for key and counts its bytes there. A key that is not spare and finds no
// room takes it from spare saved entries, which go to memory only; a spare key never evicts. The
// caller holds s.mu.
func (s *Store) place(key string) int {
	size, spare := s.kinds.reserve(key), s.isSpare(key)
	shard := s.room.place(size, s.flusher.due.gone[key])
	if shard == memoryOnly && !spare {
		shard = s.evictFor(size)
	}
	if spare && shard != memoryOnly {
		s.room.addSpare(key, shard, size)
	}
	return shard
}

// isSpare reports whether key is an entry of a config its owner marked spare (SetSpare).
func (s *Store) isSpare(key string) bool {
	if !isConfigPrefixed(key) {
		return false
	}
	_, ok := s.spare[ConfigOf(key)]
	return ok
}

// evictFor moves spare saved entries of one shard to memory only until that shard has room for
// size bytes, counts size there and returns it; memoryOnly if no shard can make room that way.
func (s *Store) evictFor(size int) int {
	for i := range MaxShards {
		if s.room.bytes[i]-s.room.spareBytes[i]+size > s.room.budget {
			continue
		}
		for !s.room.fits(i, size) && len(s.room.spareIn[i]) > 0 {
			for k := range s.room.spareIn[i] {
				s.evict(k, s.entries.m[k])
				break
			}
		}
		if !s.room.fits(i, size) {
			continue // not reached while spareBytes counts spareIn
		}
		s.room.bytes[i] += size
		return i
	}
	return memoryOnly
}

// family returns config's entry key and those of its data-key entries.
func (s *Store) family(config string) []string {
	out := []string{config}
	for k := range s.children[config] {
		out = append(out, k)
	}
	return out
}

// evict moves the saved spare entry e of key to memory only: its bytes leave its shard, and the
// next flush removes it there, as for a deleted key.
func (s *Store) evict(key string, e entry) {
	s.unplace(key, e)
	e.shard, e.stored = memoryOnly, false
	s.entries.m[key] = e
	s.room.setUnsaved(key, true)
}

// unplace takes key out of its shard: its bytes no longer count there, and the next flush
// removes it there if it may be stored there: an entry set and removed between two flushes
// costs no write.
func (s *Store) unplace(key string, e entry) {
	if e.shard == memoryOnly {
		return
	}
	size := s.kinds.reserve(key)
	s.room.bytes[e.shard] -= size
	if s.isSpare(key) {
		s.room.dropSpare(key, int(e.shard), size)
	}
	if e.stored {
		s.flusher.due.removeFrom(key, int(e.shard))
		s.flusher.due.mark(key)
	}
}

// placeUnsaved moves memory-only entries into shards that have room again: entries that are not
// spare first, which may evict spare ones, then spare ones where room is left.
func (s *Store) placeUnsaved() {
	var keys, spare []string
	for k := range s.room.unsaved {
		if s.isSpare(k) {
			spare = append(spare, k)
		} else {
			keys = append(keys, k)
		}
	}
	for _, k := range append(keys, spare...) {
		e := s.entries.m[k]
		if e.shard != memoryOnly {
			continue
		}
		e.shard = int8(s.place(k))
		if e.shard == memoryOnly {
			continue
		}
		s.entries.m[k] = e
		s.room.setUnsaved(k, false)
		s.flusher.due.mark(k)
	}
}

// room counts how full each shard is against its budget, and which entries no shard had room
// for. It knows sizes and keys, not entries. The store's lock guards it.
type room struct {
	budget int            // bytes per shard: ShardBudget, smaller in tests
	bytes  [MaxShards]int // keys and values held by each shard, ours and others'
	// spareIn are the spare entries each shard holds, and spareBytes their bytes: room an entry
	// that is not spare may take.
	spareIn    [MaxShards]map[string]struct{}
	spareBytes [MaxShards]int
	unsaved    map[string]struct{} // entries kept in memory only, waiting for room
	log        *slog.Logger
}

// place picks a shard with room for size bytes and counts them there. A shard in gone (the key
// was just removed from it) comes first: the key returns there and the flush writes one value,
// not a removal in one shard and an addition in another. Then the first shard with room;
// memoryOnly if none.
func (r *room) place(size int, gone shardSet) int {
	for i := range MaxShards {
		if gone[i] && r.fits(i, size) {
			r.bytes[i] += size
			return i
		}
	}
	for i := range MaxShards {
		if r.fits(i, size) {
			r.bytes[i] += size
			return i
		}
	}
	return memoryOnly
}

// addSpare counts key, a spare entry of size bytes, as held by shard.
func (r *room) addSpare(key string, shard, size int) {
	if r.spareIn[shard] == nil {
		r.spareIn[shard] = map[string]struct{}{}
	}
	r.spareIn[shard][key] = struct{}{}
	r.spareBytes[shard] += size
}

// dropSpare undoes addSpare.
func (r *room) dropSpare(key string, shard, size int) {
	delete(r.spareIn[shard], key)
	r.spareBytes[shard] -= size
}

// forget empties the counts before a Load.
func (r *room) forget() {
	r.bytes, r.spareIn, r.spareBytes = [MaxShards]int{}, [MaxShards]map[string]struct{}{}, [MaxShards]int{}
	r.unsaved = map[string]struct{}{}
}

func (r *room) fits(shard, size int) bool {
	return r.bytes[shard]+size <= r.budget
}

// setUnsaved records whether key is kept in memory only. The state turning full is logged once,
// not once per entry that does not fit, and so is it having room again.
func (r *room) setUnsaved(key string, unsaved bool) {
	_, was := r.unsaved[key]
	switch {
	case unsaved && !was:
		if len(r.unsaved) == 0 {
			r.log.Error("state is full: new entries are kept in memory only, are lost on restart, and are written once entries are deleted",
				"key", key, "shards", MaxShards, "budget_bytes", r.budget)
		}
		r.unsaved[key] = struct{}{}
	case !unsaved && was:
		delete(r.unsaved, key)
		if len(r.unsaved) == 0 {
			r.log.Info("state has room again: no entry is kept in memory only")
		}
	}
}
