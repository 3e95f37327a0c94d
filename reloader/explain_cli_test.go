package reloader_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/internal/app"
	"github.com/reloader/reloader/internal/cli"
	"github.com/reloader/reloader/reloader"
)

// runExplain runs `reloader explain args...` against the test cluster through its kubeconfig
// file, as the binary does, and returns what it printed.
func runExplain(t *testing.T, args ...string) string {
	t.Helper()
	x, _, err := cli.ParseExplain(append([]string{"--kubeconfig", cluster.Kubeconfig}, args...), "test")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := app.Explain(context.Background(), x, "test", &out); err != nil {
		t.Fatalf("reloader explain %s: %v", strings.Join(args, " "), err)
	}
	return out.String()
}

// runningReloader stands in for a reloader running in ns: the holder of its Lease, a pod whose
// container args are those given (with $(POD_NAMESPACE) from the downward API).
func runningReloader(t *testing.T, ns string, args ...string) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "reloader-7d9f5-x2x4q", Labels: map[string]string{"app.kubernetes.io/name": "reloader"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "reloader", Image: "fake", Args: args,
			Env: []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}}}},
	}
	if _, err := cluster.Client().CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	holder, now := pod.Name+"_0a1b2c3d", metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "reloader"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &now, LeaseDurationSeconds: new(int32(15))}}
	if _, err := cluster.Client().CoordinationV1().Leases(ns).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// The command, end to end: it finds the running reloader by its Lease, judges with the flags
// of that reloader's pod (a window that explain's own flags do not have), and says so.
func TestTheExplainCommandJudgesWithTheRunningReloadersFlags(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	recorded(t, ns)
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	window := closedWindow()
	runningReloader(t, ns, "--namespace=$(POD_NAMESPACE)", "--reload-window="+window)

	var rep app.Report
	if err := json.Unmarshal([]byte(runExplain(t, "--reloader-namespace", ns, "-n", ns, "deploy/web", "-o", "json")), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Reloader.Found || rep.Reloader.Holder != "reloader-7d9f5-x2x4q_0a1b2c3d" || rep.Reloader.Pod != ns+"/reloader-7d9f5-x2x4q" {
		t.Fatalf("the running reloader: %+v", rep.Reloader)
	}
	if rep.Next != "held-by-gate" || rep.Gate.Window != window || !rep.Watched {
		t.Fatalf("not judged with the pod's --reload-window: %q, %s, gate %+v", rep.Next, rep.Decision, rep.Gate)
	}
	text := runExplain(t, "--reloader-namespace", ns, "-n", ns, "Deployment/web")
	for _, want := range []string{"Deployment " + ns + "/web", "reloader-7d9f5-x2x4q_0a1b2c3d holds Lease " + ns + "/reloader",
		"namespaces " + ns + "; this namespace: yes", "when window", "ConfigMap/app-config"} {
		if !strings.Contains(text, want) {
			t.Errorf("the text does not say %q:\n%s", want, text)
		}
	}

	// Positive control: no reloader to be found (its Lease gone, its pod unlabelled); explain's
	// own flags, which have no window, judge, and say so.
	ctx := context.Background()
	if err := cluster.Client().CoordinationV1().Leases(ns).Delete(ctx, "reloader", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := cluster.Client().CoreV1().Pods(ns).Get(ctx, "reloader-7d9f5-x2x4q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Labels = nil
	if _, err := cluster.Client().CoreV1().Pods(ns).Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(runExplain(t, "--reloader-namespace", "kube-public", "--namespace", ns, "-n", ns, "deploy/web", "-o", "json")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Reloader.Found || rep.Next != "reload" || !strings.HasPrefix(rep.Reloader.Flags, "explain's own flags") {
		t.Fatalf("with explain's own flags: %+v, %q, %s", rep.Reloader, rep.Next, rep.Decision)
	}
}

// A namespace the running reloader does not watch is said so, without reading it.
func TestTheExplainCommandSaysANamespaceTheReloaderDoesNotWatch(t *testing.T) {
	t.Parallel()
	ns, other := cluster.NewNamespace(t), cluster.NewNamespace(t)
	createDeployment(t, other, "web", 0, named("configmap", "app-config"), nil)
	runningReloader(t, ns, "--namespace=$(POD_NAMESPACE)")
	var rep app.Report
	if err := json.Unmarshal([]byte(runExplain(t, "--reloader-namespace", ns, "-n", other, "deploy/web", "-o", "json")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Watched || rep.Next != reloader.NextNotWatched || !strings.Contains(rep.Decision, "not reloaded: the reloader watches namespaces "+ns+", not namespace") {
		t.Fatalf("%+v", rep)
	}
}
