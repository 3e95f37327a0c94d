package gctune

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercentGrowsWithTheLiveHeapBetweenItsBounds(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, SmallPercent},
		{14 << 20, SmallPercent}, // 5,000 configs
		{Small, SmallPercent},
		{64 << 20, (SmallPercent + LargePercent) / 2},
		{Large - 1, LargePercent - 1},
		{Large, LargePercent},
		{1 << 30, LargePercent},
	} {
		if got := Percent(c.live); got != c.want {
			t.Errorf("Percent(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}

// gogc reads the collector's current percentage.
func gogc(t *testing.T) uint64 {
	t.Helper()
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestFollowSetsTheHeadroomAfterEachCollection(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	runtime.GC() // measures the live heap small, whatever ran before
	ctx, cancel := context.WithCancel(context.Background())
	phase := NewPhase()
	phase.Set(true)
	done := make(chan struct{})
	go func() { Follow(ctx, phase); close(done) }()
	defer func() { cancel(); <-done }()
	wait(t, "the small heap's headroom", func() bool { return gogc(t) == SmallPercent })

	live := make([]byte, (Small+Large)/2)
	runtime.GC()
	want := uint64(Percent(uint64(len(live))))
	wait(t, "the larger heap's headroom", func() bool { return gogc(t) >= want })
	runtime.KeepAlive(live)
	runtime.GC()
	wait(t, "the small heap's headroom again", func() bool { return gogc(t) == SmallPercent })
}

// A start begins again at each election: the small headroom holds during each, the large heap's
// between them.
func TestFollowKeepsTheSmallHeadroomWhileEachStartRuns(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	debug.SetGCPercent(100) // neither headroom Follow may set, so its first setting shows
	ctx, cancel := context.WithCancel(context.Background())
	phase := NewPhase()
	done := make(chan struct{})
	go func() { Follow(ctx, phase); close(done) }()
	defer func() { cancel(); <-done }()
	live := make([]byte, Large)
	for start := range 2 {
		wait(t, "small headroom while starting", func() bool { return gogc(t) == SmallPercent })
		for range 3 {
			runtime.GC()
			if got := gogc(t); got != SmallPercent {
				t.Fatalf("start %d: GOGC %d%% with a %d MiB live heap, want %d%%", start, got, Large>>20, SmallPercent)
			}
		}
		phase.Set(true) // the positive control: the same heap, started, gets the large headroom
		wait(t, "large headroom once started", func() bool { return gogc(t) == LargePercent })
		phase.Set(false) // a new election: the lists again
	}
	runtime.KeepAlive(live)
}

func TestFollowStopsWhenItsContextEnds(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Follow(ctx, nil); close(done) }()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Follow still runs 10 s after its context ended")
	}
}

// wait polls cond for up to 10 s, collecting garbage between polls.
func wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10 s (GOGC now %d%%)", what, gogc(t))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
