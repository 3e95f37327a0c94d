package state

import (
	"context"
	"errors"
	"fmt"
	"maps"
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
	gone     map[string]shardSet
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

// maxBackoff bounds the wait between failed flushes.
const maxBackoff = 30 * time.Second

// Run flushes dirty entries until ctx ends, waiting linger after the first change so that
// changes arriving together share one patch per shard; redundant entries go along with the
// patches of their shards. A failed flush is retried with growing backoff. When ctx ends every
// wait ends with it: Run flushes what is dirty or redundant once more, unless that just failed,
// and returns, leaving any further attempt to the caller's own Flush.
func (s *Store) Run(ctx context.Context, linger time.Duration) {
	backoff := linger
	for {
		select {
		case <-ctx.Done():
			s.flushOnExit(ctx)
			return
		case <-s.due.kick:
		}
		sleep(ctx, linger)
		err := s.flush(context.WithoutCancel(ctx), false)
		if err == nil {
			backoff = linger
			continue
		}
		s.log.Error("write state", "err", err, "retry_in", backoff)
		s.due.wake()
		if !sleep(ctx, backoff) {
			return
		}
		backoff = min(2*backoff+time.Second, maxBackoff)
	}
}

// flushOnExit writes what is still dirty or redundant as ctx ends; a change made during the
// last flush would otherwise wait for the caller.
func (s *Store) flushOnExit(ctx context.Context) {
	s.mu.Lock()
	dirty := len(s.due.dirty) > 0 || len(s.due.redundant) > 0
	s.mu.Unlock()
	if !dirty {
		return
	}
	if err := s.Flush(context.WithoutCancel(ctx)); err != nil {
		s.log.Error("write state", "err", err)
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

// Flush writes every dirty entry: one merge patch per shard, lowest shard first.
func (s *Store) Flush(ctx context.Context) error { return s.flush(ctx, true) }

// flush writes every dirty entry, and the redundant entries: all of them, or only those of the
// shards it writes anyway.
func (s *Store) flush(ctx context.Context, redundant bool) error {
	patches := s.takeDirty(redundant)
	defer s.doneFlushing()
	var errs []error
	for shard, changes := range patches {
		if len(changes) == 0 {
			continue
		}
		err := s.write(ctx, shard, changes)
		if s.OnWrite != nil {
			s.OnWrite(s.ShardName(shard), err)
		}
		if err != nil {
			s.requeue(shard, changes)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// takeDirty places memory-only entries that fit now, then groups the dirty keys by shard: the
// value where the entry lives, nil (a removal) in every other shard it is gone from. Redundant
// entries go along: all of them, or (all false) those of the shards written anyway.
func (s *Store) takeDirty(all bool) [MaxShards]map[string]*string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.due.flushing++
	s.placeUnsaved()
	var out [MaxShards]map[string]*string
	add := func(shard int, k string, v *string) {
		if out[shard] == nil {
			out[shard] = map[string]*string{}
		}
		out[shard][k] = v
	}
	for k := range s.due.dirty {
		e, ok := s.entries[k]
		if ok && e.shard != memoryOnly {
			add(int(e.shard), k, s.send(k, e))
		}
		for i, gone := range s.due.gone[k] {
			// A shard never created holds nothing to remove.
			if gone && s.exists[i] && !(ok && e.in(i)) {
				add(i, k, nil)
			}
		}
	}
	for k := range s.due.redundant {
		e, ok := s.entries[k]
		switch {
		case ok && e.shard != memoryOnly && (all || out[e.shard] != nil):
			add(int(e.shard), k, s.send(k, e))
		case ok && e.shard != memoryOnly:
			continue // waits for a write of its shard
		}
		delete(s.due.redundant, k) // written, or gone, or memory only: placeUnsaved makes it dirty
	}
	s.due.dirty = map[string]struct{}{}
	s.due.gone = map[string]shardSet{}
	return out
}

// send is the value to write for entry e of key k, which the shard may hold from then on. The
// caller holds s.mu.
func (s *Store) send(k string, e entry) *string {
	e.stored = true
	s.entries[k] = e
	v := encodeEntry(e.public())
	return &v
}

func (s *Store) doneFlushing() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.due.flushing--
}

// requeue marks the changes of a failed write to shard dirty again, removals included, so the
// next flush writes them from the then current state.
func (s *Store) requeue(shard int, changes map[string]*string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range changes {
		if v == nil {
			s.due.removeFrom(k, shard)
		}
		s.due.dirty[k] = struct{}{}
	}
}

func (s *Store) write(ctx context.Context, shard int, changes map[string]*string) error {
	name := s.ShardName(shard)
	s.mu.Lock()
	known := s.exists[shard]
	s.mu.Unlock()
	if known {
		err := s.io.patch(ctx, shard, changes)
		if !apierrors.IsNotFound(err) {
			return s.io.explain("patch", name, err)
		}
		s.log.Warn("state ConfigMap is missing; recreating it from memory", "configmap", name, "namespace", s.io.namespace)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.create(ctx, shard)
}

// create writes shard i with every in-memory entry it holds. The caller holds s.mu.
func (s *Store) create(ctx context.Context, i int) error {
	data := map[string]string{}
	if i == 0 {
		maps.Copy(data, s.others)
	}
	for k, e := range s.entries {
		if e.in(i) {
			data[k] = encodeEntry(e.public())
			e.stored = true
			s.entries[k] = e
		}
	}
	err := s.io.create(ctx, i, data)
	if err == nil {
		s.exists[i] = true
	}
	return err
}

// Other returns the value of a key in the first shard that is not one of the store's entries,
// as last read or written (WriteOther).
func (s *Store) Other(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.others[key]
	return v, ok
}

// WriteOther writes value under key in the first shard at once, or removes the key (value nil),
// for a key that is not one of the store's entries (the controller's note of a Job recreation).
// It goes through the same fence as the store's own writes, so it neither lands late after a
// successor's start nor makes the store's next write conflict. The store remembers the key, so
// that a deleted first shard is recreated with it (a Job's note would otherwise go with it, and
// the Job with the next stop); a missing first shard is recreated at once.
func (s *Store) WriteOther(ctx context.Context, key string, value *string) error {
	if s.kinds.owns(key) {
		return fmt.Errorf("write %q outside the store: it is one of the store's entries", key)
	}
	err := s.io.patch(ctx, 0, map[string]*string{key: value})
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil || apierrors.IsNotFound(err) {
		if value == nil {
			delete(s.others, key)
		} else {
			s.others[key] = *value
		}
	}
	if apierrors.IsNotFound(err) {
		s.log.Warn("state ConfigMap is missing; recreating it from memory", "configmap", s.ShardName(0), "namespace", s.io.namespace)
		return s.create(ctx, 0)
	}
	return s.io.explain("patch", s.ShardName(0), err)
}
