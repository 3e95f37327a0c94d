// Package gctune sets the garbage collector's headroom from the size of the live heap: a small
// heap gets a small headroom, so that a small installation's peaks stay low, and a large one a
// larger headroom, so that collections of a large heap stay as rare as they were. GOGC applies
// one percentage to every size: 20 kept the peaks of 5,000 configs under 40 MiB but nearly
// doubled the reload latency at 50,000 (docs/lab/benchmarks-sessions.md).
package gctune

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// The headroom, in percent of the live heap, below Small and from Large; in between it grows
// linearly.
const (
	SmallPercent = 20
	LargePercent = 50
	Small        = 32 << 20
	Large        = 96 << 20
)

// Percent is the headroom for a live heap of live bytes.
func Percent(live uint64) int {
	switch {
	case live <= Small:
		return SmallPercent
	case live >= Large:
		return LargePercent
	}
	return SmallPercent + int((live-Small)*(LargePercent-SmallPercent)/(Large-Small))
}

// liveHeap is the runtime's count of the heap that the last collection found live.
const liveHeap = "/gc/heap/live:bytes"

// Phase says whether the process is starting (listing what it watches: its peak) or started. A
// start begins again at each election.
type Phase struct {
	started atomic.Bool
	changed chan struct{}
}

// NewPhase returns a phase that is starting.
func NewPhase() *Phase { return &Phase{changed: make(chan struct{}, 1)} }

// Set records whether the process has started, and wakes Follow.
func (p *Phase) Set(started bool) {
	p.started.Store(started)
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// Follow sets the headroom at once, then again after each collection and each change of phase,
// until ctx ends. The live heap changes only when a collection measures it, so a timer would wake
// an idle process for nothing. While phase is starting (always, if nil) the headroom stays
// SmallPercent whatever the heap: the initial lists make the process's peak, which a memory limit
// must hold at every size, and a few more collections cost the start only.
func Follow(ctx context.Context, phase *Phase) {
	collected := make(chan struct{}, 1)
	notifyAfterCollection(ctx, collected)
	var changed <-chan struct{}
	if phase != nil {
		changed = phase.changed
	}
	sample := []metrics.Sample{{Name: liveHeap}}
	set := -1
	for {
		p := SmallPercent
		if phase != nil && phase.started.Load() {
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				p = Percent(sample[0].Value.Uint64())
			}
		}
		if p != set {
			debug.SetGCPercent(p)
			set = p
		}
		select {
		case <-ctx.Done():
			return
		case <-collected:
		case <-changed:
		}
	}
}

// sentinel holds pointers and is 16 bytes, so it is not a tiny allocation, whose cleanup may wait
// for its neighbours.
type sentinel struct{ _, _ *byte }

// notifyAfterCollection sends on collected (without blocking) once a collection has found a new
// sentinel unreachable, and arms a new one, until ctx ends.
func notifyAfterCollection(ctx context.Context, collected chan<- struct{}) {
	runtime.AddCleanup(new(sentinel), func(struct{}) {
		if ctx.Err() != nil {
			return
		}
		select {
		case collected <- struct{}{}:
		default:
		}
		notifyAfterCollection(ctx, collected)
	}, struct{}{})
}
