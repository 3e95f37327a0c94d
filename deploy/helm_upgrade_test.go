package deploy_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHelmUpgradeOverAStakaterReleaseKeepsItsDeployment: a release of stakater's chart is
// upgraded in place to this chart with a stakater value given, on the real API server: the same
// Deployment, now running the reloader, with no gap. The control: this chart's own layout
// cannot take such a release over, since a Deployment's selector cannot change, so the chart
// refuses it and names the flag to add.
func TestHelmUpgradeOverAStakaterReleaseKeepsItsDeployment(t *testing.T) {
	ctx := context.Background()
	kubeconfig := "--kubeconfig=" + cluster.Kubeconfig
	install := func(ns string) metav1.Object {
		t.Helper()
		// Namespaced, as the upgrade below: the two releases must not share ClusterRoles.
		if _, err := helm(t, "install", "st", "testdata/stakater-release", "-n", ns, kubeconfig, "--set", "reloader.watchGlobally=false"); err != nil {
			t.Fatal(err)
		}
		d, err := cluster.Client().AppsV1().Deployments(ns).Get(ctx, "st-reloader", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	control := cluster.NewNamespace(t)
	install(control)
	_, err := helm(t, "upgrade", "st", chartDir, "-n", control, kubeconfig, "--set", "stakaterLabels=false")
	if err == nil || !strings.Contains(err.Error(), "--set stakaterLabels=true") {
		t.Fatalf("the chart's own labels took a stakater release over, or failed otherwise: %v", err)
	}

	ns := cluster.NewNamespace(t)
	before := install(ns)
	if _, err := helm(t, "upgrade", "st", chartDir, "-n", ns, kubeconfig, "--set", "reloader.watchGlobally=false"); err != nil {
		t.Fatalf("upgrade in place: %v", err)
	}
	d, err := cluster.Client().AppsV1().Deployments(ns).Get(ctx, "st-reloader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.UID != before.GetUID() {
		t.Fatal("the upgrade replaced the Deployment: reloads stop between the delete and the new pods")
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; strings.Contains(img, "stakater") {
		t.Fatalf("the Deployment still runs %s", img)
	}
	if sel := d.Spec.Selector.MatchLabels; sel["app"] != "st-reloader" || sel["release"] != "st" {
		t.Fatalf("selector %v, want stakater's", sel)
	}
}
