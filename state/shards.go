package state

import (
	"log/slog"
	"time"

	"github.com/reloader/reloader/confighash"
)

// Placement: which shard holds which entry, and how full each shard is. The store's lock guards
// all of it.

// table is the store's entries and where each sits: its shard, or memory only; which configs are
// spare; and the eviction of spare entries when the state is full. Every change it makes is
// marked due for the flusher. It knows no API call and checks no key or value: the views do
// (views.go). The store's lock guards it.
type table struct {
	kinds    kindSet // the store's, fixed
	entries  entryMap
	children children
	room     room // how full each shard is
	// spare holds the configs whose owner reads them from no workload (SetSpare): their entries
	// give up their room to others' when the state is full. It outlives a Load.
	spare map[string]struct{}
	due   *pending // the flusher's
}

// current returns the entries, for the flusher.
func (t *table) current() entryMap { return t.entries }

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

// reserved is how many bytes a config's key takes of its shard's budget: its cost (cost) at the
// most its value can ever take, so that an entry never outgrows its shard and never has to move.
func reserved(key string) int { return cost(len(key), maxValue(key)) }

// cost is what a key and a value of these lengths add to the shard etcd stores: the data, the
// managedFields that name the key once more ("f:<key>":{}), and protobuf's framing of both.
// Counting the data alone left a shard of the longest keys 1,743 bytes under etcd's limit.
func cost(keyLen, valueLen int) int { return 2*keyLen + valueLen + entryOverhead }

// entryOverhead is cost's fixed part per entry: the managedFields' quoting and braces, and the
// framing; a full shard of 253-byte keys measured 8 bytes of framing per entry.
const entryOverhead = 16

// put stores e under key: in its shard if it has one, else in a shard with room, else in memory
// only.
func (t *table) put(key string, e Entry) {
	if t.update(key, e) {
		t.due.mark(key)
	}
}

// update is put without marking key dirty; it reports whether the entry changed.
func (t *table) update(key string, e Entry) bool {
	old, had := t.entries.m[key]
	if had && encodeEntry(t.entries.public(key, old)) == encodeEntry(e) {
		return false
	}
	shard := int(old.shard)
	if !had || shard == memoryOnly {
		shard = t.place(key)
	}
	t.entries.put(key, e, shard, had && old.stored && shard == int(old.shard))
	t.room.setUnsaved(key, shard == memoryOnly)
	t.children.link(key, true)
	return true
}

// place picks the shard for key and counts its bytes there. A key that is not spare and finds no
// room takes it from spare saved entries, which go to memory only; a spare key never evicts.
func (t *table) place(key string) int {
	size, spare := t.kinds.reserve(key), t.isSpare(key)
	shard := t.room.place(size, t.due.gone[key])
	if shard == memoryOnly && !spare {
		shard = t.evictFor(size)
	}
	if spare && shard != memoryOnly {
		t.room.addSpare(key, shard, size)
	}
	return shard
}

// isSpare reports whether key is an entry of a config its owner marked spare (SetSpare).
func (t *table) isSpare(key string) bool {
	if !isConfigPrefixed(key) {
		return false
	}
	_, ok := t.spare[ConfigOf(key)]
	return ok
}

// evictFor moves spare saved entries of one shard to memory only until that shard has room for
// size bytes, counts size there and returns it; memoryOnly if no shard can make room that way.
func (t *table) evictFor(size int) int {
	for i := range MaxShards {
		if t.room.bytes[i]-t.room.spareBytes[i]+size > t.room.budget {
			continue
		}
		for !t.room.fits(i, size) && len(t.room.spareIn[i]) > 0 {
			for k := range t.room.spareIn[i] {
				t.evict(k, t.entries.m[k])
				break
			}
		}
		if !t.room.fits(i, size) {
			continue // not reached while spareBytes counts spareIn
		}
		t.room.bytes[i] += size
		return i
	}
	return memoryOnly
}

// family returns config's entry key and those of its data-key entries.
func (t *table) family(config string) []string {
	out := []string{config}
	for k := range t.children[config] {
		out = append(out, k)
	}
	return out
}

// evict moves the saved spare entry e of key to memory only: its bytes leave its shard, and the
// next flush removes it there, as for a deleted key.
func (t *table) evict(key string, e entry) {
	t.unplace(key, e)
	e.shard, e.stored = memoryOnly, false
	t.entries.m[key] = e
	t.room.setUnsaved(key, true)
}

// unplace takes key out of its shard: its bytes no longer count there, and the next flush
// removes it there if it may be stored there: an entry set and removed between two flushes
// costs no write.
func (t *table) unplace(key string, e entry) {
	if e.shard == memoryOnly {
		return
	}
	size := t.kinds.reserve(key)
	t.room.bytes[e.shard] -= size
	if t.isSpare(key) {
		t.room.dropSpare(key, int(e.shard), size)
	}
	if e.stored {
		t.due.removeFrom(key, int(e.shard))
		t.due.mark(key)
	}
}

// placeUnsaved moves memory-only entries into shards that have room again: entries that are not
// spare first, which may evict spare ones, then spare ones where room is left.
func (t *table) placeUnsaved() {
	var keys, spare []string
	for k := range t.room.unsaved {
		if t.isSpare(k) {
			spare = append(spare, k)
		} else {
			keys = append(keys, k)
		}
	}
	for _, k := range append(keys, spare...) {
		e := t.entries.m[k]
		if e.shard != memoryOnly {
			continue
		}
		e.shard = int8(t.place(k))
		if e.shard == memoryOnly {
			continue
		}
		t.entries.m[k] = e
		t.room.setUnsaved(k, false)
		t.due.mark(k)
	}
}

// tombstone is Configs.Tombstone, the caller holding the lock.
func (t *table) tombstone(config, hash string, at time.Time) {
	next := Entry{Hash: hash, Deleted: true, Since: sinceOf(at)}
	if e, ok := t.entries.m[config]; ok {
		old := t.entries.public(config, e)
		if hash == "" {
			next.Hash = old.Hash
		}
		if e.deleted {
			next.Since = old.Since
		}
	}
	t.put(config, next)
}

// setSpare marks config spare or not and moves its saved entries in or out of the shards'
// spare ones.
func (t *table) setSpare(config string, spare bool) {
	if _, was := t.spare[config]; was == spare {
		return
	}
	if spare {
		t.spare[config] = struct{}{}
	} else {
		delete(t.spare, config)
	}
	for _, k := range t.family(config) {
		e, ok := t.entries.m[k]
		switch {
		case !ok || e.shard == memoryOnly:
		case spare:
			t.room.addSpare(k, int(e.shard), t.kinds.reserve(k))
		default:
			t.room.dropSpare(k, int(e.shard), t.kinds.reserve(k))
		}
	}
}

// unsavedIn reports whether an entry of config is kept in memory only.
func (t *table) unsavedIn(config string) bool {
	for _, k := range t.family(config) {
		if _, ok := t.room.unsaved[k]; ok {
			return true
		}
	}
	return false
}

// remove forgets key and its placement; the next flush removes it where it was stored.
func (t *table) remove(key string) {
	e, ok := t.entries.m[key]
	if !ok {
		return
	}
	t.unplace(key, e)
	t.entries.remove(key)
	t.room.setUnsaved(key, false)
	t.children.link(key, false)
}

// children indexes each config's data-key entries, so deleting a config does not scan.
type children map[string]map[string]bool

// link adds (or removes) a data-key entry in its config's children; config entries are skipped.
func (c children) link(key string, add bool) {
	config := ConfigOf(key)
	if config == key {
		return
	}
	if add {
		if c[config] == nil {
			c[config] = map[string]bool{}
		}
		c[config][key] = true
		return
	}
	delete(c[config], key)
	if len(c[config]) == 0 {
		delete(c, config)
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
