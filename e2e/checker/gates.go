package checker

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// gated lists what w's gates forbid that happened: a reload while a gate held it (a closed
// window, a schedule that does not parse), two reloads closer than a minimum interval, and, for
// a CronJob, a Job run by anything but a reload (a metadata write, a pause) or a reload that
// ran none. A gate counts from raceMargin after it was written. The caller holds r.mu.
func (r *gates) gated(w *WorkloadLife) []Violation {
	var out []Violation
	paired := r.rollbacks(w)
	for i, rv := range w.restarts {
		if r.own[rv] || paired.rollback[i] {
			continue
		}
		at := w.restartAt[i]
		if g, ok := w.gateSince(at.Add(-RaceMargin), at); ok && g.holds(r.window) {
			out = append(out, Violation(fmt.Sprintf("gated: %s %s reloaded at rv %d while its gate %s held every reload (reload-window %q)",
				w.Kind, w.name, rv, g, r.window)))
		}
		if i == 0 || r.own[w.restarts[i-1]] || paired.rollback[i-1] {
			continue
		}
		prev := w.restartAt[i-1]
		if g, ok := w.gateSince(prev.Add(-RaceMargin), at); ok && g.minInterval() > 0 && at.Sub(prev) < g.minInterval()-500*time.Millisecond {
			out = append(out, Violation(fmt.Sprintf("gated: %s %s reloaded at rv %d and %d, %s apart, under %s",
				w.Kind, w.name, w.restarts[i-1], rv, at.Sub(prev).Round(time.Millisecond), g)))
		}
	}
	resumed := map[int]bool{}
	for _, rs := range w.resumes {
		resumed[rs.restart] = true
	}
	for i, rv := range w.restarts {
		if w.Kind != KindDeployment || r.own[rv] || paired.rollback[i] || resumed[i] || w.ownerPausedAt(w.restartAt[i]) {
			continue
		}
		at := w.restartAt[i]
		if g, ok := w.gateSince(at.Add(-RaceMargin), at); ok && g.pausePeriod() > 0 {
			out = append(out, Violation(fmt.Sprintf("gated: %s %s reloaded at rv %d without a pause, under %s",
				w.Kind, w.name, rv, g)))
		}
	}
	for _, rs := range w.resumes {
		if r.own[w.restarts[rs.restart]] {
			continue // its owner's resume
		}
		at := w.restartAt[rs.restart]
		g, ok := w.gateSince(rs.pausedAt.Add(-RaceMargin), at)
		if d := g.pausePeriod(); ok && d > 0 && at.Sub(rs.pausedAt) < d-500*time.Millisecond {
			out = append(out, Violation(fmt.Sprintf("gated: %s %s resumed at rv %d, %s after its pause began, under %s",
				w.Kind, w.name, w.restarts[rs.restart], at.Sub(rs.pausedAt).Round(time.Millisecond), g)))
		}
	}
	out = append(out, r.ownerPauseViolations(w, paired)...)
	out = append(out, r.rolloutViolations(w, paired)...)
	for i := range paired.rollback {
		j := paired.of[i]
		for k := j + 1; k < i; k++ {
			if r.own[w.restarts[k]] && w.restartAt[k].Before(w.restartAt[i].Add(-RaceMargin)) {
				out = append(out, Violation(fmt.Sprintf("rollback: %s %s rolled back its reload at rv %d (rv %d) after another actor changed its template (rv %d): the failure was theirs",
					w.Kind, w.name, w.restarts[j], w.restarts[i], w.restarts[k])))
			}
		}
	}
	for i, rv := range w.restarts {
		for c := range w.touched[i] {
			if !r.own[rv] && !paired.rollback[i] && r.invalidAt(c, rv, w.restartAt[i]) {
				out = append(out, Violation(fmt.Sprintf("invalid: %s %s reloaded at rv %d for %s, whose content did not validate", w.Kind, w.name, rv, c)))
			}
		}
	}
	if w.Kind == KindCronJob {
		reloads := r.excess.byReloader(w)
		if len(w.runs) > reloads || w.deletedAt.IsZero() && len(w.runs) < reloads {
			out = append(out, Violation(fmt.Sprintf("runs: CronJob %s ran %d Jobs (at rv %v) for %d reloads of its template",
				w.name, len(w.runs), w.runs, reloads)))
		}
	}
	return out
}

// pairs are a workload's rollbacks: by the index of the restart that undid a reload, the index
// of that reload (of); undone holds the reloads' indexes.
type pairs struct {
	rollback map[int]bool
	of       map[int]int
	undone   map[int]int
}

// rollbacks finds the restarts of w that undid the reloader's previous restart, in a sequence
// run with --rollback: the same configs touched, each marker back to its value before that
// restart, at least the rollout timeout later (no rollout completes in the checker's cluster,
// so every followed reload times out). The caller holds r.mu.
func (r *gates) rollbacks(w *WorkloadLife) pairs {
	p := pairs{rollback: map[int]bool{}, of: map[int]int{}, undone: map[int]int{}}
	if !r.rollback || w.Kind == KindJob || w.Kind == KindCronJob {
		// CronJobs and Jobs are not followed, so never rolled back (docs/safe-reloads.md, "Safe reloads"):
		// a reload that puts a marker back (a deletion after a recreation) is a run (seed 13@3).
		return p
	}
	j := -1 // the reloader's last restart before i that is no rollback
	for i, rv := range w.restarts {
		if r.own[rv] {
			continue
		}
		if j >= 0 && i < len(w.rolledBack) && w.rolledBack[i] && w.restartAt[i].Sub(w.restartAt[j]) >= RolloutTimeout-500*time.Millisecond && maps.Equal(w.touched[i], w.touched[j]) {
			before := w.marks0
			if j > 0 {
				before = w.marks[j-1]
			}
			if j < len(w.found) && w.found[j] != nil && slices.ContainsFunc(w.resumes, func(rs resume) bool { return rs.restart == j && rs.carried }) {
				// A reload that rode on a resume found the template written during the pause
				// (soak seed 1796195658658212531@10: a reload patched in then, its resume held
				// while a config did not validate). A resume alone rolls out the reloads
				// patched into the pause, whose rollback puts back the template from before
				// them all: the restart before's.
				before = w.found[j]
			}
			back := slices.ContainsFunc(r.restoredTo(w, j, before), func(before map[string]string) bool {
				for c := range w.touched[i] {
					if w.marks[i][c] != before[c] {
						return false
					}
				}
				return true
			})
			if back {
				p.rollback[i], p.of[i], p.undone[j] = true, j, i
				j = -1
				continue
			}
		}
		j = i
	}
	return p
}

// restoredTo lists the markers a rollback of w's reload j may put back: before, those it
// replaced; or, for a reload patched into a Deployment its owner paused over an earlier reload
// still followed, what a rollback of that earlier one puts back: nothing of it rolled out, so
// the reloader puts back the template from before both (policy.Restore.Since). Where the
// reloader may not have seen the pause yet, or the earlier rollout may have ended before it,
// either. The caller holds r.mu.
func (r *gates) restoredTo(w *WorkloadLife, j int, before map[string]string) []map[string]string {
	var out []map[string]string
	for k := j; ; k-- {
		prev := k - 1
		// A rollback, or another actor's change, ended the earlier reload's follow.
		chained := w.Kind == KindDeployment && prev >= 0 && w.maybeOwnerPausedAt(w.restartAt[k]) &&
			!r.own[w.restarts[prev]] && !(prev < len(w.rolledBack) && w.rolledBack[prev])
		// Both patched into one pause of its owner's: the earlier reload was still followed.
		if span := w.ownerPauseAt(w.restartAt[k]); !chained || span < 0 || w.ownerPauseAt(w.restartAt[prev]) != span {
			out = append(out, before)
		}
		if !chained {
			return out
		}
		before = w.marks0
		if prev > 0 {
			before = w.marks[prev-1]
		}
	}
}
