package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/internal/dev/testcluster"
	"github.com/reloader/reloader/policy"
)

// podCluster starts a control plane of its own with the controller manager and kwok, where
// Deployments really roll out (the package's shared cluster has no pods).
func podCluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	c, err := testcluster.Start(context.Background(), testcluster.Options{Pods: true, Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	return c
}

// TestKillNineBetweenAFailedRolloutAndItsRollbackRollsBackOnceAndHoldsTheContent: the reloader is
// killed with SIGKILL right after it reloads a Deployment onto content whose pods never become
// Ready; the rollout fails while no reloader runs. The next reloader rolls it back, the previous
// ReplicaSet returns to full availability, and the broken content does not reload the Deployment
// again, across a second kill -9 and start. A fixed content then reloads it (positive control).
func TestKillNineBetweenAFailedRolloutAndItsRollbackRollsBackOnceAndHoldsTheContent(t *testing.T) {
	t.Parallel()
	pc := podCluster(t)
	ns := pc.NewNamespace(t)
	ctx := context.Background()
	cms, deps := pc.Client().CoreV1().ConfigMaps(ns), pc.Client().AppsV1().Deployments(ns)
	broken := map[string]string{"v": "broken"}
	brokenHash := confighash.ConfigMap(&corev1.ConfigMap{Data: broken})
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"}, Data: map[string]string{"v": "0"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	replicas, deadline := int32(2), int32(3)
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"configmap.reloader.stakater.com/reload": "app-config"}},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, ProgressDeadlineSeconds: &deadline,
			// One old pod goes before a new one is available, so the rollback scales it back.
			Strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: &one, MaxSurge: &zero}},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "fake",
					Env: []corev1.EnvVar{{Name: testcluster.NotReadyWhen, Value: brokenHash}}}}}}},
	}
	if _, err := deps.Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	get := func() *appsv1.Deployment {
		d, err := deps.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	progress := func() policy.Progress { p, _ := policy.RolloutProgress(get()); return p }
	waitFor(t, 30*time.Second, "first rollout", func() (bool, error) { return progress() == policy.Done, nil })
	marker := func() string {
		for _, e := range get().Spec.Template.Spec.Containers[0].Env {
			if e.Name == "_RELOADER_-configmap-app-config" {
				return e.Value
			}
		}
		return ""
	}
	args := []string{"--coalesce-period", "0", "--rollback"}

	first := launch(t, ns, pc.Kubeconfig, args...)
	first.waitReady(t)
	cm, _ := cms.Get(ctx, "app-config", metav1.GetOptions{})
	cm.Data = broken
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the reload onto the broken content", func() (bool, error) { return marker() == brokenHash, nil })
	first.kill()
	waitFor(t, 30*time.Second, "the failing rollout to take an old pod down", func() (bool, error) {
		return get().Status.AvailableReplicas < 2, nil
	})
	waitFor(t, 30*time.Second, "the rollout to fail while no reloader runs", func() (bool, error) { return progress() == policy.Stuck, nil })
	if h := get().Annotations[policy.HistoryAnnotation]; !strings.Contains(h, "progressing") {
		t.Fatalf("history before the restart: %q, want a progressing reload", h)
	}

	second := launch(t, ns, pc.Kubeconfig, args...)
	second.waitReady(t)
	waitFor(t, 20*time.Second, "the rollback", func() (bool, error) { return marker() == "", nil })
	waitFor(t, 30*time.Second, "the previous ReplicaSet fully available", func() (bool, error) {
		d := get()
		return d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == 2 && d.Status.UpdatedReplicas == 2 &&
			d.Status.Replicas == 2, nil
	})
	sets, err := pc.Client().AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(sets.Items) != 2 {
		t.Fatalf("%d ReplicaSets (%v), want the previous one scaled back and the broken one", len(sets.Items), err)
	}
	if h := get().Annotations[policy.HistoryAnnotation]; !strings.HasPrefix(strings.Fields(h)[1], "failed+rolled-back") {
		t.Errorf("history after the rollback: %q", h)
	}
	if m := second.metrics(t); !strings.Contains(m, `reloader_rollbacks_total{kind="Deployment",result="success"} 1`) {
		t.Errorf("rollback not counted:\n%s", grepLines(m, "reloader_rollback"))
	}

	// Held, across another kill -9 and start: the template stays as restored.
	generation := get().Generation
	second.kill()
	third := launch(t, ns, pc.Kubeconfig, args...)
	third.waitReady(t)
	time.Sleep(3 * time.Second) // a reload would be at once (period 0); the positive control below bounds it
	if g := get().Generation; g != generation || marker() != "" {
		t.Fatalf("the held content reloaded web again: generation %d→%d, marker %q", generation, g, marker())
	}
	cm, _ = cms.Get(ctx, "app-config", metav1.GetOptions{})
	cm.Data = map[string]string{"v": "fixed"}
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixed := confighash.ConfigMap(cm)
	waitFor(t, 20*time.Second, "the fixed content to reload web", func() (bool, error) { return marker() == fixed, nil })
	waitFor(t, 30*time.Second, "the fixed rollout to succeed", func() (bool, error) {
		return strings.Contains(get().Annotations[policy.HistoryAnnotation], "succeeded"), nil
	})
}

func grepLines(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
