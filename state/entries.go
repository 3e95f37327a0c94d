package state

import (
	"time"

	"github.com/reloader/reloader/confighash"
)

// entry is an Entry as the store keeps it, and where it is stored: the hash packed, the shard in
// a byte. What few entries have besides (a tombstone's time, a registered kind's value) the
// entryMap keeps beside, so that a config's entry takes 29 bytes and no allocation of its own.
type entry struct {
	hash    confighash.Packed // a config's or data key's content hash; none for a registered kind's
	shard   int8              // or memoryOnly
	deleted bool
	opaque  bool // of a registered kind: its value is in entryMap.values
	// stored: the shard may hold the key (loaded from it, or sent to it); removing one it
	// cannot hold needs no write.
	stored bool
}

// in reports whether e is stored in shard i.
func (e entry) in(i int) bool { return int(e.shard) == i }

// entryMap is the store's entries by key.
type entryMap struct {
	m map[string]entry
	// values are the entries' values that do not pack: a registered kind's, and (none reach
	// the store: Set and Load refuse them) any content hash Pack would refuse.
	values map[string]string
	since  map[string]int64 // tombstones' times, unix seconds: Since has whole seconds only
}

func newEntryMap() entryMap {
	return entryMap{m: map[string]entry{}, values: map[string]string{}, since: map[string]int64{}}
}

// put stores e under k, in shard, stored saying whether the shard may hold it.
func (m entryMap) put(k string, e Entry, shard int, stored bool) {
	p := entry{shard: int8(shard), deleted: e.Deleted, opaque: e.opaque, stored: stored}
	packed, ok := confighash.Pack(e.Hash)
	if e.opaque || !ok {
		m.values[k] = e.Hash
	} else {
		p.hash = packed
		delete(m.values, k)
	}
	if e.Deleted {
		m.since[k] = e.Since.Unix()
	} else {
		delete(m.since, k)
	}
	m.m[k] = p
}

// remove forgets k.
func (m entryMap) remove(k string) {
	delete(m.m, k)
	delete(m.values, k)
	delete(m.since, k)
}

// public is the Entry that e, stored under k, keeps.
func (m entryMap) public(k string, e entry) Entry {
	out := Entry{Hash: e.hash.String(), Deleted: e.deleted, opaque: e.opaque}
	if v, ok := m.values[k]; ok {
		out.Hash = v
	}
	if e.deleted {
		out.Since = time.Unix(m.since[k], 0).UTC()
	}
	return out
}

// send is the value to write for entry e of key k, which the shard may hold from then on.
func (m entryMap) send(k string, e entry) *string {
	e.stored = true
	m.m[k] = e
	v := encodeEntry(m.public(k, e))
	return &v
}

// sendShard adds every entry that shard i holds to data, as send does.
func (m entryMap) sendShard(i int, data map[string]string) {
	for k, e := range m.m {
		if e.in(i) {
			data[k] = *m.send(k, e)
		}
	}
}
