package policy

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RollbackStarts counts, from the status before a rollback of the reload at generation 4, the
// pods it starts on the restored template: those the failed rollout took down, or replaced.
func TestRollbackStartsCountsThePodsTheFailedRolloutTookDown(t *testing.T) {
	deployment := func(want *int32, observed int64, total, updated int32) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 4}, Spec: appsv1.DeploymentSpec{Replicas: want},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: total, UpdatedReplicas: updated}}
	}
	two := int32(2)
	argo := func(observed int64, total, updated int64) any {
		u := custom("Rollout", 4, map[string]any{"observedGeneration": observed, "replicas": total, "updatedReplicas": updated})
		u.Object["spec"] = map[string]any{"replicas": int64(3)}
		return u
	}
	for _, c := range []struct {
		name string
		obj  any
		want int32
	}{
		{"a Deployment that took one old pod down", deployment(&two, 4, 2, 1), 1},
		{"a Deployment that took both down", deployment(&two, 4, 2, 2), 2},
		{"a Deployment that surged and took none down", deployment(&two, 4, 3, 1), 0},
		{"a Deployment whose surge pod was not created", deployment(&two, 4, 2, 0), 0},
		{"a Deployment of one replica by default, taken down", deployment(nil, 4, 1, 1), 1},
		{"a Deployment whose controller never observed the reload", deployment(&two, 3, 2, 0), 0},
		{"a Deployment whose controller observed a later generation", deployment(&two, 5, 2, 1), 1},
		{"a StatefulSet with one pod updated",
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 4}, Status: appsv1.StatefulSetStatus{ObservedGeneration: 4, UpdatedReplicas: 1}}, 1},
		{"a StatefulSet whose controller never observed the reload",
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 4}, Status: appsv1.StatefulSetStatus{ObservedGeneration: 3, UpdatedReplicas: 1}}, 0},
		{"a DaemonSet with two pods updated",
			&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: 4}, Status: appsv1.DaemonSetStatus{ObservedGeneration: 4, UpdatedNumberScheduled: 2}}, 2},
		{"an Argo canary whose stable pods all run", argo(4, 4, 1), 0},
		{"an Argo rollout that took a stable pod down", argo(4, 3, 1), 1},
		{"an Argo rollout whose controller never observed the reload", argo(3, 3, 3), 0},
		{"a kind it does not know", nil, 0},
	} {
		if got := RollbackStarts(c.obj, 4); got != c.want {
			t.Errorf("%s: RollbackStarts = %d, want %d", c.name, got, c.want)
		}
	}
}

// NamesRollbackOf finds a rolled-back reload of exactly that config and content in a history.
func TestNamesRollbackOfFindsOnlyARolledBackReloadOfThatContent(t *testing.T) {
	history := "2026-11-23T16:10:12Z failed+rolled-back g7 ConfigMap/app@cdc94a23,Secret/db@9e8f7a6b\n" +
		"2026-11-23T15:02:40Z succeeded g5 ConfigMap/app@1a2b3c4d"
	for _, c := range []struct {
		history, config string
		want            bool
	}{
		{history, "ConfigMap/app@cdc94a23", true},
		{history, "Secret/db@9e8f7a6b", true},
		{history, "ConfigMap/app@1a2b3c4d", false}, // succeeded, not rolled back
		{history, "ConfigMap/other@cdc94a23", false},
		{"2026-11-23T16:10:12Z timed-out g7 ConfigMap/app@cdc94a23", "ConfigMap/app@cdc94a23", false},
		{"", "ConfigMap/app@cdc94a23", false},
	} {
		if got := NamesRollbackOf(c.history, c.config); got != c.want {
			t.Errorf("NamesRollbackOf(%q, %q) = %v, want %v", c.history, c.config, got, c.want)
		}
	}
}
