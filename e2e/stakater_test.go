package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/reloader/reloader/internal/dev/testcluster"
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
	p.start(t)
	return p
}

// Seed 002: Collaborne's manifest and Role, verbatim. The Role grants no Events, Leases,
// ConfigMap create or Secret create. Reloads work; each missing permission is said once at
// start; no reload logs an ERROR.
func TestCollaborneManifestAndRoleVerbatim(t *testing.T) {
	t.Parallel()
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

// generation is the current generation of Deployment web in ns.
func generation(t *testing.T, ns string) int64 { return deployment(t, ns).Generation }

// $KUBERNETES_NAMESPACE scopes the reloader to that namespace, as it scopes stakater's; an
// explicit --namespace wins over it.
func TestKubernetesNamespaceScopesLikeStakater(t *testing.T) {
	t.Parallel()
	mine, other := setup(t), setup(t)
	env := map[string]string{"KUBERNETES_NAMESPACE": mine}
	p := launchContainer(t, corev1.Container{Args: []string{"--port=9090", "--coalesce-period=0"}}, env, cluster.Kubeconfig)
	p.waitReady(t)
	waitFor(t, 10*time.Second, "first hashes recorded", func() (bool, error) { return stateRecorded(t, mine), nil })
	otherBefore := generation(t, other)
	update(t, other, "1") // not watched
	waitReloaded(t, mine, update(t, mine, "1"))
	time.Sleep(time.Second) // a watched change was handled; one in other would have been too
	if g := generation(t, other); g != otherBefore {
		t.Fatalf("a namespace outside $KUBERNETES_NAMESPACE was reloaded")
	}
	if stateRecorded(t, other) {
		t.Fatal("a state was written in a namespace outside $KUBERNETES_NAMESPACE")
	}
	p.kill()

	// --namespace wins over the variable.
	p = launchContainer(t, corev1.Container{Args: []string{"--port=9090", "--coalesce-period=0", "--namespace=" + other}}, env, cluster.Kubeconfig)
	p.waitReady(t)
	waitFor(t, 10*time.Second, "hashes recorded in --namespace", func() (bool, error) { return stateRecorded(t, other), nil })
	mineBefore := generation(t, mine)
	update(t, mine, "2")
	waitReloaded(t, other, update(t, other, "2"))
	time.Sleep(time.Second)
	if g := generation(t, mine); g != mineBefore {
		t.Fatal("$KUBERNETES_NAMESPACE won over --namespace")
	}
}

// roleFrom returns the Role of deploy/namespace, as YAML.
func roleFrom(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../deploy/namespace/reloader.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for doc := range strings.SplitSeq(string(data), "\n---") {
		if strings.Contains(doc, "\nkind: Role\n") {
			return doc
		}
	}
	t.Fatal("no Role in deploy/namespace/reloader.yaml")
	return ""
}

// --namespaces a,b watches exactly those namespaces, as a ServiceAccount of a third namespace
// bound to deploy/namespace's Role in each: no ClusterRole. Each namespace keeps its own state.
func TestNamespacesFlagWatchesExactlyThoseWithARoleInEach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home, a, b, c := cluster.NewNamespace(t), setup(t), setup(t), setup(t)
	if _, err := cluster.Client().CoreV1().ServiceAccounts(home).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reloader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := roleFrom(t)
	for _, ns := range []string{a, b} {
		objs, err := cluster.Apply(ctx, ns, []byte(role))
		if err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reloader"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: objs[0].GetName()},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "reloader", Namespace: home}}}
		if _, err := cluster.Client().RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := cluster.ServiceAccountConfig(ctx, home, "reloader")
	if err != nil {
		t.Fatal(err)
	}
	sa := kubernetes.NewForConfigOrDie(cfg)
	waitFor(t, 20*time.Second, "the Roles to take effect", func() (bool, error) {
		_, errA := sa.AppsV1().Deployments(a).List(ctx, metav1.ListOptions{})
		_, errB := sa.AppsV1().Deployments(b).List(ctx, metav1.ListOptions{})
		return errA == nil && errB == nil, nil
	})
	if _, err := sa.CoreV1().ConfigMaps(c).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the ServiceAccount may read namespace c (%v): the test would prove nothing", err)
	}
	// --namespaces-to-ignore only applies to all namespaces: as in stakater, it is ignored here.
	p := launchContainer(t, corev1.Container{Args: []string{"--port=9090", "--coalesce-period=0", "--namespaces=" + a + "," + b,
		"--namespaces-to-ignore=" + a}}, nil, saKubeconfig(t, cfg))
	p.waitReady(t)
	for _, ns := range []string{a, b} {
		waitFor(t, 10*time.Second, "hashes recorded in "+ns, func() (bool, error) { return stateRecorded(t, ns), nil })
	}
	cBefore := generation(t, c)
	update(t, c, "1")
	waitReloaded(t, a, update(t, a, "1"))
	waitReloaded(t, b, update(t, b, "1"))
	if g := generation(t, c); g != cBefore {
		t.Fatal("a namespace outside --namespaces was reloaded")
	}
	log := p.stderr.String()
	if strings.Contains(log, "level=ERROR") || !strings.Contains(log, "so they are ignored") {
		t.Fatalf("errors logged, or --namespaces-to-ignore not said to be ignored:\n%s", log)
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
}

// The arguments and environment stakater's Helm chart gives its container run this binary
// unchanged, with stakater's meaning.
func TestStakaterChartArgumentsRunUnchanged(t *testing.T) {
	t.Parallel()
	ns := setup(t)
	pprofPort := freePort(t)
	args := []string{"--port=9090", "--log-format=json", "--log-level=warning", `--namespace-selector="team:a"`,
		"--is-Argo-Rollouts=false", "--reload-on-create=true", "--reload-on-delete=true", "--sync-after-restart=true",
		"--reload-strategy=default", "--enable-ha=true", "--auto-reload-all=true", "--enable-pprof", fmt.Sprintf("--pprof-addr=127.0.0.1:%d", pprofPort),
		// Our own flags, to take the Lease within seconds instead of the default 15 s.
		"--leader-election-lease=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=500ms"}
	env := map[string]string{"KUBERNETES_NAMESPACE": ns, "POD_NAME": "reloader-0", "POD_NAMESPACE": ns}
	p := launchContainer(t, corev1.Container{Args: args}, env, cluster.Kubeconfig)
	p.waitReady(t)
	waitFor(t, 20*time.Second, "the Lease taken (--enable-ha)", func() (bool, error) {
		return strings.Contains(p.metrics(t), "reloader_leader 1"), nil
	})
	waitFor(t, 10*time.Second, "first hashes recorded", func() (bool, error) { return stateRecorded(t, ns), nil })
	waitReloaded(t, ns, update(t, ns, "1"))
	// Profiles on --pprof-addr, not on --port; stakater's liveness path answers.
	for url, want := range map[string]int{
		fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", pprofPort): http.StatusOK,
		p.url("/debug/pprof/"): http.StatusNotFound,
		p.url("/live"):         http.StatusOK,
	} {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", url, resp.StatusCode, want)
		}
	}
	log := p.stderr.String()
	for line := range strings.Lines(log) {
		if !strings.HasPrefix(line, `{"time"`) {
			t.Errorf("not a JSON line (--log-format=json): %s", line)
		}
		if strings.Contains(line, `"level":"INFO"`) || strings.Contains(line, `"level":"ERROR"`) {
			t.Errorf("--log-level=warning logged: %s", line)
		}
	}
	if !strings.Contains(log, "they are ignored") {
		t.Errorf("--namespace-selector under $KUBERNETES_NAMESPACE was not said to be ignored:\n%s", log)
	}
}

// A stakater flag asking for what the reloader does not do stops it with one line saying so and
// why, not "unknown flag"; --version prints the version.
func TestStakaterFlagsTheReloaderCannotHonourSaySo(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ args, want string }{
		{"--enable-csi-integration=true", "--enable-csi-integration: not supported: the reloader does not watch the Secrets Store CSI driver's SecretProviderClassPodStatus"},
		{"--log-level=verbose", "--log-level"},
		{"--is-Argo-Rollouts=maybe", "--is-Argo-Rollouts"},
	} {
		out, err := exec.Command(binary, strings.Fields(tt.args)...).CombinedOutput()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if err == nil || len(lines) != 1 || !strings.Contains(lines[0], tt.want) || strings.Contains(lines[0], "unknown flag") {
			t.Errorf("%s: %v, want one line saying %q:\n%s", tt.args, err, tt.want, out)
		}
	}
	out, err := exec.Command(binary, "--version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.Contains(string(out), "\n\n") {
		t.Errorf("--version: %v, %q", err, out)
	}
}

// Events allowed at start and refused later (the Role edited while the reloader runs): the
// refusal is said once, reloads go on, and no ERROR is logged for the refused Events (client-go
// would log each as an ERROR of about a kilobyte).
func TestEventsRefusedWhileRunningAreSaidOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := setup(t)
	if _, err := cluster.Client().CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reloader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	objs, err := cluster.Apply(ctx, ns, []byte(roleFrom(t)))
	if err != nil {
		t.Fatal(err)
	}
	roleName := objs[0].GetName()
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reloader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "reloader", Namespace: ns}}}
	if _, err := cluster.Client().RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := cluster.ServiceAccountConfig(ctx, ns, "reloader")
	if err != nil {
		t.Fatal(err)
	}
	sa := kubernetes.NewForConfigOrDie(cfg)
	mayCreateEvents := func() bool {
		_, err := sa.CoreV1().Events(ns).Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"}, InvolvedObject: corev1.ObjectReference{Namespace: ns}},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil
	}
	waitFor(t, 20*time.Second, "the Role to take effect", func() (bool, error) { return mayCreateEvents(), nil })
	p := launchContainer(t, corev1.Container{Args: []string{"--port=9090", "--coalesce-period=0", "--namespace=" + ns}}, nil, saKubeconfig(t, cfg))
	p.waitReady(t)
	waitReloaded(t, ns, update(t, ns, "1"))
	waitFor(t, 10*time.Second, "the Reloaded Event (a control: Events work at first)", func() (bool, error) {
		list, err := cluster.Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Reloaded"})
		return err == nil && len(list.Items) > 0, err
	})

	role, err := cluster.Client().RbacV1().Roles(ns).Get(ctx, roleName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var kept []rbacv1.PolicyRule
	for _, r := range role.Rules {
		if !slices.Contains(r.Resources, "events") {
			kept = append(kept, r)
		}
	}
	role.Rules = kept
	if _, err := cluster.Client().RbacV1().Roles(ns).Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "Events to be refused", func() (bool, error) { return !mayCreateEvents(), nil })
	for i := 2; i <= 4; i++ {
		waitReloaded(t, ns, update(t, ns, fmt.Sprint(i)))
	}
	waitFor(t, 10*time.Second, "the refusal said", func() (bool, error) {
		return strings.Contains(p.stderr.String(), "Events are refused"), nil
	})
	time.Sleep(time.Second) // the last refused Event would be logged by now
	log := p.stderr.String()
	if n := strings.Count(log, "Events are refused"); n != 1 {
		t.Errorf("the refusal said %d times, want once", n)
	}
	for line := range strings.Lines(log) {
		if strings.Contains(line, "level=ERROR") {
			t.Errorf("an ERROR line: %s", line)
		}
	}
}
