package state

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Pending entries record a workload whose reload is due but held (a maintenance window, a
// minimum interval, a pause period), so that a restart neither forgets when it began nor
// announces it again. The key is "pending.<Kind>_<name>", or "pending.<Kind>_<namespace>_<name>"
// in all-namespaces mode (hashed past the key limit, like Key); the value is
// "pending@<unix seconds it became due>". The state knows this format, not what a workload is:
// the kind is any name the caller gives.
const (
	pendingKeyPrefix   = "pending."
	pendingValuePrefix = "pending@"
)

// PendingKey returns the entry key of a workload's held reload. namespace is empty in
// single-namespace mode.
func PendingKey(kind, namespace, name string) string {
	k := pendingKeyPrefix + kind + "_" + name
	if namespace != "" {
		k = pendingKeyPrefix + kind + "_" + namespace + "_" + name
	}
	if len(k) <= maxKeyLen {
		return k
	}
	sum := sha1.Sum([]byte(namespace + "/" + name))
	return pendingKeyPrefix + kind + "__" + hex.EncodeToString(sum[:])
}

// isPendingKey reports whether key is a pending entry's.
func isPendingKey(key string) bool { return strings.HasPrefix(key, pendingKeyPrefix) }

// pendingLen is the longest value of a pending entry.
const pendingLen = len(pendingValuePrefix) + len("253402300799")

func encodePending(since time.Time) string {
	return pendingValuePrefix + strconv.FormatInt(sinceOf(since).Unix(), 10)
}

// decodePending parses a pending entry's value.
func decodePending(v string) (Entry, error) {
	secs, ok := strings.CutPrefix(v, pendingValuePrefix)
	if !ok {
		return Entry{}, errors.New("a pending entry holds pending@<unix seconds>")
	}
	since, err := parseUnix(secs)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Pending: true, Since: since}, nil
}

// SetPending records that the workload's reload is held since `since`; an entry already there
// keeps its time.
func (s *Store) SetPending(key string, since time.Time) {
	if !isPendingKey(key) {
		s.log.Error("refusing to record a pending reload under a key that is not a pending entry's", "key", key)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[key]; ok {
		return
	}
	s.put(key, Entry{Pending: true, Since: sinceOf(since)})
}

// PendingKeys returns every pending entry: key → since.
func (s *Store) PendingKeys() map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]time.Time{}
	for k, e := range s.entries {
		if e.pending {
			out[k] = e.public().Since
		}
	}
	return out
}
