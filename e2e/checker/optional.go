package checker

import (
	"time"
)

// reappearances are, for a workload that reads config c only through optional key refs, the
// reappearances of c with key a after a restart of w while c was absent: its pods started
// without the key, so the reappearance is a change for them whatever its content, and the
// reloader restarts w once for it (docs/design.md; reloader TestAnOptionalConfigBackAfterA
// RestartWithoutItRestartsOnce). One whose content differs from the content before the
// deletion is a change anyway (changes), and is not listed twice. Any template change counts
// as a restart (the reloader's, a rollback, the checker's), from raceMargin before the
// deletion on: generous, as excess must be. The caller holds r.mu.
func (r *excess) reappearances(w *WorkloadLife, c string) []change {
	if ok, _ := triggers(w.mode(), w.refs, c); !ok || !optionalOnly(w.refs, c) {
		return nil
	}
	counted := map[int64]bool{}
	for _, ch := range r.changes(c, true) {
		if r.counts(w, c, ch) {
			counted[ch.rv] = true
		}
	}
	var out []change
	var goneAt time.Time
	for _, e := range r.configs[c] {
		switch {
		case !e.exists:
			if goneAt.IsZero() {
				goneAt = e.at
			}
		case !goneAt.IsZero():
			if e.read(false) != "" && !counted[e.rv] && r.restartedBetween(w, goneAt.Add(-RaceMargin), e.at) {
				out = append(out, change{rv: e.rv, at: e.at, by: e.by + ", back after a restart without it"})
			}
			goneAt = time.Time{}
		}
	}
	return out
}

// restartedBetween reports whether w's template changed between from and to. The caller holds
// r.mu.
func (r *history) restartedBetween(w *WorkloadLife, from, to time.Time) bool {
	for _, at := range w.restartAt {
		if at.After(from) && at.Before(to) {
			return true
		}
	}
	return false
}
