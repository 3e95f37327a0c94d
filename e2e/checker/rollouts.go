package checker

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Generator version 10 (issue 48, point 8), drawn from an eleventh random stream so that
// versions 1 to 9 keep their sequences. About a fifth of its sequences (half of those with
// --rollback, a tenth of the others) run on a second cluster whose rollouts complete: a
// controller manager, a scheduler and kwok, as `make run` has. Its Deployments run one
// replica; a third of those the first stream creates are broken: their pods never become Ready
// (testcluster.NotReadyWhen), so each of their rollouts fails at a progress deadline of
// brokenDeadline. The oracle judges rollbacks there (rolloutViolations): a rollback of a
// Deployment that is not broken is a violation, as is one that does not put back the markers
// its reload replaced; and only a right rollback holds a content (heldByRollback).

// rolloutsComplete draws whether the sequence runs where rollouts complete: half the
// sequences with --rollback, where rollbacks are judged, and a tenth of the others.
func (g *laterDraws) rolloutsComplete(rollback bool) bool {
	if rollback {
		return g.eleventh.IntN(2) == 0
	}
	return g.eleventh.IntN(10) == 0
}

// breakSome makes a third of the Deployments the first streams create broken.
func (g *laterDraws) breakSome(actions []Action) {
	for i, a := range actions {
		if a.Op == "create-workload" && KindOrDefault(a.Kind) == KindDeployment && slices.Contains(workloadNames, a.Target) {
			actions[i].Broken = g.eleventh.IntN(3) == 0
		}
	}
}

// eleventhActions draws gen 10's actions after a main action.
func (g *laterDraws) eleventhActions(s Sequence) []Action {
	var out []Action
	if g.eleventh.IntN(forgeRunEvery) == 0 {
		out = append(out, g.forgeRun()...)
	}
	if s.Webhook && g.eleventh.IntN(webhookInvalidEvery) == 0 {
		out = append(out, g.webhookInvalid()...)
	}
	for i := range out {
		out[i].Eleventh = true
	}
	return out
}

// NotReadyWhen is testcluster.NotReadyWhen, the variable the cluster's kwok stage reads: this
// package does not import testcluster, which would link a control plane into its tests. e2e
// holds the two equal (TestBrokenPodsUseTheClustersNotReadyVariable).
const NotReadyWhen = "KWOK_NOT_READY_WHEN"

// brokenEnv is what makes a pod never Ready on the cluster's kwok node: the variable kwok's
// stage reads, and another holding the same value.
var brokenEnv = []corev1.EnvVar{{Name: NotReadyWhen, Value: "broken"}, {Name: "CHECKER_BROKEN", Value: "broken"}}

// BreakTemplate makes tmpl's pods never Ready.
func BreakTemplate(tmpl *corev1.PodTemplateSpec) {
	tmpl.Spec.Containers[0].Env = append(tmpl.Spec.Containers[0].Env, brokenEnv...)
}

// keepBroken carries brokenEnv from a template into the one a helm upgrade renders: the chart
// stays broken.
func keepBroken(from, to *corev1.PodTemplateSpec) {
	for _, e := range from.Spec.Containers[0].Env {
		if e.Name == NotReadyWhen {
			BreakTemplate(to)
			return
		}
	}
}

// rolloutViolations lists, where rollouts complete, the rollbacks of w that were wrong: of a
// Deployment that is not broken (its rollout completes; one its owner paused is judged by
// ownerPauseViolations), and a rollback, as the reloader's history says, that did not put back
// the markers its reload replaced or came sooner than a rollout fails. The caller holds r.mu.
func (r *gates) rolloutViolations(w *WorkloadLife, paired pairs) []Violation {
	if !r.rollouts && w.Kind != KindRollout {
		return nil
	}
	var out []Violation
	for i := range paired.rollback {
		if r.completes(w) && !w.ownerPausedAt(w.restartAt[i]) {
			out = append(out, Violation(fmt.Sprintf("rollback: %s %s rolled back its reload at rv %d (rv %d), a rollout that completes: its pods become Ready",
				w.Kind, w.name, w.restarts[paired.of[i]], w.restarts[i])))
		}
	}
	j := -1 // the reloader's last restart before i
	for i, rv := range w.restarts {
		if r.own[rv] {
			continue
		}
		if j >= 0 && i < len(w.rolledBack) && w.rolledBack[i] && !paired.rollback[i] {
			why := "did not put back the markers of before it"
			if d := w.restartAt[i].Sub(w.restartAt[j]); d < RolloutTimeout-500*time.Millisecond {
				why = fmt.Sprintf("came %s after it, sooner than any rollout fails here", d.Round(time.Millisecond))
			}
			out = append(out, Violation(fmt.Sprintf("rollback: %s %s rolled back its reload at rv %d (rv %d), and %s", w.Kind, w.name, w.restarts[j], rv, why)))
		}
		j = i
	}
	return out
}

// completes reports whether every rollout of w completes: a Deployment that is not broken where
// rollouts complete, or a Rollout, whose status the checker writes. The caller holds r.mu.
func (r *gates) completes(w *WorkloadLife) bool {
	return r.rollouts && !w.broken || w.Kind == KindRollout
}

// brokenRollbacks counts the rollbacks of broken Deployments: the failures rollback judged.
// The caller holds r.mu.
func (r *gates) brokenRollbacks() int {
	n := 0
	for _, w := range r.lives() {
		if w.broken {
			n += len(r.rollbacks(w).rollback)
		}
	}
	return n
}
