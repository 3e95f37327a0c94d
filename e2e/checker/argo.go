package checker

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Generator version 10: Argo Rollouts with a pause step. In half the sequences with --rollback
// that run neither where rollouts complete nor with --webhook-url, the reloader also runs with
// --is-argo-rollouts, and 2 or 3 Rollouts (w-r<n>, names no other stream draws, so only the
// reloader changes them) are created at quiet points, reading configs in auto mode. No Argo
// controller runs: the checker writes each Rollout's status as Argo's would (actAsArgo), Healthy
// for its creation and for a rollback, and, for half the Rollouts, at each reload a canary pause
// step (phase Paused, status.pauseConditions, controllerPause) for 4 to 8 s, past the rollout
// timeout, then Healthy (promoted). A pause step counts as its owner's pause (ownerPauses): a
// rollback of a reload while at it is a violation, as is any rollback of a Rollout, whose
// rollouts all complete (rolloutViolations).

const KindRollout = "Rollout"

var RolloutGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}

// argoRollouts draws, after every other draw of the eleventh stream (so that the sequences
// without them keep theirs), the Rollouts of a sequence and where they are created: before a
// quiet point, or right after the first workloads.
func (g *laterDraws) argoRollouts(s *Sequence) {
	if !s.Rollback || s.Rollouts || s.Webhook || g.eleventh.IntN(2) != 0 {
		return
	}
	s.Argo = true
	first := 0
	for first < len(s.Actions) && s.Actions[first].Op == "create-workload" {
		first++
	}
	at := []int{first}
	for i, a := range s.Actions {
		if a.Op == "quiet" {
			at = append(at, i)
		}
	}
	type placed struct {
		at int
		a  Action
	}
	var rollouts []placed
	for k := range 2 + g.eleventh.IntN(2) {
		a := Action{Op: "create-workload", Target: fmt.Sprintf("w-r%d", k+1), Kind: KindRollout, Mode: ModeAuto, Refs: drawRefs(g.eleventh, g.eleventh),
			Eleventh: true, Pause: time.Duration(g.eleventh.IntN(400)) * time.Millisecond}
		if g.eleventh.IntN(2) == 0 {
			a.Dur = time.Duration(4000+g.eleventh.IntN(4000)) * time.Millisecond // its pause step
		}
		rollouts = append(rollouts, placed{pick(g.eleventh, at), a})
	}
	// Inserted from the last place to the first, so that each index still names its place.
	slices.SortStableFunc(rollouts, func(x, y placed) int { return y.at - x.at })
	for _, p := range rollouts {
		s.Actions = slices.Insert(s.Actions, p.at, p.a)
	}
}

// newRollout is a Rollout with one replica and a canary strategy whose second step is a pause.
func newRollout(name string, meta map[string]any, tmpl map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": KindRollout,
		"metadata": map[string]any{"name": name, "annotations": meta},
		"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": map[string]any{"app": name}}, "template": tmpl,
			"strategy": map[string]any{"canary": map[string]any{"steps": []any{map[string]any{"setWeight": int64(50)}, map[string]any{"pause": map[string]any{}}}}}},
	}}
}
