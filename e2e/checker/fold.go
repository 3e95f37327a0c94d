package checker

import (
	"slices"
)

// Generator version 9, in half the switches from stakater (sequence.Fold): a fifth config,
// foldedName, whose stakater variable is cm--2's (stakater folds each run of symbols into one
// '_': both are STAKATER_CM_2_CONFIGMAP), and a workload, foldedWorkloadName, created before
// the first start reading both, with that one variable. It holds the hash of one of them, as
// stakater's last reload for that one left it, or a hash of neither (stakater missed a change).
// The first start must restart it only in the second case (docs/migrating.md: the variable
// vouches for the config whose hash it holds, the other is judged by the state). The tenth
// stream changes the fifth config now and then, and the final round changes it as every other.
// The workload's name is none of workloadNames, so no other action touches it, and version 9
// without it is version 8.

const (
	FoldedName         = "cm-2"
	foldedWorkloadName = "w-f"
)

// foldedContent is the fifth config's first content: not the others' ("0" everywhere), so that
// the two configs' stakater hashes differ.
var foldedContent = Content{"a": "0", "b": "f"}

// JudgedConfigs are the configs the oracle judges: the world's, and the fifth one, which
// exists only in folded sequences (a config that never existed has no change).
var JudgedConfigs = append(slices.Clone(ConfigNames), FoldedName)

// FirstContent is what config c is created with at the setup.
func FirstContent(c string) Content {
	if c == FoldedName {
		return foldedContent
	}
	return Content{"a": "0", "b": "0"}
}

// foldedWorkload is the workload reading cm--2 and the fifth config, with stakater's one
// variable for both: the current hash of one of them (Cur), or an older one (Lag).
func (g *laterDraws) foldedWorkload() Action {
	a := Action{Op: "create-workload", Target: foldedWorkloadName, Mode: pick(g.tenth, []string{ModeAuto, modeNamed}), Kind: KindDeployment,
		Refs: []Ref{{Config: "cm--2", Whole: true}, {Config: FoldedName, Whole: true}}, Tenth: true}
	c := pick(g.tenth, []string{"cm--2", FoldedName})
	if g.tenth.IntN(3) == 0 {
		a.Lag = []string{c}
	} else {
		a.Cur = []string{c}
	}
	return a
}
