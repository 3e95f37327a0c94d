package policy

import (
	"time"

	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func ptr[T any](v T) *T { return &v }

func deployment(gen, observed int64, replicas, updated, total, available int32, reason string) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Generation: gen},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr(replicas)},
		Status: appsv1.DeploymentStatus{ObservedGeneration: observed, UpdatedReplicas: updated, Replicas: total,
			AvailableReplicas: available},
	}
	if reason != "" {
		status := corev1.ConditionTrue
		if reason == reasonDeadline {
			status = corev1.ConditionFalse
		}
		d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: status, Reason: reason}}
	}
	return d
}

func statefulSet(gen, observed int64, replicas, partition, updated, ready int32, cur, upd string) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Generation: gen},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr(replicas)},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: observed, UpdatedReplicas: updated, ReadyReplicas: ready,
			CurrentRevision: cur, UpdateRevision: upd},
	}
	if partition > 0 {
		s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr(partition)}
	}
	return s
}

func daemonSet(gen, observed int64, desired, updated, available int32) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Generation: gen},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: observed, DesiredNumberScheduled: desired,
			UpdatedNumberScheduled: updated, NumberAvailable: available},
	}
}

func custom(kind string, gen int64, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"kind": kind, "status": status}}
	u.SetGeneration(gen)
	return u
}

func TestRolloutProgressReadsEachKindsStatus(t *testing.T) {
	onDeleteSTS := statefulSet(2, 2, 1, 0, 0, 1, "a", "b")
	onDeleteSTS.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
	cases := []struct {
		name string
		obj  any
		want Progress
	}{
		{"deployment not yet observed", deployment(3, 2, 2, 2, 2, 2, reasonNewRSAvailable), Rolling},
		{"deployment new ReplicaSet available", deployment(3, 3, 2, 2, 2, 2, reasonNewRSAvailable), Done},
		{"deployment old pods still running", deployment(3, 3, 2, 2, 3, 2, "ReplicaSetUpdated"), Rolling},
		{"deployment counts done but condition lags", deployment(3, 3, 2, 2, 2, 2, "ReplicaSetUpdated"), Rolling},
		{"deployment new pods not available", deployment(3, 3, 2, 2, 2, 1, "ReplicaSetUpdated"), Rolling},
		{"deployment past its progress deadline", deployment(3, 3, 2, 1, 3, 2, reasonDeadline), Stuck},
		{"deployment without conditions, counts done", deployment(3, 3, 2, 2, 2, 2, ""), Done},
		{"statefulset revisions differ", statefulSet(2, 2, 3, 0, 3, 3, "a", "b"), Rolling},
		{"statefulset revisions equal, all ready", statefulSet(2, 2, 3, 0, 3, 3, "b", "b"), Done},
		{"statefulset not observed", statefulSet(2, 1, 3, 0, 3, 3, "b", "b"), Rolling},
		{"statefulset partition reached", statefulSet(2, 2, 3, 2, 1, 3, "a", "b"), Done},
		{"statefulset partition not reached", statefulSet(2, 2, 3, 1, 1, 3, "a", "b"), Rolling},
		{"statefulset OnDelete", onDeleteSTS, Untracked},
		{"daemonset updated and available", daemonSet(4, 4, 3, 3, 3), Done},
		{"daemonset updating", daemonSet(4, 4, 3, 2, 3), Rolling},
		{"daemonset not observed", daemonSet(4, 3, 3, 3, 3), Rolling},
		{"argo healthy", custom("Rollout", 5, map[string]any{"observedGeneration": "5", "phase": "Healthy"}), Done},
		{"argo healthy, older generation", custom("Rollout", 5, map[string]any{"observedGeneration": "4", "phase": "Healthy"}), Rolling},
		{"argo progressing", custom("Rollout", 5, map[string]any{"observedGeneration": int64(5), "phase": "Progressing"}), Rolling},
		{"argo degraded", custom("Rollout", 5, map[string]any{"observedGeneration": "5", "phase": "Degraded", "message": "x"}), Stuck},
		{"deploymentconfig available", custom("DeploymentConfig", 7, map[string]any{"observedGeneration": int64(7),
			"conditions": []any{map[string]any{"type": "Progressing", "status": "True", "reason": reasonNewRCAvailable}}}), Done},
		{"deploymentconfig deadline", custom("DeploymentConfig", 7, map[string]any{"observedGeneration": int64(7),
			"conditions": []any{map[string]any{"type": "Progressing", "status": "False", "reason": reasonDeadline}}}), Stuck},
		{"deploymentconfig no status", custom("DeploymentConfig", 7, nil), Rolling},
		{"not a workload", &corev1.Pod{}, Untracked},
	}
	for _, c := range cases {
		if got, _ := RolloutProgress(c.obj); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
}

func TestFollowOfReadsTheAnnotationsOverTheFlags(t *testing.T) {
	def := Follow{Timeout: 15 * time.Minute}
	cases := []struct {
		name       string
		meta, tmpl map[string]string
		def        Follow
		want       Follow
		problems   int
	}{
		{"nothing set", nil, nil, def, def, 0},
		{"flag on", nil, nil, Follow{Track: true, Timeout: time.Minute}, Follow{Track: true, Timeout: time.Minute}, 0},
		{"rollback implies tracking", map[string]string{RollbackAnnotation: "true"}, nil, def, Follow{Track: true, Rollback: true, Timeout: 15 * time.Minute}, 0},
		{"annotation opts out of the flag", map[string]string{RollbackAnnotation: "false", TrackAnnotation: "false"}, nil,
			Follow{Track: true, Rollback: true, Timeout: time.Minute}, Follow{Timeout: time.Minute}, 0},
		{"pod template annotation", nil, map[string]string{TrackAnnotation: "true", TimeoutAnnotation: "90s"}, def, Follow{Track: true, Timeout: 90 * time.Second}, 0},
		{"metadata wins over template", map[string]string{TimeoutAnnotation: "2m"}, map[string]string{TimeoutAnnotation: "90s"}, def, Follow{Timeout: 2 * time.Minute}, 0},
		{"malformed values keep the defaults", map[string]string{TrackAnnotation: "yes please", TimeoutAnnotation: "-1s"}, nil, def, def, 2},
		{"a bare number is no duration", map[string]string{TimeoutAnnotation: "600"}, nil, def, def, 1},
	}
	for _, c := range cases {
		got, problems := FollowOf(c.meta, c.tmpl, c.def)
		if got != c.want || len(problems) != c.problems {
			t.Errorf("%s: got %+v %q, want %+v with %d problems", c.name, got, problems, c.want, c.problems)
		}
	}
}

// A deadline written sooner after the reload than its progressDeadlineSeconds is a previous
// rollout's (times in whole seconds, as the history entry's): the Deployment controller keeps
// it until the new rollout progresses, and one that lags writes it after the reload.
func TestADeadlineSoonerThanTheReloadsOwnIsAPreviousRollouts(t *testing.T) {
	reload := time.Date(2026, 11, 27, 20, 0, 10, 0, time.UTC)
	at := func(sec int, reason string, pds *int32) *appsv1.Deployment {
		d := deployment(3, 3, 1, 0, 1, 1, reason)
		d.Spec.ProgressDeadlineSeconds = pds
		if len(d.Status.Conditions) > 0 {
			d.Status.Conditions[0].LastUpdateTime = metav1.NewTime(reload.Add(time.Duration(sec) * time.Second))
		}
		return d
	}
	three := ptr(int32(3))
	cases := []struct {
		name string
		obj  any
		want bool
	}{
		{"deadline a minute before", at(-60, reasonDeadline, three), true},
		{"deadline in the reload's second", at(0, reasonDeadline, three), true},
		{"deadline two seconds after, of three (CI 2026-12-03)", at(2, reasonDeadline, three), true},
		{"deadline three seconds after, of three", at(3, reasonDeadline, three), false},
		{"deadline a second after, no deadline in the spec", at(1, reasonDeadline, nil), false},
		{"deadline in the reload's second, no deadline in the spec", at(0, reasonDeadline, nil), true},
		{"no deadline", at(-60, reasonNewRSAvailable, three), false},
		{"no condition", deployment(3, 3, 1, 0, 1, 1, ""), false},
		{"not a Deployment", &corev1.Pod{}, false},
	}
	for _, c := range cases {
		if got := DeadlineBefore(c.obj, reload); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func TestATemplateIsPendingOnlyWhereTheObservedStatusShowsPodsNotUpdated(t *testing.T) {
	cases := []struct {
		name string
		obj  any
		want bool
	}{
		{"every replica updated", deployment(4, 4, 2, 2, 2, 2, ""), false},
		{"changed while paused: no updated replica", deployment(5, 5, 2, 0, 2, 2, ""), true},
		{"paused mid-rollout: one of two updated", deployment(5, 5, 2, 1, 2, 2, ""), true},
		{"an old pod left beside every updated one", deployment(5, 5, 2, 2, 3, 2, ""), true},
		{"no replicas", deployment(5, 5, 0, 0, 0, 0, ""), false},
		{"spec not observed yet", deployment(6, 5, 2, 0, 2, 2, ""), false},
		{"not a Deployment", statefulSet(2, 2, 1, 0, 0, 1, "a", "b"), false},
	}
	for _, c := range cases {
		if got := TemplatePending(c.obj); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
