package arrivals

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func TestAFoldAppliesEveryDeltaInArrivalOrderAcrossKeys(t *testing.T) {
	var j Journal[string, int]
	j.Append("a", 1)
	j.Append("b", 2)
	j.Append("a", 3)
	if j.Pending() != 3 || j.PendingOf("a") != 2 || j.PendingOf("b") != 1 {
		t.Fatalf("pending %d, of a %d, of b %d; want 3, 2, 1", j.Pending(), j.PendingOf("a"), j.PendingOf("b"))
	}
	var got []int
	j.Fold(func(_ string, d int) { got = append(got, d) })
	if !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("applied %v, want [1 2 3]", got)
	}
	if j.Pending() != 0 || j.PendingOf("a") != 0 {
		t.Fatalf("pending %d after the fold, of a %d; want 0", j.Pending(), j.PendingOf("a"))
	}
	j.Fold(func(string, int) { t.Fatal("a delta applied twice") })
}

func TestADeltaAppendedDuringAFoldIsAppliedByItInOrder(t *testing.T) {
	var j Journal[string, int]
	j.Append("a", 1)
	var got []int
	j.Fold(func(_ string, d int) {
		got = append(got, d)
		if d == 1 {
			j.Append("b", 2)
		}
	})
	if !slices.Equal(got, []int{1, 2}) || j.Pending() != 0 {
		t.Fatalf("applied %v, pending %d; want [1 2], 0", got, j.Pending())
	}
}

func TestAFoldWaitsForAFoldRunningAtTheSameTime(t *testing.T) {
	var j Journal[string, int]
	j.Append("a", 1)
	inside, release := make(chan struct{}), make(chan struct{})
	var applied []int
	var mu sync.Mutex
	first := make(chan struct{})
	go func() {
		defer close(first)
		j.Fold(func(_ string, d int) {
			close(inside)
			<-release
			mu.Lock()
			applied = append(applied, d)
			mu.Unlock()
		})
	}()
	<-inside
	second := make(chan struct{})
	go func() {
		defer close(second)
		j.Fold(func(string, int) { t.Error("the second fold applied a delta the first had taken") })
	}()
	select {
	case <-second:
		t.Fatal("the second fold returned while the first was still applying")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-second
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(applied, []int{1}) {
		t.Fatalf("when the second fold returned, applied %v; want [1]", applied)
	}
	<-first
}

func TestAnEmptyFoldTakesNoLock(t *testing.T) {
	var j Journal[string, int]
	j.Append("a", 1)
	j.Fold(func(string, int) {})
	j.folding.Lock() // a fold with deltas would wait here
	j.mu.Lock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		j.Fold(func(string, int) { t.Error("an empty fold applied a delta") })
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("an empty fold waited for a lock")
	}
	j.mu.Unlock()
	j.folding.Unlock()
	if n := testing.AllocsPerRun(100, func() { j.Fold(func(string, int) {}) }); n != 0 {
		t.Fatalf("an empty fold allocates %v times", n)
	}
}

// BenchmarkAppendFold is the cost a delta adds: its append by a handler, and its fold by the
// next sync.
func BenchmarkAppendFold(b *testing.B) {
	var j Journal[string, int]
	n := 0
	apply := func(_ string, d int) { n += d }
	for b.Loop() {
		j.Append("a", 1)
		j.Fold(apply)
	}
}

// BenchmarkEmptyFold is the cost of a fold with nothing pending: what every sync pays.
func BenchmarkEmptyFold(b *testing.B) {
	var j Journal[string, int]
	apply := func(string, int) {}
	for b.Loop() {
		j.Fold(apply)
	}
}
