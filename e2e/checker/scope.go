package checker

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
//     raceMargin of it (of the end of the outage or API server restart it fell in), or a Job's recreation whose deletion came before (the reloader finishes
//     it, running or at its next start, whatever the namespace's labels: a Job left deleted
//     would be a workload lost).
//   - Out of the selection is like a fault that ends: every change made while out (update,
//     revert, deletion with --reload-on-delete, recreation) is paid once it enters again, once
//     per workload, as a change made during an outage is. The state never advanced while out,
//     so it holds the content from before the leave: a config recreated while out is a change
//     against that content, not a config the state never saw. heal() (quiet points and the end)
//     makes it enter, and no loss is judged while it is out.
//   - The span out counts as blind (history.blindAt): on entering, the reloader sees the
//     namespace's workloads and configs at once, in no order, so a workload created or
//     stripped while out may take a change made before it, as after an outage.

// scopeAction draws, after a main action, a namespace leaving the selection now and then, and
// entering it again a few actions later.
func (g *featureDraws) scopeAction() []Action {
	pause := time.Duration(g.fifth.IntN(400)) * time.Millisecond
	if g.fifth.IntN(3) == 0 {
		pause = time.Duration(1000+g.fifth.IntN(2000)) * time.Millisecond
	}
	switch {
	case !g.nsOut && g.fifth.IntN(8) == 0:
		g.nsOut = true
		return []Action{{Op: "ns-leave", Pause: pause}}
	case g.nsOut && g.fifth.IntN(4) == 0:
		g.nsOut = false
		return []Action{{Op: "ns-enter", Pause: pause}}
	}
	return nil
}

// outSpan is a time the sequence's namespace was out of the selection: from the label's
// removal (once the API server confirmed it) until it was put back (before it was asked), and
// the resourceVersions of both writes (enterRV 0 while out).
type outSpan struct {
	left, entered   time.Time
	leftRV, enterRV int64
}

// Scoped records the namespace leaving (in false) or entering the selection.
func (r *Recorder) Scoped(in bool, before, after time.Time, rv int64) {
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
func (r *history) outNow() bool {
	return len(r.outs) > 0 && r.outs[len(r.outs)-1].enterRV == 0
}

// inScopeFrom is when the reloader first judges the namespace's configs from t on: t, or, if
// the namespace was out of the selection then, when it entered again (seed
// 1795200000000000180@5: a key lost, a start while out, a change of a Secret while out, taken
// at the entry as the content the lost key's entries stood for). The caller holds r.mu.
func (r *history) inScopeFrom(t time.Time) time.Time {
	for _, o := range r.outs {
		if o.enterRV != 0 && !o.left.After(t) && o.entered.After(t) {
			return o.entered
		}
	}
	return t
}

// outOfScope lists the reloads of w made while its namespace was out of the selection: written
// after the label's removal and seen more than raceMargin after the reloader could see it (a
// reload already under way may land in that margin), and before the label came back. The caller
// holds r.mu.
func (r *excess) outOfScope(w *WorkloadLife) []Violation {
	var out []Violation
	for i, rv := range w.restarts {
		if r.own[rv] {
			continue
		}
		for _, o := range r.outs {
			seen := r.visibleFrom(o.left)
			if w.Kind == KindJob && finishes(w, w.restartAt[i], seen.Add(RaceMargin)) {
				continue
			}
			if rv > o.leftRV && (o.enterRV == 0 || rv < o.enterRV) && w.restartAt[i].After(seen.Add(RaceMargin)) {
				out = append(out, Violation(fmt.Sprintf("scope: %s %s reloaded at rv %d, %s after its namespace left the selection (rv %d), before it entered again (rv %d)",
					w.Kind, w.name, rv, w.restartAt[i].Sub(o.left).Round(time.Millisecond), o.leftRV, o.enterRV)))
			}
		}
	}
	return out
}

// visibleFrom is when a running reloader could first see a write made at t: t, or the end of
// the outage or API server restart t fell in (a reload begun before it, retried through it,
// lands when it ends, before the watch that carries the write). The caller holds r.mu.
func (r *history) visibleFrom(t time.Time) time.Time {
	for _, c := range r.cuts {
		if !t.Before(c[0]) && t.Before(c[1]) {
			return c[1]
		}
	}
	return t
}

// jobDeleted notes that the watch saw a Job deleted.
func (r *Recorder) jobDeleted(u *unstructured.Unstructured) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w := r.workloads[u.GetUID()]; w != nil {
		w.jobGone = append(w.jobGone, time.Now())
	}
}

// finishes reports whether Job w's creation seen at at finishes a recreation whose deletion was
// seen before by: the last deletion seen before at came before by.
func finishes(w *WorkloadLife, at, by time.Time) bool {
	var last time.Time
	for _, g := range w.jobGone {
		if g.Before(at) {
			last = g
		}
	}
	return !last.IsZero() && last.Before(by)
}
