// Package e2e runs the real reloader binary, as separate processes, against a real API server:
// what only a process shows (signals, kill -9, logs, /metrics, leader election).
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/internal/dev/testcluster"
)

var (
	cluster *testcluster.Cluster
	binary  string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "reloader-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "reloader")
	if b := os.Getenv("RELOADER_BINARY"); b != "" {
		binary = b // another build under test, e.g. an older commit's, for the checker
	} else if out, err := buildBinary(binary); err != nil {
		fmt.Fprintf(os.Stderr, "build the reloader binary: %v\n%s", err, out)
		os.Exit(1)
	}
	code := testcluster.Main(m, testcluster.Options{Log: os.Stderr, Audit: true}, &cluster)
	if err := stopRolloutsCluster(); err != nil {
		fmt.Fprintf(os.Stderr, "stop the cluster whose rollouts complete: %v\n", err)
		code = max(code, 1)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildBinary(path string) ([]byte, error) {
	build := exec.Command("go", "build", "-o", path, ".")
	build.Dir = ".."
	return build.CombinedOutput()
}

// proc is one running reloader process.
type proc struct {
	name   string // argv[0]
	cmd    *exec.Cmd
	port   int
	stderr *testcluster.LogBuffer
	exited chan error
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := testcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// start runs the binary against the cluster in namespace ns and waits until /readyz answers 200.
func start(t *testing.T, ns string, args ...string) *proc {
	t.Helper()
	p := launch(t, ns, cluster.Kubeconfig, args...)
	p.waitReady(t)
	return p
}

// launch runs the binary with kubeconfig in namespace ns, without waiting for it.
func launch(t *testing.T, ns, kubeconfig string, args ...string) *proc {
	t.Helper()
	return launchAs(t, "reloader", ns, kubeconfig, args...)
}

// launchAs is launch with the process named name (argv[0]). client-go puts that name in the
// User-Agent, so the API server's audit log and managedFields tell replicas apart.
func launchAs(t *testing.T, name, ns, kubeconfig string, args ...string) *proc {
	t.Helper()
	p := command(t, name, ns, kubeconfig, args...)
	p.start(t)
	return p
}

// command is the process launchAs starts, not started yet.
func command(t *testing.T, name, ns, kubeconfig string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, port: freePort(t), stderr: &testcluster.LogBuffer{}, exited: make(chan error, 1)}
	all := append([]string{"--kubeconfig", kubeconfig, "--namespace", ns, "--port", fmt.Sprint(p.port)}, args...)
	p.cmd = exec.Command(binary, all...)
	p.cmd.Args[0] = name
	return p
}

// waitReady waits until /readyz answers 200, failing if the process exits first.
func (p *proc) waitReady(t *testing.T) {
	t.Helper()
	waitFor(t, 30*time.Second, "reloader ready", func() (bool, error) {
		if err, exited := p.wait(0); exited {
			return false, fmt.Errorf("reloader exited early (%v):\n%s", err, p.stderr.String())
		}
		resp, err := http.Get(p.url("/readyz"))
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// ready waits up to timeout for /readyz to answer 200, and reports false if it did not or the
// process exited. A zero timeout asks once.
func (p *proc) ready(timeout time.Duration) bool {
	for end := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		if _, exited := p.wait(0); exited {
			return false
		}
		if resp, err := http.Get(p.url("/readyz")); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// scrape returns the value of an unlabelled metric, or "" if it cannot be read.
func (p *proc) scrape(name string) string {
	resp, err := http.Get(p.url("/metrics"))
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}

func (p *proc) url(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", p.port, path) }

// kill is kill -9: no flush, no Lease release.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(10 * time.Second)
}

// terminate sends SIGTERM and returns the exit error.
func (p *proc) terminate(t *testing.T) error {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	err, ok := p.wait(30 * time.Second)
	if !ok {
		t.Fatal("reloader did not exit within 30s of SIGTERM")
	}
	return err
}

func (p *proc) wait(d time.Duration) (error, bool) {
	// Checked first: a select with both cases ready picks either, so wait(0) could miss an exit.
	select {
	case err := <-p.exited:
		p.exited <- err
		return err, true
	default:
	}
	select {
	case err := <-p.exited:
		p.exited <- err
		return err, true
	case <-time.After(d):
		return nil, false
	}
}

func (p *proc) metrics(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(p.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond() })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func setup(t *testing.T) string {
	t.Helper()
	ns := cluster.NewNamespace(t)
	ctx := context.Background()
	if _, err := cluster.Client().CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"}, Data: map[string]string{"v": "0"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	replicas := int32(0)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"configmap.reloader.stakater.com/reload": "app-config"}},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "fake"}}}}},
	}
	if _, err := cluster.Client().AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

func update(t *testing.T, ns, value string) string {
	t.Helper()
	cms := cluster.Client().CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(context.Background(), "app-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"v": value}
	if cm, err = cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return confighash.ConfigMap(cm)
}

func deployment(t *testing.T, ns string) *appsv1.Deployment {
	t.Helper()
	d, err := cluster.Client().AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func envVar(d *appsv1.Deployment) string {
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "_RELOADER_-configmap-app-config" {
			return e.Value
		}
	}
	return ""
}

func waitReloaded(t *testing.T, ns, hash string) {
	t.Helper()
	waitFor(t, 20*time.Second, "the reload", func() (bool, error) { return envVar(deployment(t, ns)) == hash, nil })
}

// stateEntry is app-config's entry in the state, "" if there is none yet.
func stateEntry(ns string) string {
	cm, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "reloader-state", metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return cm.Data["v1.ConfigMap_app-config"]
}

func stateRecorded(t *testing.T, ns string) bool { return stateEntry(ns) != "" }

func TestKillNineInsideTheWindowThenRestartReloadsOnce(t *testing.T) {
	t.Parallel()
	ns := setup(t)
	first := start(t, ns, "--coalesce-period", "3s")
	waitFor(t, 10*time.Second, "first hashes recorded", func() (bool, error) { return stateRecorded(t, ns), nil })
	before := deployment(t, ns).Generation
	hash := update(t, ns, "1")
	time.Sleep(500 * time.Millisecond)
	first.kill()
	if g := deployment(t, ns).Generation; g != before {
		t.Fatalf("patched before the window closed (generation %d→%d)", before, g)
	}
	start(t, ns, "--coalesce-period", "0")
	waitReloaded(t, ns, hash)
	time.Sleep(2 * time.Second)
	if got := deployment(t, ns).Generation - before; got != 1 {
		t.Fatalf("%d template changes, want exactly 1", got)
	}
}

func TestSIGTERMFlushesPendingReloadsAndExitsZero(t *testing.T) {
	t.Parallel()
	ns := setup(t)
	p := start(t, ns, "--coalesce-period", "1m")
	waitFor(t, 10*time.Second, "first hashes recorded", func() (bool, error) { return stateRecorded(t, ns), nil })
	hash := update(t, ns, "1")
	waitFor(t, 10*time.Second, "the change seen", func() (bool, error) { return strings.Contains(p.stderr.String(), "config changed"), nil })
	if err := p.terminate(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if got := envVar(deployment(t, ns)); got != hash {
		t.Fatalf("after SIGTERM the env var is %q, want the pending %s", got, hash)
	}
}

func TestJSONLogsNeverShowSecretValues(t *testing.T) {
	t.Parallel()
	ns := setup(t)
	const value = "s3cr3t-value-that-must-not-leak"
	ctx := context.Background()
	secrets := cluster.Client().CoreV1().Secrets(ns)
	if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, StringData: map[string]string{"password": "old-" + value}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := deployment(t, ns)
	d.Annotations["secret.reloader.stakater.com/reload"] = "db"
	if _, err := cluster.Client().AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := start(t, ns, "--coalesce-period", "0", "--log-format", "json", "--log-level", "debug")
	waitFor(t, 10*time.Second, "first hashes recorded", func() (bool, error) { return stateRecorded(t, ns), nil })
	s, _ := secrets.Get(ctx, "db", metav1.GetOptions{})
	s.Data, s.StringData = nil, map[string]string{"password": value}
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the reload logged", func() (bool, error) { return strings.Contains(p.stderr.String(), "reloaded workload"), nil })
	if err := p.terminate(t); err != nil {
		t.Fatal(err)
	}
	lines := 0
	sc := bufio.NewScanner(strings.NewReader(p.stderr.String()))
	for sc.Scan() {
		lines++
		var entry map[string]any
		if err := json.Unmarshal(sc.Bytes(), &entry); err != nil {
			t.Errorf("not a JSON log line: %s", sc.Text())
		}
		if strings.Contains(sc.Text(), value) {
			t.Errorf("a log line shows the secret value: %s", sc.Text())
		}
	}
	if lines < 3 {
		t.Fatalf("only %d log lines; the check proves nothing", lines)
	}
}

func TestMetricsAfterAReload(t *testing.T) {
	t.Parallel()
	ns := setup(t)
	p := start(t, ns, "--coalesce-period", "0")
	waitFor(t, 10*time.Second, "first hashes recorded", func() (bool, error) { return stateRecorded(t, ns), nil })
	waitReloaded(t, ns, update(t, ns, "1"))
	var body string
	// The metrics of a reload are recorded just after its patch, which the test may see first.
	waitFor(t, 10*time.Second, "state gauges sampled and the reload counted", func() (bool, error) {
		body = p.metrics(t)
		return strings.Contains(body, `reloader_state_entries{configmap="reloader-state"}`) &&
			strings.Contains(body, `reloader_reload_latency_seconds_count{kind="Deployment"}`), nil
	})
	for _, want := range []string{
		`reloader_reloads_total{kind="Deployment",result="success"} 1`,
		`reloader_reload_latency_seconds_count{kind="Deployment"} 1`,
		`reloader_config_changes_total{kind="ConfigMap"} 1`,
		`reloader_state_bytes{configmap="reloader-state"}`,
		`reloader_leader 1`,
		`reloader_api_requests_total{resource="deployments",verb="patch"} 1`,
		`rest_client_requests_total{code="200"`,
		`reloader_workqueue_adds_total`,
		`process_resident_memory_bytes`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

// Once started, the reloader runs on one processor, and still reloads; GOMAXPROCS, when set, is
// kept (the positive control: the same start with GOMAXPROCS=2 stays at 2).
func TestOneProcessorOnceStartedUnlessGOMAXPROCSIsSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  string
		want string
	}{{"", "1"}, {"GOMAXPROCS=2", "2"}} {
		ns := setup(t)
		p := command(t, "reloader", ns, cluster.Kubeconfig, "--coalesce-period", "0", "--log-level", "debug")
		p.cmd.Env = withoutEnv(os.Environ(), "GOMAXPROCS")
		if tc.env != "" {
			p.cmd.Env = append(p.cmd.Env, tc.env)
		}
		p.start(t)
		p.waitReady(t)
		waitFor(t, 30*time.Second, "the start-up done", func() (bool, error) {
			return strings.Contains(p.stderr.String(), "start-up memory"), nil
		})
		if got := p.scrape("go_sched_gomaxprocs_threads"); got != tc.want {
			t.Errorf("with %q, GOMAXPROCS %q once started, want %s", tc.env, got, tc.want)
		}
		waitFor(t, 10*time.Second, "first hashes recorded", func() (bool, error) { return stateRecorded(t, ns), nil })
		waitReloaded(t, ns, update(t, ns, "1"))
	}
}

// withoutEnv is env without the variable name.
func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func TestBadFlagsFailWithOneLineNamingTheFlag(t *testing.T) {
	t.Parallel()
	tests := []struct{ args, flag string }{
		{"--coalesce-period=abc", "--coalesce-period"},
		{"--coalesce-period=-5s", "--coalesce-period"},
		{"--coalesce-period=9223372036854776", "--coalesce-period"}, // milliseconds past a duration: wrapped to 192µs before
		{"--port=70000", "--port"},
		{"--reload-strategy=rolling", "--reload-strategy"},
		{"--namespace-selector=a=(", "--namespace-selector"},
		{"--ignored-workload-types=pods", "--ignored-workload-types"},
		{"--resources-to-ignore=pods", "--resources-to-ignore"},
		{"--leader-elect --leader-election-lease=1500ms", "--leader-election-lease"}, // stored as 1s
		{"--leader-elect --leader-election-lease=4s --leader-election-renew-deadline=3500ms", "--leader-election-renew-deadline"},
		{"--leader-elect --leader-election-retry-period=5s", "--leader-election-retry-period"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command(binary, strings.Fields(tt.args)...).CombinedOutput()
			if err == nil {
				t.Fatalf("%s was accepted", tt.args)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tt.flag) {
				t.Fatalf("want one line naming %s, got:\n%s", tt.flag, out)
			}
		})
	}
}

// start starts p.cmd with its output in p.stderr, killed with the test (and with the test
// process), its output logged if the test failed.
func (p *proc) start(t *testing.T) {
	t.Helper()
	p.cmd.Stderr, p.cmd.Stdout = p.stderr, p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s %v output:\n%s", p.name, p.cmd.Args[1:], p.stderr.String())
		}
	})
}
