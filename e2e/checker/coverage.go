package checker

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// coverage counts, per feature, the actions of a sequence that exercise it. A setting of the
// whole sequence (a flag, the strategy) counts every action of the sequence, since each runs
// under it; an action counts under its operation and under what it carries (a workload's kind,
// where its annotations sit, its gate). The soak adds these up into RELIABILITY.md's coverage
// table (issue 24's acceptance).
func coverage(s Sequence) map[string]int {
	c := map[string]int{}
	all := len(s.Actions)
	setting := func(on bool, name string) {
		if on {
			c[name] += all
		}
	}
	setting(s.Replicas > 1, "setting: 2 replicas, leader election")
	setting(s.OnCreate, "setting: --reload-on-create")
	setting(s.OnDelete, "setting: --reload-on-delete")
	setting(s.Migrate, "setting: switch from stakater")
	setting(s.Strategy == "annotations", "setting: annotations strategy")
	setting(s.Window == "open", "setting: --reload-window open")
	setting(s.Window == "closed", "setting: --reload-window closed")
	setting(len(s.Validated) > 0, "setting: validated configs")
	setting(s.Rollback, "setting: --rollback")
	setting(s.NsSelector, "setting: --namespace-selector")
	setting(s.Fold, "setting: two configs folding into one stakater variable")
	setting(s.Rollouts, "setting: rollouts complete (controllers, kwok)")
	setting(s.Rollouts && s.Rollback, "setting: rollouts complete, --rollback")
	setting(s.Webhook, "setting: --webhook-url")
	setting(s.Argo, "setting: Argo Rollouts (--is-argo-rollouts)")
	for i, a := range s.Actions {
		c["action: "+a.Op]++
		switch a.Op {
		case "delete-workload":
			// Gen 7's replacement: created again at once, with other refs.
			if next := s.Actions[min(i+1, len(s.Actions)-1)]; a.Pause == 0 && next.Op == "create-workload" && next.Target == a.Target {
				c["workload: deleted and created again at once"]++
			}
		case "update":
			if a.Value == InvalidJSON {
				c["content: invalid (does not validate)"]++
			}
		case "annotate":
			modeCoverage(c, a.Mode)
		case "create-workload":
			modeCoverage(c, a.Mode)
			kind := a.Kind
			if kind == "" {
				kind = KindDeployment
			}
			c["kind: "+kind]++
			if a.OnTemplate {
				c["annotations on the pod template"]++
			}
			if a.Broken {
				c["workload: broken Deployment (pods never Ready)"]++
			}
			if a.Kind == KindRollout && a.Dur > 0 {
				c["workload: Argo Rollout with a pause step"]++
			}
			gateCoverage(c, a.Gate)
		case "gate":
			gateCoverage(c, a.Gate)
		case "hashkey":
			c["hash key: "+a.Value]++
		case "forge":
			c["forged state entry: "+a.Value]++
		case "forge-run":
			c["forged CronJob run: "+a.Value]++
		}
		if a.Op == "state-delete" && a.Tenth {
			c["state deleted under a running reloader, then a downtime"]++
		}
	}
	return c
}

// modeCoverage counts a mode a workload is created or annotated with, where it names configs.
func modeCoverage(c map[string]int, m string) {
	switch m {
	case modeNamed:
		c["reload annotation: names"]++
	case modePattern:
		c["reload annotation: patterns"]++
	}
}

// gateCoverage counts a gate annotation a workload is created or updated with.
func gateCoverage(c map[string]int, g GateSpec) {
	switch {
	case g.Kind == "":
		c["gate: removed or none"]++
	case g.Value == "":
		c["gate: "+g.Kind+", empty"]++
	case g.Kind == "window" && (g.Value == "open" || g.Value == "closed"):
		c["gate: window "+g.Value]++
	case g.Kind == "window" || !isDuration(g.Value):
		c["gate: "+g.Kind+", malformed"]++
	default:
		c["gate: "+g.Kind]++
	}
}

// coverageTable sums what a run of sequences exercised: per feature, the sequences and the
// actions that exercised it; per fault, the sequences it was injected in and how often.
type coverageTable struct {
	sequences, actions map[string]int
}

func NewCoverageTable() *coverageTable {
	return &coverageTable{sequences: map[string]int{}, actions: map[string]int{}}
}

// Add counts one sequence: what its actions exercised, and the faults the run injected.
func (t *coverageTable) Add(s Sequence, faults map[string]int) {
	for k, n := range coverage(s) {
		t.sequences[k]++
		t.actions[k] += n
	}
	for k, n := range faults {
		if n > 0 {
			t.sequences["fault: "+k]++
			t.actions["fault: "+k] += n
		}
	}
}

// String is a markdown table, sorted by feature.
func (t *coverageTable) String() string {
	var b strings.Builder
	b.WriteString("| feature or fault | sequences | actions (faults: times injected) |\n| --- | --- | --- |\n")
	for _, k := range slices.Sorted(maps.Keys(t.sequences)) {
		fmt.Fprintf(&b, "| %s | %d | %d |\n", k, t.sequences[k], t.actions[k])
	}
	return b.String()
}
