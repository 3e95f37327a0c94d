package checker

import (
	"time"
)

// reappearances are the reappearances of config c after a restart of w while c was absent
// that are a change for w whatever their content, and the reloader restarts w once for:
//   - where w reads c only through optional key refs, each one with key a: its pods started
//     without the key (docs/design.md; reloader TestAnOptionalConfigBackAfterARestartWithout
//     ItRestartsOnce);
//   - else, where its pods waited for c, each one no reloader saw (blindAt, unwritten): they
//     started on it, but the next process finds only the state's note that they wait, and
//     cannot tell whether c changed since it came back, so it reloads w once (reloader
//     TestAWaitNoteLeftByAnEarlierProcessDoesNotVouchForAChangeMadeWhileNoneRan).
//
// One whose content differs from the content before the deletion is a change anyway (changes),
// and is not listed twice. Any template change counts as a restart (the reloader's, a rollback,
// the checker's), from raceMargin before the deletion on: generous, as excess must be. The
// caller holds r.mu.
func (r *excess) reappearances(w *WorkloadLife, c string) []change {
	if ok, _ := triggers(w.mode(), w.refs, c); !ok {
		return nil
	}
	optional := optionalOnly(w.refs, c)
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
			by := ", back after a restart without it"
			took := e.read(false) != ""
			if !optional {
				by, took = ", back unseen after a restart that waited for it", r.blindAt(e.at) || r.unwritten(e.at)
			}
			if took && !counted[e.rv] && r.restartedBetween(w, goneAt.Add(-RaceMargin), e.at) {
				out = append(out, change{rv: e.rv, at: e.at, by: e.by + by})
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
