package checker

import (
	"maps"
	"testing"
)

func TestCoverageCountsEachActionUnderItsOperationAndEverySettingItRanUnder(t *testing.T) {
	t.Parallel()
	s := Sequence{Gen: 3, OnDelete: true, Strategy: "annotations", Actions: []Action{
		{Op: "create-workload", Kind: KindCronJob, OnTemplate: true, Gate: GateSpec{Kind: "pause", Value: ""}},
		{Op: "create-workload", Gate: GateSpec{Kind: "min", Value: "2s"}},
		{Op: "update", Value: InvalidJSON},
		{Op: "gate", Gate: GateSpec{Kind: "window", Value: "closed"}},
		{Op: "hashkey", Value: "replace"},
		{Op: "reref", Target: "w-1"},
		{Op: "delete-workload", Target: "w-1"},
		{Op: "create-workload", Target: "w-1"},
	}}
	want := map[string]int{
		"setting: --reload-on-delete":                 8,
		"setting: annotations strategy":               8,
		"action: create-workload":                     3,
		"action: reref":                               1,
		"action: delete-workload":                     1,
		"workload: deleted and created again at once": 1,
		"action: update":                              1,
		"action: gate":                                1,
		"action: hashkey":                             1,
		"kind: CronJob":                               1,
		"kind: Deployment":                            2,
		"annotations on the pod template":             1,
		"gate: pause, empty":                          1,
		"gate: min":                                   1,
		"gate: removed or none":                       1,
		"gate: window closed":                         1,
		"content: invalid (does not validate)":        1,
		"hash key: replace":                           1,
	}
	if got := coverage(s); !maps.Equal(got, want) {
		t.Errorf("coverage:\n got %v\nwant %v", got, want)
	}
	tab := NewCoverageTable()
	tab.Add(s, map[string]int{"outage": 2, "refusal": 0})
	tab.Add(Sequence{Actions: []Action{{Op: "update", Value: "1"}}}, nil)
	if tab.sequences["action: update"] != 2 || tab.actions["action: update"] != 2 {
		t.Errorf("two sequences with one update each: %d sequences, %d actions", tab.sequences["action: update"], tab.actions["action: update"])
	}
	if tab.sequences["fault: outage"] != 1 || tab.actions["fault: outage"] != 2 {
		t.Errorf("an outage injected twice in one sequence: %d sequences, %d times", tab.sequences["fault: outage"], tab.actions["fault: outage"])
	}
	if _, ok := tab.sequences["fault: refusal"]; ok {
		t.Error("a fault never injected is counted")
	}
}
