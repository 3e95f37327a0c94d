package checker

import (
	"fmt"
	"time"
)

// Generator version 9: an owner's `kubectl rollout pause` of a Deployment (spec.paused, no
// annotation of the reloader's), resumed by the owner 1 to 5 s later, or at the next quiet
// point. The reloader may still change a paused Deployment's template (its pods roll out at the
// resume); what the oracle holds it to (docs/safe-reloads.md):
//   - a workload its owner paused is not held to a change while paused (the resume rolls out
//     what the template holds then);
//   - a rollback of a reload made while the owner paused the Deployment is a violation: its
//     rollout could not progress, so its clock stops;
//   - a rollback of reloads patched in during one pause puts back the template from before them
//     all (restoredTo);
//   - the reloader does not resume a Deployment its owner paused.

// ownerPause draws an owner's pause of a live Deployment. Nil when none lives.
func (g *laterDraws) ownerPause() []Action {
	var live []string
	for _, w := range workloadNames {
		if g.workloads[w] && KindOrDefault(g.kinds[w]) == KindDeployment {
			live = append(live, w)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return []Action{{Op: "owner-pause", Target: pick(g.tenth, live), Dur: time.Duration(1000+g.tenth.IntN(4000)) * time.Millisecond,
		Pause: time.Duration(g.tenth.IntN(400)) * time.Millisecond}}
}

// pauseSpan is an owner's pause: from its write to its resume's (to zero while paused).
type pauseSpan struct{ from, to time.Time }

// ownerPaused reports whether w's owner pauses it now. The caller holds r.mu.
func (w *WorkloadLife) ownerPaused() bool {
	n := len(w.ownerPauses)
	return n > 0 && w.ownerPauses[n-1].to.IsZero()
}

// ownerPausedAt reports whether w's owner paused it at t, raceMargin after the pause was
// written (the reloader sees it some time after). The caller holds r.mu.
func (w *WorkloadLife) ownerPausedAt(t time.Time) bool { return w.ownerPauseAt(t) >= 0 }

// ownerPauseAt is the index in ownerPauses of the pause of w's owner at t, as ownerPausedAt
// tells it; -1 for none. The caller holds r.mu.
func (w *WorkloadLife) ownerPauseAt(t time.Time) int {
	for i, p := range w.ownerPauses {
		if t.After(p.from.Add(RaceMargin)) && (p.to.IsZero() || t.Before(p.to)) {
			return i
		}
	}
	return -1
}

// maybeOwnerPausedAt reports whether the reloader may have seen w paused by its owner at t: the
// pause was written before t, and its resume not raceMargin before it. The caller holds r.mu.
func (w *WorkloadLife) maybeOwnerPausedAt(t time.Time) bool {
	for _, p := range w.ownerPauses {
		if t.After(p.from) && (p.to.IsZero() || t.Before(p.to.Add(RaceMargin))) {
			return true
		}
	}
	return false
}

// ownerPausedBy records an owner's pause (paused) or resume of w, written at at. The caller holds
// r.mu.
func (w *WorkloadLife) ownerPausedBy(paused bool, at time.Time) {
	n := len(w.ownerPauses)
	switch {
	case paused:
		w.ownerPauses = append(w.ownerPauses, pauseSpan{from: at})
	case n > 0 && w.ownerPauses[n-1].to.IsZero():
		w.ownerPauses[n-1].to = time.Now()
	}
}

// ownerPauseViolations lists what w's owner pauses forbid that happened: a rollback while its
// owner paused it, and a resume that was not the owner's while paused. The caller holds r.mu.
func (r *gates) ownerPauseViolations(w *WorkloadLife, paired pairs) []Violation {
	var out []Violation
	for i := range paired.rollback {
		if w.ownerPausedAt(w.restartAt[i]) {
			out = append(out, Violation(fmt.Sprintf("rollback: %s %s rolled back its reload at rv %d (rv %d) while its owner paused it: the rollout could not progress",
				w.Kind, w.name, w.restarts[paired.of[i]], w.restarts[i])))
		}
	}
	for _, u := range w.unpauses {
		if g, ok := w.gateSince(u.at.Add(-RaceMargin), u.at); !r.own[u.rv] && w.ownerPausedAt(u.at) && ok && g.pausePeriod() == 0 {
			out = append(out, Violation(fmt.Sprintf("resumed: %s %s was resumed at rv %d while its owner paused it", w.Kind, w.name, u.rv)))
		}
	}
	return out
}
