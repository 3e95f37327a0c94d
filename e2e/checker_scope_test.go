package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Generator version 4 (issue 24): namespaces entering and leaving --namespace-selector, drawn
// from a fifth random stream so that version 3 keeps its sequences. A third of the sequences run
// the reloader over all namespaces, its state, hash key and Lease kept in the sequence's
// namespace (--state-namespace), with a selector on a label only that namespace carries; ns-leave
// removes the label and ns-enter puts it back.
//
// What the oracle expects (docs/design.md, "How it works": the reloader acts only in selected
// namespaces; a config the state has never seen restarts nothing):
//   - While the namespace is out, the reloader restarts nothing, except a reload it had already
//     begun when the label went: one committed before the label's removal, or seen within
//     raceMargin of it, or a Job's recreation whose deletion came before (the reloader finishes
//     it, running or at its next start, whatever the namespace's labels: a Job left deleted
//     would be a workload lost).
//   - Out of the selection is like a fault that ends: every change made while out (update,
//     revert, deletion with --reload-on-delete, recreation) is paid once it enters again, once
//     per workload, as a change made during an outage is. The state never advanced while out,
//     so it holds the content from before the leave: a config recreated while out is a change
//     against that content, not a config the state never saw. heal() (quiet points and the end)
//     makes it enter, and no loss is judged while it is out.
//   - The span out counts as blind (recorder.blindAt): on entering, the reloader sees the
//     namespace's workloads and configs at once, in no order, so a workload created or
//     stripped while out may take a change made before it, as after an outage.

// scopeAction draws, after a main action, a namespace leaving the selection now and then, and
// entering it again a few actions later.
func (g *generator) scopeAction() []action {
	pause := time.Duration(g.fifth.IntN(400)) * time.Millisecond
	if g.fifth.IntN(3) == 0 {
		pause = time.Duration(1000+g.fifth.IntN(2000)) * time.Millisecond
	}
	switch {
	case !g.nsOut && g.fifth.IntN(8) == 0:
		g.nsOut = true
		return []action{{Op: "ns-leave", Pause: pause}}
	case g.nsOut && g.fifth.IntN(4) == 0:
		g.nsOut = false
		return []action{{Op: "ns-enter", Pause: pause}}
	}
	return nil
}

// scopeLabel is the namespace label the selector of this sequence matches: only its namespace
// ever carries it.
func (w *world) scopeLabel() string { return "reloader-checker/" + w.ns }

// scopeArgs run the reloader over all namespaces, selected by the sequence's label, its state in
// the sequence's namespace. A later --namespace overrides the one launchAs gives.
func (w *world) scopeArgs() []string {
	return []string{"--namespace=", "--state-namespace", w.ns, "--namespace-selector", w.scopeLabel() + "=in"}
}

// setScope puts the namespace in the selection (in) or takes it out, and records the change.
func (w *world) setScope(in bool) error {
	value := "null"
	if in {
		value = `"in"`
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, w.scopeLabel(), value)
	before := time.Now()
	ns, err := w.cl.Client().CoreV1().Namespaces().Patch(w.ctx, w.ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err == nil {
		w.rec.scoped(in, before, time.Now(), rvOf(ns))
	}
	return err
}

// outSpan is a time the sequence's namespace was out of the selection: from the label's
// removal (once the API server confirmed it) until it was put back (before it was asked), and
// the resourceVersions of both writes (enterRV 0 while out).
type outSpan struct {
	left, entered   time.Time
	leftRV, enterRV int64
}

// scoped records the namespace leaving (in false) or entering the selection.
func (r *recorder) scoped(in bool, before, after time.Time, rv int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.outs)
	switch out := r.outNow(); {
	case !in && !out:
		r.outs = append(r.outs, outSpan{left: after, leftRV: rv})
	case in && out:
		r.outs[n-1].entered, r.outs[n-1].enterRV = before, rv
		r.blind = append(r.blind, [2]time.Time{r.outs[n-1].left, after})
	}
}

// outNow reports whether the namespace is out of the selection. The caller holds r.mu.
func (r *recorder) outNow() bool {
	return len(r.outs) > 0 && r.outs[len(r.outs)-1].enterRV == 0
}

// inScopeFrom is when the reloader first judges the namespace's configs from t on: t, or, if
// the namespace was out of the selection then, when it entered again (seed
// 1795200000000000180@5: a key lost, a start while out, a change of a Secret while out, taken
// at the entry as the content the lost key's entries stood for). The caller holds r.mu.
func (r *recorder) inScopeFrom(t time.Time) time.Time {
	for _, o := range r.outs {
		if o.enterRV != 0 && !o.left.After(t) && o.entered.After(t) {
			return o.entered
		}
	}
	return t
}

// outOfScope lists the reloads of w made while its namespace was out of the selection: written
// after the label's removal and seen more than raceMargin after it (a reload already under way
// may land in that margin), and before the label came back. The caller holds r.mu.
func (r *recorder) outOfScope(w *workloadLife) []violation {
	var out []violation
	for i, rv := range w.restarts {
		if r.own[rv] {
			continue
		}
		for _, o := range r.outs {
			if w.kind == kindJob && finishes(w, w.restartAt[i], o.left.Add(raceMargin)) {
				continue
			}
			if rv > o.leftRV && (o.enterRV == 0 || rv < o.enterRV) && w.restartAt[i].After(o.left.Add(raceMargin)) {
				out = append(out, violation(fmt.Sprintf("scope: %s %s reloaded at rv %d, %s after its namespace left the selection (rv %d), before it entered again (rv %d)",
					w.kind, w.name, rv, w.restartAt[i].Sub(o.left).Round(time.Millisecond), o.leftRV, o.enterRV)))
			}
		}
	}
	return out
}

// Version 3's seeds are recorded results: version 4 must leave their sequences exactly as they
// were. The digest is of seeds 1 to 18 of version 3, taken before version 4 existed.
func TestGenerator3KeepsItsSequences(t *testing.T) {
	t.Parallel()
	sum := sha256.New()
	for seed := uint64(1); seed <= 18; seed++ {
		fmt.Fprint(sum, generate(seed, 3, 40, true))
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
		g3, g4 := generate(seed, 3, 40, true), generate(seed, 4, 40, true)
		if g4.NsSelector {
			selected++
		}
		var rest []action
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
	r := &recorder{own: map[int64]bool{}, outs: []outSpan{{left: left, leftRV: 100, entered: left.Add(10 * time.Second), enterRV: 200}}}
	for _, tc := range []struct {
		rv   int64
		at   time.Time
		want bool
	}{
		{99, left.Add(5 * time.Second), false},   // committed before the leave, seen late
		{101, left.Add(time.Second), false},      // under way when the label went
		{150, left.Add(5 * time.Second), true},   // out
		{201, left.Add(11 * time.Second), false}, // in again
		{150, left.Add(raceMargin + time.Nanosecond), true},
	} {
		w := &workloadLife{kind: kindDeployment, name: "w-0", restarts: []int64{tc.rv}, restartAt: []time.Time{tc.at}}
		if got := len(r.outOfScope(w)) > 0; got != tc.want {
			t.Errorf("reload at rv %d, %s after the leave: violation %t, want %t", tc.rv, tc.at.Sub(left), got, tc.want)
		}
	}
	// A Job's recreation finishes a reload whose deletion came before the leave; one whose
	// deletion came while out is a reload made out.
	for _, tc := range []struct {
		gone time.Duration
		want bool
	}{{-time.Second, false}, {raceMargin + time.Second, true}} {
		w := &workloadLife{kind: kindJob, name: "w-0", restarts: []int64{150}, restartAt: []time.Time{left.Add(5 * time.Second)}, jobGone: []time.Time{left.Add(tc.gone)}}
		if got := len(r.outOfScope(w)) > 0; got != tc.want {
			t.Errorf("Job deleted %s after the leave, created again while out: violation %t, want %t", tc.gone, got, tc.want)
		}
	}
	r.outs = append(r.outs, outSpan{left: left.Add(time.Minute), leftRV: 300})
	w := &workloadLife{kind: kindDeployment, name: "w-0", restarts: []int64{400}, restartAt: []time.Time{left.Add(2 * time.Minute)}}
	if len(r.outOfScope(w)) == 0 {
		t.Error("a reload while the namespace is still out is no violation")
	}
}

// jobDeleted notes that the watch saw a Job deleted.
func (r *recorder) jobDeleted(u *unstructured.Unstructured) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w := r.workloads[u.GetUID()]; w != nil {
		w.jobGone = append(w.jobGone, time.Now())
	}
}

// finishes reports whether Job w's creation seen at at finishes a recreation whose deletion was
// seen before by: the last deletion seen before at came before by.
func finishes(w *workloadLife, at, by time.Time) bool {
	var last time.Time
	for _, g := range w.jobGone {
		if g.Before(at) {
			last = g
		}
	}
	return !last.IsZero() && last.Before(by)
}
