package reloader_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/confighash"
)

// Configs at the API server's limits each reload their workload once, and none hangs the queue.
func TestConfigsAtTheLimitsReload(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	long := strings.Repeat("a", 253)
	many := map[string]string{}
	for i := range 10000 {
		many[fmt.Sprintf("key-%05d", i)] = "v"
	}
	configs := map[string]*corev1.ConfigMap{
		"big":    {ObjectMeta: metav1.ObjectMeta{Name: "big"}, Data: map[string]string{"blob": strings.Repeat("x", 1000*1024)}},
		"many":   {ObjectMeta: metav1.ObjectMeta{Name: "many"}, Data: many},
		long:     {ObjectMeta: metav1.ObjectMeta{Name: long}, Data: map[string]string{"v": "0"}},
		"binary": {ObjectMeta: metav1.ObjectMeta{Name: "binary"}, BinaryData: map[string][]byte{"b": {0, 1, 2}}},
	}
	ctx := context.Background()
	cms := cluster.Client().CoreV1().ConfigMaps(ns)
	for name, cm := range configs {
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %.20s…: %v", name, err)
		}
		createDeployment(t, ns, workloadFor(name), 0, named("configmap", name), nil)
	}
	r := startController(t, ns, controllerOpts{})
	r.settle()
	for name := range configs {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data = map[string]string{"changed": "yes"}
		cm.BinaryData = nil
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update %.20s…: %v", name, err)
		}
		want := confighash.ConfigMap(&corev1.ConfigMap{Data: cm.Data})
		waitFor(t, 20*time.Second, "the reload for "+name[:min(len(name), 20)], func() (bool, error) {
			got, _ := env(getDeployment(t, ns, workloadFor(name)), "app", "_RELOADER_-configmap-"+name)
			return got == want, nil
		})
	}
	for name := range configs {
		wantReloads(t, ns, workloadFor(name), 1, 1)
	}
}

// workloadFor names the Deployment that depends on config name (a Deployment name has room for
// fewer characters than a ConfigMap's).
func workloadFor(name string) string { return "dep-" + name[:min(len(name), 40)] }
