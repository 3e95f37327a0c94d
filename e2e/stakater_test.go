package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/reloader/reloader/internal/testcluster"
)

// saKubeconfig writes a kubeconfig file that authenticates as cfg does (a ServiceAccount token).
func saKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "sa"}
	kc.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// launchContainer runs the binary with a container's args and environment, expanding $(VAR)
// as the kubelet does; --port is replaced by a free port. It does not wait for readiness.
func launchContainer(t *testing.T, c corev1.Container, env map[string]string, kubeconfig string) *proc {
	t.Helper()
	p := &proc{name: "reloader", port: freePort(t), stderr: &testcluster.LogBuffer{}, exited: make(chan error, 1)}
	args := []string{"--kubeconfig", kubeconfig}
	for _, a := range c.Args {
		for k, v := range env {
			a = strings.ReplaceAll(a, "$("+k+")", v)
		}
		if strings.HasPrefix(a, "--port=") {
			a = fmt.Sprintf("--port=%d", p.port)
		}
		args = append(args, a)
	}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = os.Environ()
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stderr, p.cmd.Stdout = p.stderr, p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("reloader %v output:\n%s", args, p.stderr.String())
		}
	})
	return p
}

// Seed 002: Collaborne's manifest and Role, verbatim. The Role grants no Events, Leases,
// ConfigMap create or Secret create. Reloads work; each missing permission is said once at
// start; no reload logs an ERROR.
func TestCollaborneManifestAndRoleVerbatim(t *testing.T) {
	ctx := context.Background()
	ns := setup(t) // ConfigMap app-config and Deployment web, reloading on it by name
	manifest, err := os.ReadFile("../testdata/seeds/collaborne-manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := cluster.Apply(ctx, ns, []byte(strings.ReplaceAll(string(manifest), "namespace: NAMESPACE", "namespace: "+ns)))
	if err != nil {
		t.Fatal(err)
	}
	var container corev1.Container
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
				t.Fatal(err)
			}
			container = d.Spec.Template.Spec.Containers[0]
		}
	}
	if len(container.Args) == 0 {
		t.Fatal("no reloader Deployment in the manifest")
	}
	cfg, err := cluster.ServiceAccountConfig(ctx, ns, "reloader")
	if err != nil {
		t.Fatal(err)
	}
	sa := kubernetes.NewForConfigOrDie(cfg)
	waitFor(t, 20*time.Second, "the Role to take effect", func() (bool, error) {
		_, err := sa.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	// Controls: the Role really refuses what the reloader would otherwise use.
	if _, err := sa.CoreV1().Events(ns).Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, InvolvedObject: corev1.ObjectReference{Namespace: ns}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("creating an Event as the ServiceAccount: %v, want forbidden", err)
	}

	p := launchContainer(t, container, map[string]string{"KUBERNETES_NAMESPACE": ns}, saKubeconfig(t, cfg))
	p.waitReady(t)
	waitFor(t, 10*time.Second, "first hashes recorded", func() (bool, error) { return stateRecorded(t, ns), nil })
	before := deployment(t, ns).Generation
	for i := 1; i <= 3; i++ {
		hash := update(t, ns, fmt.Sprint(i))
		waitReloaded(t, ns, hash)
	}
	if got := deployment(t, ns).Generation - before; got != 3 {
		t.Fatalf("%d template changes for 3 changes, want 3", got)
	}
	// A Secret named in the reload annotation that does not exist is said to not exist.
	d := deployment(t, ns)
	d.Annotations["secret.reloader.stakater.com/reload"] = "no-such-secret"
	if _, err := cluster.Client().AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the missing Secret reported", func() (bool, error) {
		return strings.Contains(p.stderr.String(), `Secret \"no-such-secret\" named in a reload annotation does not exist`), nil
	})
	hash := update(t, ns, "4")
	waitReloaded(t, ns, hash)
	time.Sleep(time.Second) // the refused Event of the last reload would be logged by now

	log := p.stderr.String()
	for line := range strings.Lines(log) {
		if strings.Contains(line, "level=ERROR") {
			t.Errorf("an ERROR line: %s", line)
		}
		if strings.Contains(line, "malformed") && strings.Contains(line, "no-such-secret") {
			t.Errorf("a missing Secret reported as malformed: %s", line)
		}
	}
	for _, want := range []string{`permission="\"create\" on events`, `permission="\"create\" on configmaps`, "may not create its hash key Secret"} {
		if n := strings.Count(log, want); n != 1 {
			t.Errorf("%q said %d times, want once", want, n)
		}
	}
	if testing.Verbose() {
		t.Log(log)
	}
	if n := strings.Count(log, "reloaded workload"); n != 4 {
		t.Errorf("%d reloads logged, want 4", n)
	}
}
