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
			r := NewRecorder(Sequence{})
			r.configs["sec-0"] = []configEvent{
				{rv: 2, at: at(0), exists: true, data: Content{"a": "0", "b": "0"}},
				{rv: 10, at: at(10), exists: false},
				{rv: 30, at: at(30), exists: true, data: Content{"a": "0", "b": "0"}},
			}
			r.configs["cm-0"] = []configEvent{
				{rv: 3, at: at(0), exists: true, data: Content{"a": "0"}},
				{rv: int64(tc.restartAt) - 1, at: at(tc.restartAt - 2), exists: true, data: Content{"a": "1"}},
			}
			w := &WorkloadLife{Kind: KindDeployment, name: "w-0", createdRV: 4, createdAt: at(0), generation: 3,
				refs:      []Ref{{Config: "sec-0", Optional: tc.optional}, {Config: "cm-0", Whole: true}},
				modes:     []modeEvent{{mode: ModeAuto}},
				marks0:    map[string]string{},
				restarts:  []int64{int64(tc.restartAt), 40},
				touched:   []map[string]bool{{"cm-0": true}, {"sec-0": true}},
				marks:     []map[string]string{{"cm-0": "X"}, {"cm-0": "X", "sec-0": "Y"}},
				restartAt: []time.Time{at(tc.restartAt), at(40)}, rolledBack: []bool{false, false}}
			r.workloads[types.UID("w-0")] = w
			if got := len(r.Oracle.Excess()) > 0; got != tc.excess {
				t.Errorf("excess %v, want some %t", r.Oracle.Excess(), tc.excess)
			}
		})
	}
}
