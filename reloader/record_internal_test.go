package reloader

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reloader/reloader/policy"
)

func TestTheCacheKeepsWhatRolloutTrackingReadsOfACustomWorkloadsStatus(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"kind": "Rollout",
		"status": map[string]any{
			"observedGeneration": "4", "phase": "Degraded", "message": "ProgressDeadlineExceeded",
			"canary": map[string]any{"weights": "large"}, "HPAReplicas": int64(3),
			"conditions": []any{map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
				"message": "a long message", "lastUpdateTime": "2026-11-23T16:00:00Z"}},
		},
	}}
	u.SetGeneration(4)
	before, why := policy.RolloutProgress(u.DeepCopy())
	keepRolloutStatus(u)
	want := map[string]any{"observedGeneration": "4", "phase": "Degraded", "message": "ProgressDeadlineExceeded",
		"conditions": []any{map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}}}
	if !reflect.DeepEqual(u.Object["status"], want) {
		t.Errorf("kept status %v, want %v", u.Object["status"], want)
	}
	if after, whyAfter := policy.RolloutProgress(u); after != before || whyAfter != why {
		t.Errorf("progress read from the kept status %v %q, from the whole %v %q", after, whyAfter, before, why)
	}
}
