package state

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/reloader/reloader/confighash"
)

// Entry is what the state holds for one key.
type Entry struct {
	Hash    string    // a content hash (IsHash); "" only in a tombstone of a config never seen with content
	Deleted bool      // a tombstone: the config did not exist when recorded
	Since   time.Time // tombstones only: when the absence was first recorded (second precision)
	// opaque: an entry of a registered kind (EntryKind), whose Hash is its value as stored.
	opaque bool
}

// tombstonePrefix starts a tombstone's value. No content hash can start with it, so a live entry
// stays the bare hash that older versions wrote and read.
const tombstonePrefix = "deleted@"

// maxUnix is the last second of the year 9999: later times are refused, which keeps every
// tombstone time far from the limits of time.Time and int64 arithmetic.
const maxUnix = 253402300799

// encodeEntry returns the value that stores e: the bare hash, or
// "deleted@<unix seconds>:<hash or nothing>"; an entry of a registered kind as it is.
func encodeEntry(e Entry) string {
	if !e.Deleted || e.opaque {
		return e.Hash
	}
	return tombstonePrefix + strconv.FormatInt(e.Since.Unix(), 10) + ":" + e.Hash
}

// decodeEntry parses a stored value. Only the exact form encodeEntry writes is accepted, so that
// a value read and written back is unchanged; anything else is an error saying what is wrong.
func decodeEntry(v string) (Entry, error) {
	if IsHash(v) {
		return Entry{Hash: v}, nil
	}
	rest, ok := strings.CutPrefix(v, tombstonePrefix)
	if !ok {
		return Entry{}, errors.New("neither a content hash nor a tombstone")
	}
	secs, hash, ok := strings.Cut(rest, ":")
	if !ok {
		return Entry{}, errors.New("tombstone has no ':' after its time")
	}
	since, err := parseUnix(secs)
	if err != nil {
		return Entry{}, err
	}
	if hash != "" && !IsHash(hash) {
		return Entry{}, fmt.Errorf("tombstone hash: %w", confighash.ParseValue(hash))
	}
	return Entry{Hash: hash, Deleted: true, Since: since}, nil
}

// parseUnix reads canonical decimal unix seconds: no sign, no leading zeros, at most maxUnix.
func parseUnix(s string) (time.Time, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > maxUnix || strconv.FormatInt(n, 10) != s {
		return time.Time{}, fmt.Errorf("tombstone time %q is not unix seconds", s)
	}
	return time.Unix(n, 0).UTC(), nil
}

// sinceOf is at as a tombstone records it: whole seconds, clamped to what decodeEntry accepts.
func sinceOf(at time.Time) time.Time {
	return time.Unix(min(max(at.Unix(), 0), maxUnix), 0).UTC()
}
