package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Progress is how far a workload's rollout has got, read from its status alone.
type Progress int

const (
	// Rolling: the controller has not yet observed the latest spec, or pods are still being
	// replaced.
	Rolling Progress = iota
	// Done: every pod the rollout should replace runs the latest template and is available.
	Done
	// Stuck: the workload's own controller declared the rollout failed (a progress deadline).
	Stuck
	// Untracked: the kind cannot say (an OnDelete update strategy restarts nothing).
	Untracked
)

// Conditions and reasons the workload controllers set.
const (
	progressing            = "Progressing"
	reasonDeadline         = "ProgressDeadlineExceeded"
	reasonNewRSAvailable   = "NewReplicaSetAvailable"
	reasonNewRCAvailable   = "NewReplicationControllerAvailable"
	reasonRolloutCancelled = "RolloutCancelled"
	argoPhaseHealthy       = "Healthy"
	argoPhaseDegraded      = "Degraded"
	argoPhasePaused        = "Paused"
	notObserved            = -1
)

// RolloutProgress reads the rollout of a Deployment, StatefulSet, DaemonSet, Argo Rollout or
// DeploymentConfig (unstructured) from its status, with a reason for a failure.
func RolloutProgress(obj any) (Progress, string) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return deploymentProgress(o)
	case *appsv1.StatefulSet:
		return statefulSetProgress(o)
	case *appsv1.DaemonSet:
		return daemonSetProgress(o)
	case *unstructured.Unstructured:
		if o.GetKind() == "Rollout" {
			return argoProgress(o)
		}
		return deploymentConfigProgress(o)
	}
	return Untracked, ""
}

// DeadlineBefore reports whether the progress deadline a Deployment's status declares is too
// early to judge a rollout whose template was patched at t. The Deployment controller restarts
// the clock of a new ReplicaSet when it creates it, so this rollout's deadline cannot come
// before t plus progressDeadlineSeconds (less a second: both times are kept in whole seconds).
// An earlier one is a previous rollout's: the controller keeps it until the new one progresses,
// and a controller that lags may write it only after t.
func DeadlineBefore(obj any, t time.Time) bool {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return false
	}
	earliest := t
	if pds := d.Spec.ProgressDeadlineSeconds; pds != nil && *pds > 1 {
		earliest = t.Add(time.Duration(*pds-1) * time.Second)
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == reasonDeadline {
			return !c.LastUpdateTime.After(earliest)
		}
	}
	return false
}

// TemplatePending reports whether a Deployment's status says that some pod does not run its
// current template: its controller observed the spec, and not every replica is an updated one.
// A template changed while the rollouts are paused is: no ReplicaSet of it exists, so none is
// updated. False for other kinds, and while the controller has not observed the spec.
func TemplatePending(obj any) bool {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return false
	}
	s := d.Status
	return s.ObservedGeneration >= d.Generation && (s.UpdatedReplicas < replicas(d.Spec.Replicas) || s.Replicas > s.UpdatedReplicas)
}

// OwnerPaused reports a rollout that cannot progress because its owner paused it, and how: a
// Deployment whose spec.paused was set by someone else (ours, the pause period's, carries the
// pausedAt annotation), or an Argo Rollout paused by a person (spec.paused) or waiting at a
// pause (status.pauseConditions: a canary pause step, a blue-green promotion, an inconclusive
// analysis or experiment, each until its duration passes or someone promotes it). Argo's status
// counts only once its controller observed the spec, and not while it is unpausing
// (status.controllerPause with no pause condition left): a rollout whose controller lags or is
// gone is not paused, and its timeout runs.
func OwnerPaused(obj any, pausedAt string) (bool, string) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		if o.Spec.Paused && (pausedAt == "" || o.Annotations[pausedAt] == "") {
			return true, "spec.paused is set (kubectl rollout pause)"
		}
	case *unstructured.Unstructured:
		if o.GetKind() == "Rollout" {
			return argoPaused(o)
		}
	}
	return false, ""
}

// argoPaused is OwnerPaused of an Argo Rollout.
func argoPaused(u *unstructured.Unstructured) (bool, string) {
	if paused, _, _ := unstructured.NestedBool(u.Object, "spec", "paused"); paused {
		return true, "spec.paused is set (kubectl argo rollouts pause)"
	}
	if observedGeneration(u) < u.GetGeneration() {
		return false, ""
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "pauseConditions")
	var reasons []string
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok {
			r, _ := m["reason"].(string)
			reasons = append(reasons, r)
		}
	}
	if len(reasons) > 0 {
		return true, "paused at " + strings.Join(reasons, ", ")
	}
	unpausing, _, _ := unstructured.NestedBool(u.Object, "status", "controllerPause")
	if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase == argoPhasePaused && !unpausing {
		return true, "phase Paused"
	}
	return false, ""
}

// deploymentProgress follows the Progressing condition, as kubectl rollout status does with the
// replica counts: a deadline exceeded is a failure; the new ReplicaSet available is success.
func deploymentProgress(d *appsv1.Deployment) (Progress, string) {
	s := d.Status
	if s.ObservedGeneration < d.Generation {
		return Rolling, ""
	}
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == reasonDeadline {
			return Stuck, "progress deadline exceeded"
		}
	}
	want := replicas(d.Spec.Replicas)
	if s.UpdatedReplicas < want || s.Replicas > s.UpdatedReplicas || s.AvailableReplicas < s.UpdatedReplicas {
		return Rolling, ""
	}
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentProgressing && (c.Status != corev1.ConditionTrue || c.Reason != reasonNewRSAvailable) {
			return Rolling, ""
		}
	}
	return Done, ""
}

// statefulSetProgress: the update revision has replaced the current one, or, with a partition,
// every ordinal at or above it runs the update revision; and those pods are ready.
func statefulSetProgress(s *appsv1.StatefulSet) (Progress, string) {
	if s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return Untracked, ""
	}
	st := s.Status
	if st.ObservedGeneration < s.Generation {
		return Rolling, ""
	}
	want := replicas(s.Spec.Replicas)
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && *ru.Partition > 0 {
		if st.UpdatedReplicas < want-min(*ru.Partition, want) || st.ReadyReplicas < want {
			return Rolling, ""
		}
		return Done, ""
	}
	if st.UpdateRevision != st.CurrentRevision || st.UpdatedReplicas < want || st.ReadyReplicas < want {
		return Rolling, ""
	}
	return Done, ""
}

// daemonSetProgress: every scheduled pod is updated and available.
func daemonSetProgress(d *appsv1.DaemonSet) (Progress, string) {
	if d.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		return Untracked, ""
	}
	s := d.Status
	if s.ObservedGeneration < d.Generation || s.UpdatedNumberScheduled < s.DesiredNumberScheduled ||
		s.NumberAvailable < s.DesiredNumberScheduled {
		return Rolling, ""
	}
	return Done, ""
}

// argoProgress reads an Argo Rollout's phase, once its controller has observed the spec (it
// writes observedGeneration as a string or a number, depending on its version).
func argoProgress(u *unstructured.Unstructured) (Progress, string) {
	if observedGeneration(u) < u.GetGeneration() {
		return Rolling, ""
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	switch phase {
	case argoPhaseHealthy:
		return Done, ""
	case argoPhaseDegraded:
		msg, _, _ := unstructured.NestedString(u.Object, "status", "message")
		return Stuck, "rollout degraded: " + msg
	}
	return Rolling, ""
}

// deploymentConfigProgress reads a DeploymentConfig's Progressing condition, which its
// controller sets from the phase of the latest deployment (replication controller).
func deploymentConfigProgress(u *unstructured.Unstructured) (Progress, string) {
	if observedGeneration(u) < u.GetGeneration() {
		return Rolling, ""
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != progressing {
			continue
		}
		switch m["reason"] {
		case reasonNewRCAvailable:
			return Done, ""
		case reasonDeadline:
			return Stuck, "progress deadline exceeded"
		case reasonRolloutCancelled:
			return Stuck, "rollout cancelled"
		}
	}
	return Rolling, ""
}

// RollbackStarts is how many pods a rollback of the reload at generation gen starts on the
// restored template, read from the workload's status just before it: each reads the configs as
// they are then, the content rolled back for. A Deployment, Argo Rollout or DeploymentConfig
// brings the old pods back up to its replicas, so the pods its rollout took down start again;
// a StatefulSet or a DaemonSet replaces each pod it had updated. A controller that never
// observed gen took nothing down. The status cannot tell an old pod restarted for another
// reason (an eviction) meanwhile: it counts as one that never stopped.
func RollbackStarts(obj any, gen int64) int32 {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		s := o.Status
		if s.ObservedGeneration < gen {
			return 0
		}
		return max(0, replicas(o.Spec.Replicas)-(s.Replicas-s.UpdatedReplicas))
	case *appsv1.StatefulSet:
		if o.Status.ObservedGeneration < gen {
			return 0
		}
		return o.Status.UpdatedReplicas
	case *appsv1.DaemonSet:
		if o.Status.ObservedGeneration < gen {
			return 0
		}
		return o.Status.UpdatedNumberScheduled
	case *unstructured.Unstructured:
		if observedGeneration(o) < gen {
			return 0
		}
		want, found, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
		if !found {
			want = 1
		}
		total, _, _ := unstructured.NestedInt64(o.Object, "status", "replicas")
		updated, _, _ := unstructured.NestedInt64(o.Object, "status", "updatedReplicas")
		return int32(max(0, want-(total-updated)))
	}
	return 0
}

// observedGeneration reads status.observedGeneration as a number or a decimal string; absent or
// unreadable is notObserved, below any generation.
func observedGeneration(u *unstructured.Unstructured) int64 {
	v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "observedGeneration")
	if !found {
		return notObserved
	}
	switch g := v.(type) {
	case int64:
		return g
	case float64:
		return int64(g)
	case string:
		var n int64
		if _, err := fmt.Sscan(g, &n); err == nil {
			return n
		}
	}
	return notObserved
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// TrackAnnotation "true" follows a workload's reloads to the end of their rollouts ("false" opts
// out of --track-rollouts).
const TrackAnnotation = "reloader/track-rollout"

// Follow says whether a workload's reloads are followed, undone when they fail, and for how long
// a rollout may run.
type Follow struct {
	Track, Rollback bool
	Timeout         time.Duration
}

// FollowOf reads the safe-reload annotations, from the workload's metadata and then its pod
// template's, over the defaults the flags give. Rollback implies tracking. A malformed value
// keeps the default and is returned as a problem.
func FollowOf(meta, tmpl map[string]string, def Follow) (Follow, []string) {
	f, problems := def, []string(nil)
	get := func(k string) (string, bool) {
		if v, ok := meta[k]; ok {
			return v, true
		}
		v, ok := tmpl[k]
		return v, ok
	}
	for k, into := range map[string]*bool{TrackAnnotation: &f.Track, RollbackAnnotation: &f.Rollback} {
		if v, ok := get(k); ok {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %q is not true or false", k, v))
				continue
			}
			*into = b
		}
	}
	if v, ok := get(TimeoutAnnotation); ok {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			problems = append(problems, fmt.Sprintf("%s: %q is not a positive duration such as 10m", TimeoutAnnotation, v))
		} else {
			f.Timeout = d
		}
	}
	f.Track = f.Track || f.Rollback
	slices.Sort(problems)
	return f, problems
}
