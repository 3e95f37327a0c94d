// Package arrivals is the journal of the informers' events: a handler appends what only it
// knows (a delta) and queues its keys; a sync folds every pending delta, in arrival order,
// before it judges. One sequence across keys and kinds keeps the order the events came in.
package arrivals

import (
	"sync"
	"sync/atomic"
)

// Journal holds the deltas of type D appended under keys of type K, until a fold applies them.
// The zero value is empty and ready to use.
type Journal[K comparable, D any] struct {
	// unapplied counts the deltas appended and not yet applied: a fold that reads zero has
	// nothing to wait for, and takes no lock.
	unapplied atomic.Int64

	folding sync.Mutex // held for a whole fold: a second fold waits until the first has applied

	mu      sync.Mutex
	pending []arrival[K, D] // in arrival order
	perKey  map[K]int       // deltas not yet applied, per key
}

type arrival[K comparable, D any] struct {
	key   K
	delta D
}

// Append records delta d under key k, after every delta appended before it.
func (j *Journal[K, D]) Append(k K, d D) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pending = append(j.pending, arrival[K, D]{key: k, delta: d})
	if j.perKey == nil {
		j.perKey = map[K]int{}
	}
	j.perKey[k]++
	j.unapplied.Add(1)
}

// Fold applies every delta appended before it was called, in arrival order, to apply. When it
// returns, each of those has been applied, by it or by a fold running at the same time, which
// it waits for. A delta appended during the fold is applied by it or by the next.
func (j *Journal[K, D]) Fold(apply func(K, D)) {
	if j.unapplied.Load() == 0 {
		return
	}
	j.folding.Lock()
	defer j.folding.Unlock()
	for {
		j.mu.Lock()
		batch := j.pending
		j.pending = nil
		j.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		for _, a := range batch {
			apply(a.key, a.delta)
		}
		j.applied(batch)
	}
}

// applied counts the deltas of batch as applied.
func (j *Journal[K, D]) applied(batch []arrival[K, D]) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, a := range batch {
		if j.perKey[a.key]--; j.perKey[a.key] == 0 {
			delete(j.perKey, a.key)
		}
	}
	j.unapplied.Add(-int64(len(batch)))
}

// Pending counts the deltas appended and not yet applied.
func (j *Journal[K, D]) Pending() int { return int(j.unapplied.Load()) }

// PendingOf counts the deltas of key k appended and not yet applied.
func (j *Journal[K, D]) PendingOf(k K) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.perKey[k]
}
