package reloader_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/reloader/reloader/internal/dev/testcluster"
)

// TestARolloutToABrokenValueFailsAtItsProgressDeadline checks the test cluster's failure mode
// that the rollout tests rely on, with its positive control: the same Deployment rolls out
// while no variable holds the broken value.
func TestARolloutToABrokenValueFailsAtItsProgressDeadline(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	d := createDeploymentFrom(t, ns, "web", func(d *appsv1.Deployment) {
		d.Spec.Replicas = new(int32(2))
		d.Spec.ProgressDeadlineSeconds = new(int32(3))
		c := &d.Spec.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: testcluster.NotReadyWhen, Value: "broken"}, corev1.EnvVar{Name: "CONFIG", Value: "good"})
	})
	waitFor(t, 30*time.Second, "first rollout", func() (bool, error) {
		got := getDeployment(t, ns, "web")
		return got.Status.ObservedGeneration == got.Generation && got.Status.AvailableReplicas == 2 && got.Status.UpdatedReplicas == 2, nil
	})
	updateDeployment(t, ns, d.Name, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Env[2].Value = "broken" })
	waitFor(t, 30*time.Second, "ProgressDeadlineExceeded", func() (bool, error) {
		for _, c := range getDeployment(t, ns, "web").Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
				return true, nil
			}
		}
		return false, nil
	})
}
