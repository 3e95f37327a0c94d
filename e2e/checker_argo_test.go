package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/reloader/reloader/internal/dev/testcluster"
	"github.com/reloader/reloader/policy"
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

const kindRollout = "Rollout"

var rolloutGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}

// argoRollouts draws, after every other draw of the eleventh stream (so that the sequences
// without them keep theirs), the Rollouts of a sequence and where they are created: before a
// quiet point, or right after the first workloads.
func (g *generator) argoRollouts(s *sequence) {
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
		a  action
	}
	var rollouts []placed
	for k := range 2 + g.eleventh.IntN(2) {
		a := action{Op: "create-workload", Target: fmt.Sprintf("w-r%d", k+1), Kind: kindRollout, Mode: modeAuto, Refs: drawRefs(g.eleventh, g.eleventh),
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

// The Rollout CRD, with Argo's status subresource, installed once in the e2e cluster.
var (
	rolloutCRDOnce sync.Once
	rolloutCRDErr  error
)

func ensureRolloutCRD(ctx context.Context, t *testing.T, c *testcluster.Cluster, dyn dynamic.Interface) {
	rolloutCRDOnce.Do(func() {
		if _, err := c.ApplyFile(ctx, "", "testdata/checker-rollouts-crd.yaml"); err != nil && !apierrors.IsAlreadyExists(err) {
			rolloutCRDErr = err
		}
	})
	if rolloutCRDErr != nil {
		t.Fatalf("install the Rollout CRD: %v", rolloutCRDErr)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := dyn.Resource(rolloutGVR).Namespace("default").List(ctx, metav1.ListOptions{})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Rollouts not served 30 s after their CRD: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// newRollout is a Rollout with one replica and a canary strategy whose second step is a pause.
func newRollout(name string, meta map[string]any, tmpl map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": kindRollout,
		"metadata": map[string]any{"name": name, "annotations": meta},
		"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": map[string]any{"app": name}}, "template": tmpl,
			"strategy": map[string]any{"canary": map[string]any{"steps": []any{map[string]any{"setWeight": int64(50)}, map[string]any{"pause": map[string]any{}}}}}},
	}}
}

// actAsArgo writes Rollout name's status as Argo's controller would, until it is gone: Healthy
// for its first generation and for a rollback; for any other new generation, a pause step for
// pauseFor (if set), then Healthy. Each pause step is recorded as its owner's pause.
func (w *world) actAsArgo(name string, uid types.UID, pauseFor time.Duration) {
	res := w.workloads(kindRollout)
	var handled int64
	var promoteAt time.Time
	for w.ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		u, err := res.Get(w.ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && u.GetUID() != uid {
			return
		}
		if err != nil {
			continue
		}
		gen := u.GetGeneration()
		switch {
		case gen != handled:
			h := policy.ParseHistory(u.GetAnnotations()[policy.HistoryAnnotation])
			pause := handled != 0 && pauseFor > 0 && !(len(h) > 0 && h[0].RolledBack)
			status := map[string]any{"observedGeneration": fmt.Sprint(gen), "phase": "Healthy"}
			if pause {
				status = map[string]any{"observedGeneration": fmt.Sprint(gen), "phase": "Paused", "message": "CanaryPauseStep", "controllerPause": true,
					"pauseConditions": []any{map[string]any{"reason": "CanaryPauseStep", "startTime": time.Now().UTC().Format(time.RFC3339)}}}
			}
			u.Object["status"] = status
			at := time.Now()
			if _, err := res.UpdateStatus(w.ctx, u, metav1.UpdateOptions{}); err != nil {
				continue
			}
			handled = gen
			if pause {
				promoteAt = at.Add(pauseFor)
				w.argoPaused(uid, true, at)
			}
		case !promoteAt.IsZero() && time.Now().After(promoteAt):
			u.Object["status"] = map[string]any{"observedGeneration": fmt.Sprint(gen), "phase": "Healthy"}
			if _, err := res.UpdateStatus(w.ctx, u, metav1.UpdateOptions{}); err != nil {
				continue
			}
			promoteAt = time.Time{}
			w.argoPaused(uid, false, time.Now())
		}
	}
}

// argoPaused records a pause step of Rollout uid beginning (paused) or ending, as its owner's
// pause: a reload is not timed out nor rolled back while it lasts.
func (w *world) argoPaused(uid types.UID, paused bool, at time.Time) {
	if w.rec.argoPaused(uid, paused, at) {
		w.faults["Argo pause step"]++
	}
}
