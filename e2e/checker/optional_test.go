package checker

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

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
			r := reappearance(at, 4, Ref{Config: "sec-0", Optional: tc.optional}, tc.restartAt)
			if got := len(r.Oracle.Excess()) > 0; got != tc.excess {
				t.Errorf("excess %v, want some %t", r.Oracle.Excess(), tc.excess)
			}
		})
	}
}

// A workload whose pods wait for a config, restarted while it was deleted, takes its
// reappearance when it comes back; if no reloader saw it come back, the next one finds only the
// state's note that the pods wait and reloads the workload once, which is no excess, whatever
// the content (here its old one, recreated just after a kill -9). The controls: the same reload
// when a reloader saw the reappearance, or after a restart before the deletion, is one.
func TestAReappearanceNoReloaderSawAfterARestartThatWaitedForItIsAChange(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	for _, tc := range []struct {
		name      string
		restartAt int            // when the restart for cm-0 came
		blind     [][2]time.Time // spans no reloader watched
		kills     []time.Time    // kill -9s
		optional  bool           // cm-1 is read through an optional key ref only
		excess    bool
	}{
		{name: "back while no reloader ran", restartAt: 15, blind: [][2]time.Time{{at(29), at(32)}}},
		{name: "back just before a kill -9", restartAt: 15, kills: []time.Time{at(30).Add(200 * time.Millisecond)}},
		{name: "back while a reloader watched", restartAt: 15, excess: true},
		{name: "back unseen after a restart before the deletion", restartAt: 5, blind: [][2]time.Time{{at(29), at(32)}}, excess: true},
		{name: "seen back, read through an optional key ref", restartAt: 15, optional: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := Ref{Config: "cm-1", Whole: true}
			if tc.optional {
				ref = Ref{Config: "cm-1", Optional: true}
			}
			r := reappearance(at, 1, ref, tc.restartAt)
			r.blind, r.kills = tc.blind, tc.kills
			if got := len(r.Oracle.Excess()) > 0; got != tc.excess {
				t.Errorf("excess %v, want some %t", r.Oracle.Excess(), tc.excess)
			}
		})
	}
}

// reappearance records workload w-0 (created at createdRV) reading the config of back and cm-0:
// back is deleted at 10 s and recreated with its old content at 30 s; cm-0 changes just before
// the restart at restartAt s, and w-0 restarts again at 40 s, with a marker of back.
func reappearance(at func(int) time.Time, createdRV int64, back Ref, restartAt int) *Recorder {
	r := NewRecorder(Sequence{})
	r.configs[back.Config] = []configEvent{
		{rv: 2, at: at(0), exists: true, data: Content{"a": "0", "b": "0"}},
		{rv: 10, at: at(10), exists: false},
		{rv: 30, at: at(30), exists: true, data: Content{"a": "0", "b": "0"}},
	}
	r.configs["cm-0"] = []configEvent{
		{rv: 3, at: at(0), exists: true, data: Content{"a": "0"}},
		{rv: int64(restartAt) - 1, at: at(restartAt - 2), exists: true, data: Content{"a": "1"}},
	}
	r.workloads[types.UID("w-0")] = &WorkloadLife{Kind: KindDeployment, name: "w-0", createdRV: createdRV, createdAt: at(0), generation: 3,
		refs:      []Ref{back, {Config: "cm-0", Whole: true}},
		modes:     []modeEvent{{mode: ModeAuto}},
		marks0:    map[string]string{},
		restarts:  []int64{int64(restartAt), 40},
		touched:   []map[string]bool{{"cm-0": true}, {back.Config: true}},
		marks:     []map[string]string{{"cm-0": "X"}, {"cm-0": "X", back.Config: "Y"}},
		restartAt: []time.Time{at(restartAt), at(40)}, rolledBack: []bool{false, false}}
	return r
}
