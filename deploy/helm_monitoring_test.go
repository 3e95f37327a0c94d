package deploy_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// removeMonitoringCRDs deletes prometheus-operator's CRDs registered by registerMonitoringCRDs
// and waits until discovery no longer serves their API; tests that need them register them.
func removeMonitoringCRDs(t *testing.T) {
	t.Helper()
	crds := dynamic.NewForConfigOrDie(cluster.Config).Resource(
		schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	for _, name := range []string{"servicemonitors", "podmonitors", "prometheusrules"} {
		err := crds.Delete(context.Background(), name+".monitoring.coreos.com", metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	poll(t, "the monitoring API to go", func(ctx context.Context) (bool, error) {
		_, err := cluster.Client().Discovery().ServerResourcesForGroupVersion("monitoring.coreos.com/v1")
		return apierrors.IsNotFound(err), nil
	})
}

// TestHelmUpgradeWithServiceMonitorOnAClusterWithoutMonitoringCRDsSkipsItAndSaysSo: a stakater
// user's serviceMonitor.enabled, on a cluster without prometheus-operator, switches anyway and
// NOTES says the ServiceMonitor was skipped. The control: once the CRDs exist, the same upgrade
// makes it, with stakater's default honorLabels.
func TestHelmUpgradeWithServiceMonitorOnAClusterWithoutMonitoringCRDsSkipsItAndSaysSo(t *testing.T) {
	removeMonitoringCRDs(t)
	r := installStakater(t, "st", "st-reloader")
	upgrade := []string{"upgrade", r.name, chartDir, "--set", "reloader.serviceMonitor.enabled=true"}
	_, notes := r.step(t, r.deployment(t), "", upgrade...)
	if !strings.Contains(notes, "ServiceMonitor skipped") {
		t.Errorf("NOTES does not say the ServiceMonitor was skipped:\n%s", notes)
	}

	registerMonitoringCRDs(t)
	_, notes = r.step(t, r.deployment(t), "", upgrade...)
	if strings.Contains(notes, "skipped") {
		t.Errorf("NOTES says skipped with the CRDs in place:\n%s", notes)
	}
	sm, err := dynamic.NewForConfigOrDie(cluster.Config).Resource(
		schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}).
		Namespace(r.ns).Get(context.Background(), r.fullname, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the ServiceMonitor with the CRDs in place: %v", err)
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["honorLabels"] != true {
		t.Errorf("endpoints %v: want stakater's default honorLabels: true", endpoints)
	}
}
