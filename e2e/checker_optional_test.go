package e2e

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// reappearances are, for a workload that reads config c only through optional key refs, the
// reappearances of c with key a after a restart of w while c was absent: its pods started
// without the key, so the reappearance is a change for them whatever its content, and the
// reloader restarts w once for it (docs/design.md; reloader TestAnOptionalConfigBackAfterA
// RestartWithoutItRestartsOnce). One whose content differs from the content before the
// deletion is a change anyway (changes), and is not listed twice. Any template change counts
// as a restart (the reloader's, a rollback, the checker's), from raceMargin before the
// deletion on: generous, as excess must be. The caller holds r.mu.
func (r *recorder) reappearances(w *workloadLife, c string) []change {
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
			if e.read(false) != "" && !counted[e.rv] && r.restartedBetween(w, goneAt.Add(-raceMargin), e.at) {
				out = append(out, change{rv: e.rv, at: e.at, by: e.by + ", back after a restart without it"})
			}
			goneAt = time.Time{}
		}
	}
	return out
}

// restartedBetween reports whether w's template changed between from and to. The caller holds
// r.mu.
func (r *recorder) restartedBetween(w *workloadLife, from, to time.Time) bool {
	for _, at := range w.restartAt {
		if at.After(from) && at.Before(to) {
			return true
		}
	}
	return false
}

// A workload reading a config only through an optional key ref, restarted while the config was
// deleted, takes its reappearance with the content it had as a change: one reload for it is no
// excess (seed 105@8). The control: the same reload without the restart while absent is one.
func TestAReappearanceAfterARestartWithoutAnOptionalConfigIsAChange(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	for _, tc := range []struct {
		name      string
		optional  bool
		restartAt int // when the restart for cm-0 came
		excess    bool
	}{
		{name: "restarted while absent", optional: true, restartAt: 15},
		{name: "restarted before the deletion", optional: true, restartAt: 5, excess: true},
		{name: "read without optional", optional: false, restartAt: 15, excess: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(sequence{})
			r.configs["sec-0"] = []configEvent{
				{rv: 2, at: at(0), exists: true, data: content{"a": "0", "b": "0"}},
				{rv: 10, at: at(10), exists: false},
				{rv: 30, at: at(30), exists: true, data: content{"a": "0", "b": "0"}},
			}
			r.configs["cm-0"] = []configEvent{
				{rv: 3, at: at(0), exists: true, data: content{"a": "0"}},
				{rv: int64(tc.restartAt) - 1, at: at(tc.restartAt - 2), exists: true, data: content{"a": "1"}},
			}
			w := &workloadLife{kind: kindDeployment, name: "w-0", createdRV: 4, createdAt: at(0), generation: 3,
				refs:      []ref{{Config: "sec-0", Optional: tc.optional}, {Config: "cm-0", Whole: true}},
				modes:     []modeEvent{{mode: modeAuto}},
				marks0:    map[string]string{},
				restarts:  []int64{int64(tc.restartAt), 40},
				touched:   []map[string]bool{{"cm-0": true}, {"sec-0": true}},
				marks:     []map[string]string{{"cm-0": "X"}, {"cm-0": "X", "sec-0": "Y"}},
				restartAt: []time.Time{at(tc.restartAt), at(40)}, rolledBack: []bool{false, false}}
			r.workloads[types.UID("w-0")] = w
			if got := len(r.excess()) > 0; got != tc.excess {
				t.Errorf("excess %v, want some %t", r.excess(), tc.excess)
			}
		})
	}
}
