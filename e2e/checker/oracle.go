package checker

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// RaceMargin is how close in time a workload's creation or annotation change and a change of a
// config it reads may be before the oracle cannot tell what the reloader should do: its watches
// of the two resources are independent and may deliver the two events in either order.
const RaceMargin = 2 * time.Second

// triggers reports whether a workload in mode m reloads on config c, and whether on its whole
// content, as stakater's annotations define.
func triggers(m string, refs []Ref, c string) (ok, whole bool) {
	var reads, wholeRef bool
	for _, rf := range refs {
		if rf.Config == c {
			reads, wholeRef = true, wholeRef || rf.Whole
		}
	}
	switch {
	case !reads || m == modeNone:
		return false, false
	case m == modeNamed || m == modePattern:
		return true, true
	case m == modeExclude && refs[0].Config == c:
		return false, false
	}
	return true, wholeRef
}

// Summary says how much the oracle had to judge: restarts by the reloader and by the checker,
// how many (workload, config) pairs the lost-change check held to a change, and how many of
// them it could not judge, their pods having waited for another config (stale).
func (r *Oracle) Summary() string {
	r.mu.Lock()
	var byReloader, byChecker int
	for _, w := range r.lives() {
		byReloader += r.excess.byReloader(w)
		byChecker += w.ownChanges
	}
	rollbacks := r.gates.brokenRollbacks()
	r.mu.Unlock()
	judged, unjudged := r.judged()
	s := fmt.Sprintf("%d workloads, %d restarts by the reloader, %d by the checker, %d (workload, config) pairs held to a change (%d not judged: waited for another config), %d watch gaps",
		len(r.workloads), byReloader, byChecker, judged, unjudged, r.gaps)
	if r.rollouts {
		s += fmt.Sprintf(", %d rollbacks of broken Deployments", rollbacks)
	}
	return s
}

// judged counts the pairs lost() holds to a change.
func (r *Oracle) judged() (held, unjudged int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.lives() {
		for _, c := range JudgedConfigs {
			if _, ok := r.held(w, c); ok {
				held++
				if r.reads.staleAfterOthers(w, c) {
					unjudged++
				}
			}
		}
	}
	return held, unjudged
}

// Violation is a broken promise, in words.
type Violation string

// Lost lists, for each live workload and config it reloads on now, a workload that runs another
// content than the config's current one (stale) although it should have taken its last change
// (held). Pairs whose annotations, ignore flag or creation were too close to that change to be
// ordered are skipped (see near).
func (r *Oracle) Lost() []Violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Violation
	if r.outNow() {
		return nil // nothing is owed while the namespace is out of the selection
	}
	for _, w := range r.lives() {
		if w.ownerPaused() {
			continue // its owner's resume rolls out what its template holds then
		}
		if w.gate().holds(r.window) || r.reads.readsInvalid(w) {
			continue // held until its gate opens, or what it reads validates: the final round does both
		}
		if r.lostWithState(w) || r.lostWithKey(w) {
			continue // runs nothing: its recreation went with the state and the process, or was dropped
		}
		for _, c := range JudgedConfigs {
			if last, ok := r.held(w, c); ok && r.reads.stale(w, c) && !r.reads.baseline(w, c) && !r.reads.keyBaseline(w, c) && !r.heldByRollback(w, c) && !r.leftBehind(w, c) && !r.heldByForgery(w, c) && !r.deletionMaskedByForgery(w, c) {
				out = append(out, Violation(fmt.Sprintf("lost: %s (mode %s, reads %s) runs an old content of %s, changed at rv %d by %s\n%s", w.name, w.mode(), w.reads(), c, last.rv, last.by, r.story(w, c))))
			}
		}
	}
	return out
}

// story is what the oracle knew of a lost pair, for the report: the workload's restarts (and
// which were the checker's, rollbacks, or undone) and the config's events. A soak's violation is
// often not reproduced by a replay; this is what is left to trace it with.
func (r *Oracle) story(w *WorkloadLife, c string) string {
	var b strings.Builder
	p := r.gates.rollbacks(w)
	fmt.Fprintf(&b, "      %s created at rv %d; restarts:", w.name, w.createdRV)
	for i, rv := range w.restarts {
		fmt.Fprintf(&b, "\n        rv %d at %s for %v", rv, w.restartAt[i].Format("15:04:05.000"), slices.Sorted(maps.Keys(w.touched[i])))
		switch _, undone := p.undone[i]; {
		case r.own[rv]:
			b.WriteString(" (the checker's)")
		case p.rollback[i]:
			fmt.Fprintf(&b, " (rollback of rv %d)", w.restarts[p.of[i]])
		case undone:
			b.WriteString(" (rolled back)")
		}
	}
	_, whole := triggers(w.mode(), w.refs, c)
	fmt.Fprintf(&b, "\n      %s events:", c)
	for _, e := range r.configs[c] {
		fmt.Fprintf(&b, "\n        rv %d at %s %q by %s", e.rv, e.at.Format("15:04:05.000"), e.read(whole), e.by)
		if e.unknown {
			b.WriteString(" (state held none)")
		}
		if e.invalid {
			b.WriteString(" (invalid)")
		}
	}
	return b.String()
}

// held returns the last change of config c that live workload w must have taken, if any. The
// caller holds r.mu.
func (r *Oracle) held(w *WorkloadLife, c string) (change, bool) {
	ok, whole := triggers(w.mode(), w.refs, c)
	if !w.deletedAt.IsZero() || !ok || !r.exists(c) && !r.onDelete || r.isIgnored(c) {
		return change{}, false
	}
	chs := r.changesSince(c, whole, w.createdAt, false)
	if len(chs) == 0 && w.lagged[c] && len(w.modes) == 1 {
		// Switched from stakater, which missed a change: the first start rolls it out.
		return change{rv: w.createdRV, at: w.createdAt, by: "the switch from stakater"}, true
	}
	if len(chs) == 0 {
		return change{}, false
	}
	last := chs[len(chs)-1]
	if w.createdRV > last.rv || r.unordered(w, c, last.at) || r.forgotten(c, last) || !r.reads.readSince(w, c, last) {
		return change{}, false
	}
	return last, true
}

// leftBehind reports whether w's pods started at a restart that left c's marker as it was while
// c had another content (a reload of ours for other configs, c's reload held or deferred; or
// another actor's change of the template), a reloader process started after that restart, and
// c is back at the content of the marker. The reloader knew what those pods read in memory
// only, and a stop forgets it: the limit RELIABILITY.md states as "A reloader stopped between a
// restart and acting on what it remembered of it" (seed 1795669739113515711@4, after its fixes;
// another actor's restart: seed 1795768489456149832@5, the marker `deleted`, the config
// recreated, the image changed, then a new process and a second deletion). The fault is the
// stop; the excuse ends with w's next restart. The caller holds r.mu.
func (r *Oracle) leftBehind(w *WorkloadLife, c string) bool {
	paired := r.gates.rollbacks(w)
	last, marked := -1, -1
	for i := range w.restarts {
		if _, undone := paired.undone[i]; undone || paired.rollback[i] {
			continue
		}
		last = i
		if w.touched[i][c] {
			marked = i
		}
	}
	if last < 0 || marked < 0 || marked == last {
		return false
	}
	if !slices.ContainsFunc(r.starts, func(s time.Time) bool { return s.After(w.restartAt[last]) }) {
		return false
	}
	_, whole := triggers(w.mode(), w.refs, c)
	es := r.configs[c]
	at := func(rv int64) string {
		v := absent
		for _, e := range es {
			if e.rv > rv {
				break
			}
			v = e.read(whole)
		}
		return v
	}
	now := at(math.MaxInt64)
	return at(w.restarts[marked]) == now && at(w.restarts[last]) != now
}

// Excess lists workloads the reloader restarted more often than the changes of what they reload
// on during their life: a double restart, or one without a change. A change counts when the
// workload reloaded on it at the time, or when a creation, annotation or ignore change was too
// close to it to tell. It judges the total, counted exactly by generation, and each restart
// seen through the watch (which may merge restarts across a gap, never split one): it must
// carry a change of one of the configs whose variable it set, changed or removed, made before
// it and not carried by an earlier restart. A restart for one config may set another's
// variable too (the reloader gives a workload every marker it lacks when it restarts it
// anyway), so a restart is not held to each config it touched.
func (r *Oracle) Excess() []Violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Violation
	for _, w := range r.lives() {
		out = append(out, r.gates.gated(w)...)
		out = append(out, r.excess.outOfScope(w)...)
		var watched []int64
		for _, rv := range w.restarts {
			if !r.own[rv] {
				watched = append(watched, rv)
			}
		}
		if rv, touched, bad := r.excess.unjustified(w); bad {
			out = append(out, Violation(fmt.Sprintf("excess: %s (reads %s, modes %v) restarted at rv %d for %v with no change of them left to take since its restarts before; %s",
				w.name, w.reads(), w.modeNames(), rv, touched, r.excess.historyOf(w))))
		}
		byReloader := r.excess.byReloader(w)
		bound := len(r.gates.rollbacks(w).rollback)
		for _, c := range JudgedConfigs {
			bound += r.excess.bound(w, c)
		}
		if byReloader > bound {
			out = append(out, Violation(fmt.Sprintf("excess: %s (reads %s, modes %v) restarted %d times by the reloader (seen at rv %v) for %d changes of what it reloads on; generation %d, own changes %d, %s",
				w.name, w.reads(), w.modeNames(), byReloader, watched, bound, w.generation, w.ownChanges, r.excess.historyOf(w))))
		}
	}
	return out
}

// heldByRollback reports whether w's last reload for c was rolled back and c still holds the
// content that reload rolled out: the reloader holds it, and w runs what it ran before
// (docs/safe-reloads.md, "Safe reloads"). The caller holds r.mu.
func (r *Oracle) heldByRollback(w *WorkloadLife, c string) bool {
	if r.gates.completes(w) {
		return false // a rollout that completes is not rolled back (rolloutViolations)
	}
	p := r.gates.rollbacks(w)
	last := -1
	for i, rv := range w.restarts {
		if !r.own[rv] && w.touched[i][c] {
			last = i
		}
	}
	if last < 0 || !p.rollback[last] {
		return false
	}
	_, whole := triggers(w.mode(), w.refs, c)
	var then, now string
	for _, e := range r.configs[c] {
		if e.rv < w.restarts[p.of[last]] {
			then = e.read(whole)
		}
		now = e.read(whole)
	}
	return then == now
}

// Triggered reports whether a workload that lives now reloads on config c: only then does the
// state hold an entry of c (docs/design.md, "The state"), so only then may the executor wait for
// one.
func (r *Oracle) Triggered(c string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.lives(), func(w *WorkloadLife) bool {
		ok, _ := triggers(w.mode(), w.refs, c)
		return ok && w.deletedAt.IsZero()
	})
}
