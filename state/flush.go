package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// pending is what the next flush writes: the dirty keys, the redundant ones that go along, and
// for dirty keys the shards whose stored copy must be removed. The store's lock guards it.
type pending struct {
	dirty map[string]struct{}
	// redundant holds config entries set with SetRedundant and not written since: the next
	// flush writes them along, but none is made for them alone.
	redundant map[string]struct{}
	// gone lists, for dirty keys, the shards whose stored copy must be removed by the next flush:
	// the key was deleted or moved away from there, or was found there corrupt or twice.
	gone map[string]shardSet
	// others: the first shard's other keys must be written back (keep.go).
	others bool
	// touch: the first shard must be written even with nothing else due (Seen).
	touch    bool
	flushing int           // flushes between taking the dirty keys and finishing their writes
	kick     chan struct{} // wakes Run; kept across reset
}

func newPending() pending {
	p := pending{kick: make(chan struct{}, 1)}
	p.reset()
	return p
}

// reset forgets everything due: a Load starts over.
func (p *pending) reset() {
	p.dirty, p.redundant, p.gone = map[string]struct{}{}, map[string]struct{}{}, map[string]shardSet{}
	p.others, p.touch = false, false
}

// mark makes key due and wakes Run.
func (p *pending) mark(key string) {
	p.dirty[key] = struct{}{}
	p.wake()
}

// wake has Run flush soon.
func (p *pending) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// removeFrom records that the copy of key in shard must be removed by the next flush; the
// caller marks key.
func (p *pending) removeFrom(key string, shard int) {
	g := p.gone[key]
	g[shard] = true
	p.gone[key] = g
}

// flusher writes the store's changes behind it: it takes what is due, writes it through the
// shardIO, and requeues what failed. It shares the store's lock, which guards its fields as well
// as the entries, and takes it before the shardIO's, as the store does.
type flusher struct {
	io      *shardIO
	log     *slog.Logger
	kinds   kindSet     // the store's, fixed: WriteOther refuses their keys
	mu      *sync.Mutex // the store's lock
	entries entrySource
	// onWrite is the store's OnWrite, read at each write: it may be set after New.
	onWrite *func(shard string, err error)

	due pending // what the next flush writes; the store marks it
	// writing holds the one flush that may run: a flush that took the dirty keys while another
	// one's failing write still held some would return before they were requeued, and two
	// writes of one shard could land in the wrong order.
	writing chan struct{}
	exists  [MaxShards]bool // shards known to exist; a new one is created, not patched
	// others are the keys of the first shard that are not entries (a Job recreation's note), as
	// last read or written: a deleted first shard is recreated with them too.
	others map[string]string
	// stamps sign the time each write carries (SignWrites); nil writes it bare.
	stamps Stamps
	// checkedAt is when Keep last checked each shard; only Keep's goroutine uses it.
	checkedAt [MaxShards]time.Time
}

// entrySource is what the flusher needs of the store's entries; it holds the store's lock while
// it calls it.
type entrySource interface {
	// placeUnsaved moves memory-only entries into shards that have room again and marks them due.
	placeUnsaved()
	// current returns the entries; a Load replaces the map, so it is asked for each time.
	current() entryMap
}

// forget empties what a Load reads again: nothing is due, no shard is known, no other key.
func (f *flusher) forget() {
	f.due.reset()
	f.exists = [MaxShards]bool{}
	f.others = map[string]string{}
}

// maxBackoff bounds the wait between failed flushes.
const maxBackoff = 30 * time.Second

// Run flushes dirty entries until ctx ends, waiting linger after the first change so that
// changes arriving together share one patch per shard; redundant entries go along with the
// patches of their shards. A failed flush is retried with growing backoff. When ctx ends every
// wait ends with it: Run flushes what is dirty or redundant once more, unless that just failed,
// and returns, leaving any further attempt to the caller's own Flush.
func (s *Store) Run(ctx context.Context, linger time.Duration) { s.flusher.run(ctx, linger) }

// Flush writes every dirty entry: one merge patch per shard, lowest shard first. It waits for a
// flush in flight, so it also writes what that one's failing write gives back.
func (s *Store) Flush(ctx context.Context) error { return s.flusher.flush(ctx, true) }

// Clean reports whether every change has been written (or found no room): nothing is dirty and
// no flush is in flight.
func (s *Store) Clean() bool { return s.flusher.clean() }

// Other returns the value of a key in the first shard that is not one of the store's entries,
// as last read or written (WriteOther).
func (s *Store) Other(key string) (string, bool) { return s.flusher.other(key) }

// WriteOther writes value under key in the first shard at once, or removes the key (value nil),
// for a key that is not one of the store's entries (the controller's note of a Job recreation).
// It goes through the same fence as the store's own writes, so it neither lands late after a
// successor's start nor makes the store's next write conflict. The store remembers the key, so
// that a deleted first shard is recreated with it (a Job's note would otherwise go with it, and
// the Job with the next stop); a missing first shard is recreated at once.
func (s *Store) WriteOther(ctx context.Context, key string, value *string) error {
	return s.flusher.writeOther(ctx, key, value)
}

// run is Store.Run.
func (f *flusher) run(ctx context.Context, linger time.Duration) {
	backoff := linger
	for {
		select {
		case <-ctx.Done():
			f.flushOnExit(ctx)
			return
		case <-f.due.kick:
		}
		sleep(ctx, linger)
		err := f.flush(context.WithoutCancel(ctx), false)
		if err == nil {
			backoff = linger
			continue
		}
		f.log.Error("write state", "err", err, "retry_in", backoff)
		f.due.wake()
		if !sleep(ctx, backoff) {
			return
		}
		backoff = min(2*backoff+time.Second, maxBackoff)
	}
}

// flushOnExit writes what is still dirty or redundant as ctx ends; a change made during the
// last flush would otherwise wait for the caller.
func (f *flusher) flushOnExit(ctx context.Context) {
	f.mu.Lock()
	dirty := len(f.due.dirty) > 0 || len(f.due.redundant) > 0 || f.due.others || f.due.touch
	f.mu.Unlock()
	if !dirty {
		return
	}
	if err := f.flush(context.WithoutCancel(ctx), true); err != nil {
		f.log.Error("write state", "err", err)
	}
}

// sleep waits d, or less if ctx ends first, and reports whether it waited all of d.
func sleep(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// flush writes every dirty entry, and the redundant entries: all of them, or only those of the
// shards it writes anyway.
func (f *flusher) flush(ctx context.Context, redundant bool) error {
	select {
	case f.writing <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("wait for the state write in flight: %w", ctx.Err())
	}
	defer func() { <-f.writing }()
	patches := f.takeDirty(redundant)
	defer f.doneFlushing()
	var errs []error
	for shard, changes := range patches {
		if len(changes) == 0 {
			continue
		}
		err := f.write(ctx, shard, changes)
		if onWrite := *f.onWrite; onWrite != nil {
			onWrite(f.io.shardName(shard), err)
		}
		if err != nil {
			f.requeue(shard, changes)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// takeDirty places memory-only entries that fit now, then groups the dirty keys by shard: the
// value where the entry lives, nil (a removal) in every other shard it is gone from. Redundant
// entries go along: all of them, or (all false) those of the shards written anyway; the first
// shard's other keys, when a check found them lost (keep.go). Every shard written carries its
// own stamp (FlushedAtKey).
func (f *flusher) takeDirty(all bool) [MaxShards]map[string]*string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.due.flushing++
	f.entries.placeUnsaved()
	entries := f.entries.current()
	var out [MaxShards]map[string]*string
	add := func(shard int, k string, v *string) {
		if out[shard] == nil {
			out[shard] = map[string]*string{}
		}
		out[shard][k] = v
	}
	for k := range f.due.dirty {
		e, ok := entries.m[k]
		if ok && e.shard != memoryOnly {
			add(int(e.shard), k, entries.send(k, e))
		}
		for i, gone := range f.due.gone[k] {
			// A shard never created holds nothing to remove.
			if gone && f.exists[i] && !(ok && e.in(i)) {
				add(i, k, nil)
			}
		}
	}
	for k := range f.due.redundant {
		e, ok := entries.m[k]
		switch {
		case ok && e.shard != memoryOnly && (all || out[e.shard] != nil):
			add(int(e.shard), k, entries.send(k, e))
		case ok && e.shard != memoryOnly:
			continue // waits for a write of its shard
		}
		delete(f.due.redundant, k) // written, or gone, or memory only: placeUnsaved makes it dirty
	}
	if f.due.others {
		for k, v := range f.others {
			add(0, k, &v)
		}
		f.due.others = false
	}
	if f.due.touch {
		add(0, FlushedAtKey, nil)
		f.due.touch = false
	}
	for i := range out {
		if out[i] != nil {
			out[i][FlushedAtKey] = f.stamp(i) // taken before the write: never later than it
		}
	}
	f.due.dirty = map[string]struct{}{}
	f.due.gone = map[string]shardSet{}
	return out
}

func (f *flusher) doneFlushing() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.due.flushing--
}

// requeue marks the changes of a failed write to shard dirty again, removals included, so the
// next flush writes them from the then current state.
func (f *flusher) requeue(shard int, changes map[string]*string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, v := range changes {
		if k == FlushedAtKey {
			f.due.touch = f.due.touch || shard == 0 && len(changes) == 1 // the next write stamps anew
			continue
		}
		if _, other := f.others[k]; other {
			f.due.others = true
			continue
		}
		if v == nil {
			f.due.removeFrom(k, shard)
		}
		f.due.dirty[k] = struct{}{}
	}
}

func (f *flusher) write(ctx context.Context, shard int, changes map[string]*string) error {
	name := f.io.shardName(shard)
	f.mu.Lock()
	known := f.exists[shard]
	f.mu.Unlock()
	if known {
		err := f.io.patch(ctx, shard, changes)
		if !apierrors.IsNotFound(err) {
			return f.io.explain("patch", name, err)
		}
		f.log.Warn("state ConfigMap is missing; recreating it from memory", "configmap", name, "namespace", f.io.namespace)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.create(ctx, shard)
}

// create writes shard i with every in-memory entry it holds. The caller holds the store's lock.
func (f *flusher) create(ctx context.Context, i int) error {
	data := map[string]string{}
	if i == 0 {
		maps.Copy(data, f.others)
	}
	data[FlushedAtKey] = *f.stamp(i)
	f.entries.current().sendShard(i, data)
	err := f.io.create(ctx, i, data)
	if err == nil {
		f.exists[i] = true
	}
	return err
}

// clean is Store.Clean.
func (f *flusher) clean() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.due.dirty) == 0 && !f.due.others && !f.due.touch && f.due.flushing == 0
}

// other is Store.Other.
func (f *flusher) other(key string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.others[key]
	return v, ok
}

// writeOther is Store.WriteOther.
func (f *flusher) writeOther(ctx context.Context, key string, value *string) error {
	if f.kinds.owns(key) {
		return fmt.Errorf("write %q outside the store: it is one of the store's entries", key)
	}
	err := f.io.patch(ctx, 0, map[string]*string{key: value})
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil || apierrors.IsNotFound(err) {
		if value == nil {
			delete(f.others, key)
		} else {
			f.others[key] = *value
		}
	}
	if apierrors.IsNotFound(err) {
		f.log.Warn("state ConfigMap is missing; recreating it from memory", "configmap", f.io.shardName(0), "namespace", f.io.namespace)
		return f.create(ctx, 0)
	}
	return f.io.explain("patch", f.io.shardName(0), err)
}
