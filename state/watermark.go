package state

import (
	"strconv"
	"time"
)

// FlushedAtKey is the first shard's other key that Seen has the next flush write, with the
// flush's time: it exists to give the state a new resourceVersion.
const FlushedAtKey = "flushed-at"

// Watermark is the highest resourceVersion among the shards as the last Load read them, "" when
// it read none (a first start, a lost state), and at the time of the latest write their
// managedFields record (zero when they record none). Every config written at or before it was
// seen by a reloader that wrote the state after, so a config with no entry written at or before
// it had no reader then. The API server assigns both: a foreign write of a shard only raises
// them.
func (s *Store) Watermark() (rv string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watermark == 0 {
		return "", time.Time{}
	}
	return strconv.FormatUint(s.watermark, 10), s.watermarkAt
}

// Seen takes a config written at resourceVersion rv that gets no entry (no workload reads it):
// when rv is above every shard version the store knows, the next flush writes the state anyway
// (FlushedAtKey), so that the watermark the next Load reads covers that write. A patch that
// changes nothing would leave the version as it is. A write of a config at or below a known
// version writes nothing: the rate of writes is at most that of such configs' changes.
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
	s.flusher.others[FlushedAtKey] = time.Now().UTC().Format(time.RFC3339Nano)
	s.flusher.due.others = true
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
