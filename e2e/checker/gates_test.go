package checker

import (
	"strings"
	"testing"
	"time"
)

// A reload that rode on a resume found the template written during the pause (a marker B of
// cm-0 patched in then); its rollback puts that back, not the markers of the restart before
// (A): it is paired with the resume (soak seed 1796195658658212531@10). The control: the same
// restart taken for no resume is not.
func TestARollbackOfAReloadThatRodeOnAResumePutsBackThePausedTemplate(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	r := NewRecorder(Sequence{Rollback: true})
	w := &WorkloadLife{Kind: KindDeployment, name: "w-2", marks0: map[string]string{},
		restarts:   []int64{100, 200, 210},
		touched:    []map[string]bool{{"cm-0": true}, {"cm-0": true}, {"cm-0": true}},
		marks:      []map[string]string{{"cm-0": "A"}, {"cm-0": "C"}, {"cm-0": "B"}},
		found:      []map[string]string{{}, {"cm-0": "B"}, {"cm-0": "C"}},
		resumes:    []resume{{restart: 1, pausedAt: at(150)}},
		restartAt:  []time.Time{at(100), at(200), at(204)},
		rolledBack: []bool{false, false, true}}
	if p := r.gates.rollbacks(w); !p.rollback[2] || p.of[2] != 1 {
		t.Fatalf("the rollback of the resume's reload was not paired with it: %+v", p)
	}
	w.resumes = nil
	if p := r.gates.rollbacks(w); p.rollback[2] {
		t.Fatalf("paired though the reload was no resume: the markers went back to none of the restart before: %+v", p)
	}
}

// A reload for a config's deletion, rolloutTimeout after the reload that added the config's
// marker, gives back the markers from before that reload, as a rollback of it would; only the
// reloader's history on the workload, written in the rollback's own patch, tells them apart
// (soak seed 1795734170280237632@4: another actor's change in between made the deletion's
// reload a "rollback after another actor's change").
func TestADeletionReloadIsNoRollbackOfTheReloadBefore(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	r := NewRecorder(Sequence{Rollback: true})
	w := &WorkloadLife{Kind: KindDeployment, name: "w-3", marks0: map[string]string{},
		restarts:   []int64{220, 223, 239},
		touched:    []map[string]bool{{"cm--2": true}, {}, {"cm--2": true}},
		marks:      []map[string]string{{"cm--2": "X"}, {"cm--2": "X"}, {}},
		restartAt:  []time.Time{at(0), at(1), at(6)},
		rolledBack: []bool{false, false, false}}
	r.own[223] = true
	if p := r.gates.rollbacks(w); len(p.rollback) != 0 {
		t.Fatalf("the deletion's reload was taken for a rollback: %+v", p)
	}
	if v := r.gates.gated(w); len(v) != 0 {
		t.Fatalf("violations for a deletion's reload: %v", v)
	}
	w.rolledBack[2] = true // the control: the same restart, said to be a rollback
	if p := r.gates.rollbacks(w); !p.rollback[2] || p.of[2] != 0 {
		t.Fatalf("a rollback the history names was not paired with the reload it undid: %+v", p)
	}
	if v := r.gates.gated(w); len(v) != 1 || !strings.Contains(string(v[0]), "the failure was theirs") {
		t.Fatalf("a rollback after another actor's change was not reported: %v", v)
	}
}
