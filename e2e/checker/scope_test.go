package checker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// Version 3's seeds are recorded results: version 4 must leave their sequences exactly as they
// were. The digest is of seeds 1 to 18 of version 3, taken before version 4 existed.
func TestGenerator3KeepsItsSequences(t *testing.T) {
	t.Parallel()
	sum := sha256.New()
	for seed := uint64(1); seed <= 18; seed++ {
		fmt.Fprint(sum, Generate(seed, 3, 40, true))
	}
	const want = "aced80fa8f6dcadf58177e3932efe09e3326deb61a3506f9571c8b75e9369be8"
	if got := hex.EncodeToString(sum.Sum(nil)); got != want {
		t.Fatalf("version 3's sequences changed (digest %s, want %s)", got, want)
	}
}

// Version 4 is version 3 plus the namespace selector and its actions: without them, a seed gives
// version 3's sequence. Some seeds draw the selector, with both actions.
func TestGenerator4IsGenerator3WithTheNamespaceSelector(t *testing.T) {
	t.Parallel()
	selected, left, entered := 0, 0, 0
	for seed := uint64(1); seed <= 60; seed++ {
		g3, g4 := Generate(seed, 3, 40, true), Generate(seed, 4, 40, true)
		if g4.NsSelector {
			selected++
		}
		var rest []Action
		for _, a := range g4.Actions {
			switch a.Op {
			case "ns-leave":
				left++
			case "ns-enter":
				entered++
			default:
				rest = append(rest, a)
				continue
			}
			if !g4.NsSelector {
				t.Fatalf("seed %d@4 has %s without the namespace selector", seed, a.Op)
			}
		}
		g4.Actions, g4.Gen, g4.NsSelector = rest, 3, false
		if !reflect.DeepEqual(g3, g4) {
			t.Fatalf("seed %d@4 without its namespace actions differs from %d@3:\n%s\n%s", seed, seed, g4, g3)
		}
	}
	if selected < 10 || selected > 30 || left == 0 || entered == 0 {
		t.Fatalf("60 seeds of version 4: %d draw the selector, %d ns-leave, %d ns-enter", selected, left, entered)
	}
}

// The oracle allows a reload committed before the namespace left the selection, or seen within
// raceMargin of it (under way when the label went), and one after it entered again; any other
// reload while out is a violation.
func TestAReloadWhileTheNamespaceIsOutIsAViolation(t *testing.T) {
	t.Parallel()
	left := time.Now()
	r := newRecorder(&history{own: map[int64]bool{}, outs: []outSpan{{left: left, leftRV: 100, entered: left.Add(10 * time.Second), enterRV: 200}}})
	for _, tc := range []struct {
		rv   int64
		at   time.Time
		want bool
	}{
		{99, left.Add(5 * time.Second), false},   // committed before the leave, seen late
		{101, left.Add(time.Second), false},      // under way when the label went
		{150, left.Add(5 * time.Second), true},   // out
		{201, left.Add(11 * time.Second), false}, // in again
		{150, left.Add(RaceMargin + time.Nanosecond), true},
	} {
		w := &WorkloadLife{Kind: KindDeployment, name: "w-0", restarts: []int64{tc.rv}, restartAt: []time.Time{tc.at}}
		if got := len(r.excess.outOfScope(w)) > 0; got != tc.want {
			t.Errorf("reload at rv %d, %s after the leave: violation %t, want %t", tc.rv, tc.at.Sub(left), got, tc.want)
		}
	}
	// A Job's recreation finishes a reload whose deletion came before the leave; one whose
	// deletion came while out is a reload made out.
	for _, tc := range []struct {
		gone time.Duration
		want bool
	}{{-time.Second, false}, {RaceMargin + time.Second, true}} {
		w := &WorkloadLife{Kind: KindJob, name: "w-0", restarts: []int64{150}, restartAt: []time.Time{left.Add(5 * time.Second)}, jobGone: []time.Time{left.Add(tc.gone)}}
		if got := len(r.excess.outOfScope(w)) > 0; got != tc.want {
			t.Errorf("Job deleted %s after the leave, created again while out: violation %t, want %t", tc.gone, got, tc.want)
		}
	}
	r.outs = append(r.outs, outSpan{left: left.Add(time.Minute), leftRV: 300})
	w := &WorkloadLife{Kind: KindDeployment, name: "w-0", restarts: []int64{400}, restartAt: []time.Time{left.Add(2 * time.Minute)}}
	if len(r.excess.outOfScope(w)) == 0 {
		t.Error("a reload while the namespace is still out is no violation")
	}
}

// The namespace left the selection during an outage: a reload retried through it lands when it
// ends, before the watch brings the label's removal. It is under way until raceMargin after the
// outage (seed 1796311406141283752@10), and a violation after; a downtime of a replica, whose
// next start lists the namespace afresh, extends nothing.
func TestAReloadRetriedThroughAnOutageInWhichTheNamespaceLeftIsUnderWay(t *testing.T) {
	t.Parallel()
	left := time.Now()
	cut := [2]time.Time{left.Add(-3 * time.Second), left.Add(4 * time.Second)}
	for _, tc := range []struct {
		name string
		cuts [][2]time.Time
		at   time.Duration // the reload, after the leave
		want bool
	}{
		{"at the outage's end", [][2]time.Time{cut}, 4 * time.Second, false},
		{"within raceMargin of its end", [][2]time.Time{cut}, 4*time.Second + RaceMargin - time.Millisecond, false},
		{"past raceMargin after its end", [][2]time.Time{cut}, 4*time.Second + RaceMargin + time.Millisecond, true},
		{"with no outage", nil, 4 * time.Second, true},
		{"after an outage that ended before the leave", [][2]time.Time{{left.Add(-9 * time.Second), left.Add(-time.Second)}}, 4 * time.Second, true},
	} {
		r := newRecorder(&history{own: map[int64]bool{}, cuts: tc.cuts, outs: []outSpan{{left: left, leftRV: 100}}})
		w := &WorkloadLife{Kind: KindDeployment, name: "w-0", restarts: []int64{150}, restartAt: []time.Time{left.Add(tc.at)}}
		if got := len(r.excess.outOfScope(w)) > 0; got != tc.want {
			t.Errorf("%s: violation %t, want %t", tc.name, got, tc.want)
		}
	}
}
