package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/reloader/reloader/confighash"
)

// fleet is n Deployments, Deployment i reading ConfigMap c-(i % configs) whole, with auto.
func fleet(t *testing.T, ns string, n, configs int) {
	t.Helper()
	ctx := context.Background()
	for i := range configs {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c-%d", i)}, Data: map[string]string{"v": "0"}}
		if _, err := cluster.Client().CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		name := fmt.Sprintf("d-%d", i)
		zero := int32(0)
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"reloader.stakater.com/auto": "true"}},
			Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "fake", EnvFrom: []corev1.EnvFromSource{{
						ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("c-%d", i%configs)}}}}}}}}},
		}
		if _, err := cluster.Client().AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// setConfig writes value to ConfigMap name, retrying while the API server is away, and returns
// the content hash written.
func setConfig(t *testing.T, ns, name, value string) string {
	t.Helper()
	var hash string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cms := cluster.Client().CoreV1().ConfigMaps(ns)
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		cm.Data = map[string]string{"v": value}
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return false, nil
		}
		hash = confighash.ConfigMap(cm)
		return true, nil
	})
	if err != nil {
		t.Fatalf("update %s: %v", name, err)
	}
	return hash
}

// marker returns the reloader's variable for ConfigMap config in Deployment name, and its
// generation.
func marker(t *testing.T, ns, name, config string) (string, int64) {
	t.Helper()
	d, err := cluster.Client().AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return "", 0
	}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "_RELOADER_-configmap-"+config {
			return e.Value, d.Generation
		}
	}
	return "", d.Generation
}

func TestAPIServerRestartDuringABurstReloadsEveryWorkloadOnce(t *testing.T) {
	const n, configs = 8, 4
	ns := cluster.NewNamespace(t)
	fleet(t, ns, n, configs)
	start(t, ns, "--coalesce-period", "1s")
	waitFor(t, 10*time.Second, "first hashes recorded", func() (bool, error) {
		cm, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "reloader-state", metav1.GetOptions{})
		return err == nil && len(cm.Data) >= configs, nil
	})

	want := map[string]string{}
	for i := range configs {
		name := fmt.Sprintf("c-%d", i)
		want[name] = setConfig(t, ns, name, "1")
	}
	// The burst's windows are open (1 s) when the API server goes away.
	if err := cluster.RestartAPIServer(context.Background(), 2*time.Second, true); err != nil {
		t.Fatal(err)
	}
	for i := range configs {
		name := fmt.Sprintf("c-%d", i)
		want[name] = setConfig(t, ns, name, "2")
	}

	for i := range n {
		name, config := fmt.Sprintf("d-%d", i), fmt.Sprintf("c-%d", i%configs)
		waitFor(t, 30*time.Second, name+" reloaded for the last content", func() (bool, error) {
			v, _ := marker(t, ns, name, config)
			return v == want[config], nil
		})
	}
	time.Sleep(3 * time.Second) // a second patch would come within the window and a retry
	for i := range n {
		name, config := fmt.Sprintf("d-%d", i), fmt.Sprintf("c-%d", i%configs)
		// Generation 1 at creation; each config change may add one (two changes), never more.
		if v, gen := marker(t, ns, name, config); v != want[config] || gen-1 > 2 {
			t.Errorf("%s: marker %q (want %q), %d template changes for 2 config changes", name, v, want[config], gen-1)
		}
	}
}

// An API server that is down refuses connections (closed hard); one cut off by the network
// drops them. The reloader must report both within seconds, and catch up within 10 s of the end.
func TestAPIUnreachableForAMinuteIsReportedAndCaughtUpWithin10s(t *testing.T) {
	t.Parallel()
	for _, refused := range []bool{true, false} {
		t.Run(map[bool]string{true: "refused", false: "dropped"}[refused], func(t *testing.T) {
			t.Parallel()
			ns := setup(t)
			g := newGate(t, strings.TrimPrefix(cluster.Config.Host, "https://"))
			g.open.Store(true)
			p := launch(t, ns, kubeconfigThrough(t, g), "--coalesce-period", "0")
			p.waitReady(t)
			waitFor(t, 10*time.Second, "first hashes recorded", func() (bool, error) { return stateRecorded(t, ns), nil })

			cut := time.Now()
			if refused {
				g.closeHard()
			} else {
				g.close()
			}
			waitFor(t, 10*time.Second, "/readyz to report the outage", func() (bool, error) {
				return status(t, p.url("/readyz")) == http.StatusServiceUnavailable, nil
			})
			t.Logf("/readyz reported the outage after %s", time.Since(cut).Round(time.Millisecond))
			hash := update(t, ns, "1") // due during the outage
			time.Sleep(time.Until(cut.Add(60 * time.Second)))
			if code := status(t, p.url("/readyz")); code != http.StatusServiceUnavailable {
				t.Fatalf("/readyz answered %d after 60 s without the API server", code)
			}
			if code := status(t, p.url("/healthz")); code != http.StatusOK {
				t.Fatalf("/healthz answered %d during the outage; the process is alive", code)
			}
			if envVar(deployment(t, ns)) == hash {
				t.Fatal("reloaded during the outage, through a closed gate: the test proves nothing")
			}

			g.reopen(t)
			back := time.Now()
			waitFor(t, 10*time.Second, "the reload due during the outage", func() (bool, error) { return envVar(deployment(t, ns)) == hash, nil })
			t.Logf("reloaded %s after the API server came back", time.Since(back).Round(time.Millisecond))
			p.waitReady(t)
			if !strings.Contains(p.stderr.String(), "API server reachable again") {
				t.Error("the recovery was not logged")
			}
		})
	}
}
