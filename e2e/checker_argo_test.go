package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/reloader/reloader/e2e/checker"
	"github.com/reloader/reloader/internal/dev/testcluster"
	"github.com/reloader/reloader/policy"
)

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
		_, err := dyn.Resource(checker.RolloutGVR).Namespace("default").List(ctx, metav1.ListOptions{})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Rollouts not served 30 s after their CRD: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// actAsArgo writes Rollout name's status as Argo's controller would, until it is gone: Healthy
// for its first generation and for a rollback; for any other new generation, a pause step for
// pauseFor (if set), then Healthy. Each pause step is recorded as its owner's pause.
func (w *world) actAsArgo(name string, uid types.UID, pauseFor time.Duration) {
	res := w.workloads(checker.KindRollout)
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
	if w.rec.Workloads.ArgoPaused(uid, paused, at) {
		w.faults["Argo pause step"]++
	}
}
