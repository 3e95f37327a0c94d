package testcluster

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestANudgeIsDueOnlyPastAProgressDeadlineTheControllerHasNotMarked(t *testing.T) {
	updated := time.Date(2026, 12, 3, 19, 0, 0, 0, time.UTC)
	deployment := func(pds *int32, paused bool, reason string) *appsv1.Deployment {
		d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{ProgressDeadlineSeconds: pds, Paused: paused}}
		if reason != "" {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Reason: reason, LastUpdateTime: metav1.NewTime(updated)}}
		}
		return d
	}
	three := new(int32(3))
	past := updated.Add(3*time.Second + nudgeAfter + time.Millisecond)
	for _, tt := range []struct {
		name string
		d    *appsv1.Deployment
		now  time.Time
		want bool
	}{
		{"progressing past its deadline", deployment(three, false, "ReplicaSetUpdated"), past, true},
		{"within nudgeAfter of its deadline", deployment(three, false, "ReplicaSetUpdated"), updated.Add(4 * time.Second), false},
		{"marked timed out", deployment(three, false, "ProgressDeadlineExceeded"), past, false},
		{"complete", deployment(three, false, "NewReplicaSetAvailable"), past, false},
		{"paused", deployment(three, true, "DeploymentPaused"), past, false},
		{"no deadline", deployment(nil, false, "ReplicaSetUpdated"), past, false},
		{"no Progressing condition", deployment(three, false, ""), past, false},
	} {
		if got := deadlinePassed(tt.d, tt.now); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}
