package reloader

import (
	"strings"
	"time"
)

// flushStamps sign the time of each state shard write (state.Stamps) with the hash key, as Job
// notes are (confighash.NoteMAC): the watermark's time is then one a reloader wrote, which no
// one who may only write the state can forge later. Without a loaded key a stamp is the bare
// time, and nothing verifies.
type flushStamps struct {
	key       *HashKey
	namespace string // the state's: a stamp names its shard and namespace
}

// flushedAtPurpose names the sub-key of the hash key that write stamps are signed with.
const flushedAtPurpose = "state-flushed-at"

// signed is what a stamp's MAC covers: the shard, then the time as written.
func (s flushStamps) signed(shard, at string) []byte {
	return []byte(s.namespace + "/" + shard + "\x00" + at)
}

func (s flushStamps) Stamp(shard string, at time.Time) string {
	t := at.UTC().Format(time.RFC3339Nano)
	if k := s.key.Key(); k.ID() != "" {
		return t + " " + k.NoteMAC(flushedAtPurpose, s.signed(shard, t))
	}
	return t
}

func (s flushStamps) Verify(shard, v string) (time.Time, bool) {
	k := s.key.Key()
	t, mac, found := strings.Cut(v, " ")
	if k.ID() == "" || !found {
		return time.Time{}, false
	}
	if ok, _ := k.VerifyNote(flushedAtPurpose, s.signed(shard, t), mac); !ok {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, t)
	return at, err == nil
}
