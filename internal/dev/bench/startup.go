package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// startupWatch follows a reloader from its start to the end of the settle period and keeps the
// heap profile taken when its RSS was highest: what the start-up peak is made of. The profile
// is taken without a collection, so its in-use figures are those of the last GC before the
// peak and its alloc figures cover everything the start-up allocated until then.
type startupWatch struct {
	p    *reloaderProc
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu      sync.Mutex
	rss     int64 // RSS when profile was taken
	at      time.Duration
	profile []byte // raw /debug/pprof/heap
	fails   int
}

// peakStep is how much the RSS must have grown since the last profile for a new one: a
// profile per 100 ms sample would cost the reloader more than it tells.
const peakStep = 512 << 10

func watchStartup(ctx context.Context, p *reloaderProc) *startupWatch {
	w := &startupWatch{p: p, stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop(ctx)
	return w
}

func (w *startupWatch) loop(ctx context.Context) {
	defer close(w.done)
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		w.sample(ctx)
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample takes a heap profile if the RSS has grown by peakStep since the last one. Failures
// (the HTTP server not up yet) are counted, not fatal.
func (w *startupWatch) sample(ctx context.Context) {
	m, err := w.p.memory()
	if err != nil || m.RSS < w.rss+peakStep {
		return
	}
	body, err := w.p.getOK(ctx, "/debug/pprof/heap")
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.fails++
		return
	}
	w.rss, w.at, w.profile = m.RSS, time.Since(w.p.started), body
}

// halt stops the sampling; it may be called more than once.
func (w *startupWatch) halt() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

// finish stops the watch, saves the profile of the peak to dir/<name>-heap-startup-peak.pb.gz
// and records it, its summaries by in-use and allocated space, and the GC trace of the log.
func (w *startupWatch) finish(ctx context.Context, f *profiler, r *result, name string) error {
	w.halt()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]any{"rss_at_profile": w.rss, "seconds_after_start": round1(w.at.Seconds()), "failed_fetches": w.fails}
	r.detail("startup_peak", out)
	if gc, err := readGCTrace(w.p.logPath); err == nil && gc.GCs > 0 {
		r.detail("gc_trace", gc)
	}
	if w.profile == nil {
		return nil
	}
	dst := filepath.Join(f.dir, name+"-heap-startup-peak.pb.gz")
	if err := os.WriteFile(dst, w.profile, 0o644); err != nil {
		return fmt.Errorf("save start-up profile: %w", err)
	}
	out["profile"] = dst
	inuse, err := f.pprofTop(ctx, dst, "", "-sample_index=inuse_space")
	if err != nil {
		return err
	}
	out["inuse_top"] = inuse
	alloc, err := f.pprofTop(ctx, dst, ".alloc", "-sample_index=alloc_space")
	if err != nil {
		return err
	}
	out["alloc_top"] = alloc
	return nil
}

// gcTrace sums up the runtime's GODEBUG=gctrace=1 lines: the heap at the start of each GC is
// what the process held at its largest between two collections.
type gcTrace struct {
	GCs          int     `json:"gcs"`
	MaxHeapMB    float64 `json:"max_heap_at_gc_start_mb"`
	MaxLiveMB    float64 `json:"max_live_after_gc_mb"`
	MaxGoalMB    float64 `json:"max_goal_mb"`
	MaxHeapAtSec float64 `json:"max_heap_at_seconds"`
}

// gcLine matches "gc 12 @3.456s 2%: ... 30->31->15 MB, 32 MB goal".
var gcLine = regexp.MustCompile(`^gc \d+ @([0-9.]+)s .* (\d+)->(\d+)->(\d+) MB, (\d+) MB goal`)

func readGCTrace(path string) (gcTrace, error) {
	f, err := os.Open(path)
	if err != nil {
		return gcTrace{}, fmt.Errorf("read reloader log: %w", err)
	}
	defer f.Close()
	var g gcTrace
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := gcLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		at, _ := strconv.ParseFloat(m[1], 64)
		start, _ := strconv.ParseFloat(m[2], 64)
		live, _ := strconv.ParseFloat(m[4], 64)
		goal, _ := strconv.ParseFloat(m[5], 64)
		g.GCs++
		if start > g.MaxHeapMB {
			g.MaxHeapMB, g.MaxHeapAtSec = start, at
		}
		g.MaxLiveMB, g.MaxGoalMB = max(g.MaxLiveMB, live), max(g.MaxGoalMB, goal)
	}
	return g, wrap(sc.Err(), "read reloader log %s", path)
}
