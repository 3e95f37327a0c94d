package state

import (
	"strconv"
	"time"
)

// FlushedAtKey is the other key every flush write of a shard carries, its own in each shard: the
// write's time as Stamps.Stamp signs it. Seen has the next flush write the first shard with it
// alone, to give the state a new resourceVersion.
const FlushedAtKey = "flushed-at"

// Stamps sign the time of a shard write and check it back. The state knows no key: the wiring
// gives it this pair (SignWrites), so that the watermark's time is one a reloader wrote.
type Stamps interface {
	// Stamp is the FlushedAtKey value of a write of shard (its name) made at at.
	Stamp(shard string, at time.Time) string
	// Verify returns the time v, shard's FlushedAtKey value, was stamped with; ok is false when
	// v does not verify (forged, edited, another shard's, made under another key or none).
	Verify(shard, v string) (at time.Time, ok bool)
}

// SignWrites has every later flush write carry its time stamped by st, and Watermark check the
// stamps Load read with it. Call it before Load; without it the stamps are the bare time, which
// never verifies.
func (s *Store) SignWrites(st Stamps) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flusher.stamps = st
}

// stamp is the FlushedAtKey value of a write of shard i made now. The caller holds the store's
// lock.
func (f *flusher) stamp(i int) *string {
	now := time.Now()
	v := now.UTC().Format(time.RFC3339Nano)
	if f.stamps != nil {
		v = f.stamps.Stamp(f.io.shardName(i), now)
	}
	return &v
}

// loadedStamp is a shard's FlushedAtKey value as Load read it, with the shard's version.
type loadedStamp struct {
	shard string
	rv    uint64
	value string
}

// Watermark is the highest resourceVersion among the shards as the last Load read them, and a
// time no later than the write that left it. Every config written at or before rv was seen by a
// reloader that wrote the state after, so a config with no entry written at or before it had no
// reader then. That holds only of a state a reloader wrote: rv is "" (and at zero) unless some
// shard carries a stamp that verifies. A Load that read no shard (a first start, a lost state)
// has none, nor has a state no reloader with this key wrote (a manifest's empty ConfigMap, an
// earlier version's, one whose key was lost): its version says nothing of what was seen.
//
// Whoever may write the state may write anything in it, managedFields included (only the
// requesting manager's entry gets the server's time), so each choice can only make the reloader
// do less (policy.UnrecordedFacts: a later watermark version, an earlier or no time):
//   - rv is the API server's: a foreign write only raises it, so fewer configs count as written
//     above it.
//   - at is the stamped time (FlushedAtKey) of the shard of highest version among those whose
//     stamp verifies, never managedFields: a stamp is made before its write, and a verified one
//     is a time this reloader's key signed for that shard, so a foreign write of a shard leaves
//     an older stamp or one that does not verify, never a later time.
//   - a stamp that does not verify, a missing one, or no key counts as none; with none at all
//     there is no watermark, and no config counts as written unseen.
//
// The stamps are checked here, not at Load: the key is loaded after the state.
func (s *Store) Watermark() (rv string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watermark == 0 {
		return "", time.Time{}
	}
	var best uint64
	for _, st := range s.stamps {
		if st.rv <= best || s.flusher.stamps == nil {
			continue
		}
		if t, ok := s.flusher.stamps.Verify(st.shard, st.value); ok {
			best, at = st.rv, t
		}
	}
	if best == 0 {
		return "", time.Time{}
	}
	return strconv.FormatUint(s.watermark, 10), at
}

// Seen takes a config written at resourceVersion rv that gets no entry (no workload reads it):
// when rv is above every shard version the store knows, the next flush writes the first shard
// anyway (its FlushedAtKey), so that the watermark the next Load reads covers that write. A
// patch that changes nothing would leave the version as it is. A write of a config at or below a
// known version writes nothing: the rate of writes is at most that of such configs' changes.
func (s *Store) Seen(rv string) {
	v, err := strconv.ParseUint(rv, 10, 64)
	s.mu.Lock()
	below := err != nil || v <= s.watermark // every known version is at least the watermark
	s.mu.Unlock()
	if below || v <= s.io.newest() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flusher.due.touch = true
	s.flusher.due.wake()
}

// newest is the highest shard version known, 0 if none.
func (io *shardIO) newest() uint64 {
	io.mu.Lock()
	defer io.mu.Unlock()
	var out uint64
	for _, v := range io.version {
		if n, err := strconv.ParseUint(v, 10, 64); err == nil && n > out {
			out = n
		}
	}
	return out
}
