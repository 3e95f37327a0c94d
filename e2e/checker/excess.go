package checker

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// historyOf lists, for a report, the reloader's restarts of w with the configs each touched, and
// the changes that count for w. The caller holds r.mu.
func (r *excess) historyOf(w *WorkloadLife) string {
	var b strings.Builder
	b.WriteString("restarts:")
	for i, rv := range w.restarts {
		if !r.own[rv] {
			fmt.Fprintf(&b, " %d%v", rv, slices.Sorted(maps.Keys(w.touched[i])))
		}
	}
	b.WriteString("; changes:")
	for _, c := range JudgedConfigs {
		for _, ch := range r.changes(c, true) {
			if r.counts(w, c, ch) {
				fmt.Fprintf(&b, " %s@%d(%s)", c, ch.rv, ch.by)
			}
		}
	}
	return b.String()
}

// unjustified returns a restart of w by the reloader that carried no change: each restart takes
// the earliest change not yet taken, made before it, of each config whose variable it touched,
// and needs one. The caller holds r.mu.
func (r *excess) unjustified(w *WorkloadLife) (int64, []string, bool) {
	pending := map[string][]change{}
	for _, c := range JudgedConfigs {
		pending[c] = r.excuses(w, c)
		for _, ch := range r.changes(c, true) {
			if r.counts(w, c, ch) {
				pending[c] = append(pending[c], ch)
			}
		}
		slices.SortStableFunc(pending[c], func(a, b change) int { return cmp.Compare(a.rv, b.rv) })
	}
	paired := r.gates.rollbacks(w)
	for i, rv := range w.restarts {
		if r.own[rv] || len(w.touched[i]) == 0 || paired.rollback[i] {
			continue
		}
		carried := false
		var touched []string
		for _, c := range JudgedConfigs {
			if !w.touched[i][c] {
				continue
			}
			touched = append(touched, c)
			// A deletion's rv may come from a list after it (deletionRV), so it may equal the
			// rv of the restart that rolled the deletion out (soak seed 1795470267112178618).
			if p := pending[c]; len(p) > 0 && (p[0].rv < rv || p[0].deleted && (p[0].rv <= rv || p[0].at.Before(w.restartAt[i]))) {
				pending[c], carried = paid(p[1:], rv, w.restartAt[i]), true
			}
		}
		if !carried {
			return rv, touched, true
		}
	}
	return 0, nil, false
}

// paid drops from pending the changes a restart at rv and at rolled out besides the earliest: a
// restart gives the pods the content of its moment, so a burst it coalesced leaves no credit
// for a later restart. A change made within raceMargin before it may have come after the
// reloader read the config, and keeps its credit.
func paid(pending []change, rv int64, at time.Time) []change {
	for len(pending) > 0 && pending[0].rv < rv && pending[0].at.Before(at.Add(-RaceMargin)) {
		pending = pending[1:]
	}
	return pending
}

// excuses are the restarts of w for c allowed beyond the changes of c, each as a change a
// restart may take: one for a stakater variable that lagged (the switch from stakater); one for
// a workload created during an outage or while no reloader ran: the reloader sees it at once
// with the changes it missed and, without a marker, while the state is behind (another
// dependent's refusal, or a reload whose patch landed but whose reply the leader lost before
// it died), cannot tell whether it was created before or after a change; and one for each
// strip made in such a span, for the same reason (soak seed 1795547694293124233@2): the
// strip's own rollout gave its pods the content of that moment, which the reloader cannot
// tell from an older one. A creation or strip seen just before a kill -9 counts as unseen
// (unwritten). The caller holds r.mu.
func (r *excess) excuses(w *WorkloadLife, c string) []change {
	var out []change
	if w.lagged[c] {
		out = append(out, change{rv: w.createdRV, at: w.createdAt, by: "the switch from stakater"})
	}
	if r.blindAt(w.createdAt) || r.unwritten(w.createdAt) {
		out = append(out, change{rv: w.createdRV, at: w.createdAt, by: "a creation no reloader saw"})
	}
	for _, s := range w.strips {
		if r.blindAt(s.at) || r.unwritten(s.at) {
			out = append(out, change{rv: s.rv, at: s.at, by: "a strip no reloader saw"})
		}
	}
	out = append(out, r.forgedRestarts(w, c)...)
	out = append(out, r.reappearances(w, c)...)
	return append(out, r.holdsLost(w, c)...)
}

// holdsLost are, for each rollback of w's reload for c, one restart allowed once the state
// ConfigMap holding the rollback's hold was deleted and a reloader started after that: no
// process knows the hold then, and the content is reloaded again (soak seed
// 1795100000000000002@5: a stakater variable that lagged, rolled out, rolled back, the state
// deleted while the reloader was down). The caller holds r.mu.
func (r *excess) holdsLost(w *WorkloadLife, c string) []change {
	var out []change
	paired := r.gates.rollbacks(w)
	for i := range paired.rollback {
		if !w.touched[paired.of[i]][c] {
			continue
		}
		for _, f := range r.stateLosses {
			if f.After(w.restartAt[i]) && slices.ContainsFunc(r.starts, func(s time.Time) bool { return s.After(f) }) && r.unknowable(loss{at: f, deleted: f}) {
				out = append(out, change{rv: w.restarts[i], at: w.restartAt[i], by: "a hold lost with the state"})
				break
			}
		}
	}
	return out
}

// bound is how many restarts of w changes of config c allow. The caller holds r.mu.
func (r *excess) bound(w *WorkloadLife, c string) int {
	n := len(r.excuses(w, c))
	for _, ch := range r.changes(c, true) {
		if r.counts(w, c, ch) {
			n++
		}
	}
	return n
}

// counts reports whether change ch of config c may restart w.
func (r *excess) counts(w *WorkloadLife, c string, ch change) bool {
	if ch.rv < w.createdRV && !r.near(ch.at, w.createdAt) || !w.deletedAt.IsZero() && ch.at.After(w.deletedAt) {
		return false
	}
	if r.unordered(w, c, ch.at) {
		return true // unordered also counts any later mode or ignore change: generous, never wrong
	}
	// What w read when the change was made (gen 7's rerefs): a reload for a config its template
	// no longer read then is a restart without a change.
	return !r.isIgnored(c) && r.reads.readAt(w, c, ch)
}

// byReloader counts the reloads of w: template changes by generation, less the writes by
// others than the checker seen to move it without one, or a Job's new Jobs. The caller holds
// r.mu.
func (r *excess) byReloader(w *WorkloadLife) int {
	if w.Kind == KindJob {
		return len(w.restarts)
	}
	n := int(w.generation) - 1 - w.ownChanges
	for _, m := range w.sameTmpl {
		if !r.own[m.rv] && m.gen <= w.generation {
			n--
		}
	}
	return n
}
