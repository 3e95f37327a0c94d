package reloader_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/state"
)

const cmVar = "_RELOADER_-configmap-app-config"

func ownedReplicaSets(t *testing.T, ns string, d *appsv1.Deployment) int {
	t.Helper()
	rss, err := cluster.Client().AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rs := range rss.Items {
		for _, o := range rs.OwnerReferences {
			if o.UID == d.UID {
				n++
			}
		}
	}
	return n
}

func TestNamedAnnotationReloadsDeploymentAndRollsPods(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"level": "info"})
	d := createDeployment(t, ns, "web", 1, named("configmap", "app-config"), nil)
	waitFor(t, 60*time.Second, "first rollout", func() (bool, error) {
		return getDeployment(t, ns, "web").Status.AvailableReplicas == 1, nil
	})
	startController(t, ns, controllerOpts{})

	hash := updateConfigMap(t, ns, "app-config", map[string]string{"level": "debug"})
	waitEnv(t, ns, "web", cmVar, hash)
	waitFor(t, 60*time.Second, "second ReplicaSet rolled out", func() (bool, error) {
		got := getDeployment(t, ns, "web")
		return ownedReplicaSets(t, ns, d) == 2 && got.Status.UpdatedReplicas == 1 && got.Status.AvailableReplicas == 1 &&
			got.Status.ObservedGeneration == got.Generation, nil
	})
	if v, _ := env(getDeployment(t, ns, "web"), "app", "USER_VAR"); v != "kept" {
		t.Fatalf("the user's env var was changed to %q", v)
	}
}

func TestBurstOfChangesRestartsOnce(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	for i := range 3 {
		createConfigMap(t, ns, fmt.Sprintf("cm%d", i), map[string]string{"v": "0"})
	}
	for i := range 2 {
		createSecret(t, ns, fmt.Sprintf("s%d", i), map[string]string{"v": "0"})
	}
	// Two ConfigMaps by annotation, one by envFrom with auto; Secrets by annotation and volume.
	d := createDeployment(t, ns, "web", 1, map[string]string{
		"configmap.reloader.stakater.com/reload": "cm0, cm1",
		"secret.reloader.stakater.com/reload":    "s0",
		"reloader.stakater.com/auto":             "true",
	}, func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm2"}}}}
		s.Volumes = []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s1"}}}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "creds", MountPath: "/creds"}}
	})
	waitFor(t, 60*time.Second, "first rollout", func() (bool, error) { return ownedReplicaSets(t, ns, d) == 1, nil })
	startController(t, ns, controllerOpts{period: 2 * time.Second, grace: 10 * time.Second})
	before := getDeployment(t, ns, "web").Generation

	want := map[string]string{}
	for i := range 3 {
		want[fmt.Sprintf("_RELOADER_-configmap-cm%d", i)] = updateConfigMap(t, ns, fmt.Sprintf("cm%d", i), map[string]string{"v": "1"})
	}
	for i := range 2 {
		want[fmt.Sprintf("_RELOADER_-secret-s%d", i)] = updateSecret(t, ns, fmt.Sprintf("s%d", i), map[string]string{"v": "1"})
	}
	for v, h := range want {
		waitEnv(t, ns, "web", v, h)
	}
	settle(t)
	if got := getDeployment(t, ns, "web").Generation - before; got != 1 {
		t.Fatalf("pod template changed %d times for a burst of 5 changes, want 1", got)
	}
	waitFor(t, 30*time.Second, "exactly one new ReplicaSet", func() (bool, error) { return ownedReplicaSets(t, ns, d) == 2, nil })
	settle(t)
	if n := ownedReplicaSets(t, ns, d); n != 2 {
		t.Fatalf("%d ReplicaSets, want 2 (the original and one reload)", n)
	}
}

// generations returns the generation of every Deployment in ns.
func generations(t *testing.T, ns string) map[string]int64 {
	t.Helper()
	list, err := cluster.Client().AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, d := range list.Items {
		out[d.Name] = d.Generation
	}
	return out
}

// changed lists the Deployments whose generation moved, with how far.
func changed(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for name, g := range after {
		if g != before[name] {
			out[name] = g - before[name]
		}
	}
	return out
}

// population creates n ConfigMaps cfg-<i> and n Deployments app-<i>, each depending on its own.
func population(t *testing.T, ns string, n int) {
	t.Helper()
	for i := range n {
		createConfigMap(t, ns, fmt.Sprintf("cfg-%d", i), map[string]string{"v": "0"})
		createDeployment(t, ns, fmt.Sprintf("app-%d", i), 0, named("configmap", fmt.Sprintf("cfg-%d", i)), nil)
	}
}

// The population is larger than the backlog's window (128 keys at a time), so the first start's
// work ends only if the backlog hands the queue every window.
func TestRestartWithoutChangesRestartsNothing(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	const n = 150
	population(t, ns, n)
	before := generations(t, ns)

	first := startController(t, ns, controllerOpts{grace: 5 * time.Second})
	waitFor(t, 30*time.Second, "the first start's work done", func() (bool, error) { return first.ctrl.Idle(), nil })
	settle(t)
	first.stop(t)
	startController(t, ns, controllerOpts{grace: 5 * time.Second})
	settle(t)
	if moved := changed(before, generations(t, ns)); len(moved) != 0 {
		t.Fatalf("first start and restart without config changes restarted %v", moved)
	}
	// Positive control: the restarted controller does reload on a change, of the last config too.
	last := fmt.Sprintf("cfg-%d", n-1)
	waitEnv(t, ns, fmt.Sprintf("app-%d", n-1), "_RELOADER_-configmap-"+last, updateConfigMap(t, ns, last, map[string]string{"v": "1"}))
}

func TestChangesWhileDownRestartOnlyTheirDependentsOnce(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	population(t, ns, 10)
	first := startController(t, ns, controllerOpts{grace: 5 * time.Second})
	settle(t)
	first.stop(t)
	before := generations(t, ns)

	h3 := updateConfigMap(t, ns, "cfg-3", map[string]string{"v": "down"})
	h7 := updateConfigMap(t, ns, "cfg-7", map[string]string{"v": "down"})
	startController(t, ns, controllerOpts{grace: 5 * time.Second})
	waitEnv(t, ns, "app-3", "_RELOADER_-configmap-cfg-3", h3)
	waitEnv(t, ns, "app-7", "_RELOADER_-configmap-cfg-7", h7)
	settle(t)
	want := map[string]int64{"app-3": 1, "app-7": 1}
	if moved := changed(before, generations(t, ns)); fmt.Sprint(moved) != fmt.Sprint(want) {
		t.Fatalf("restarted %v, want %v", moved, want)
	}
}

func TestCrashMidWindowReloadsOnceAfterRestart(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	crashing := startController(t, ns, controllerOpts{period: 5 * time.Second}) // grace 0: no flush
	before := getDeployment(t, ns, "web").Generation
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	time.Sleep(time.Second) // inside the window
	crashing.stop(t)
	if g := getDeployment(t, ns, "web").Generation; g != before {
		t.Fatalf("the window had not closed, yet the template changed (generation %d→%d)", before, g)
	}

	startController(t, ns, controllerOpts{grace: 5 * time.Second})
	waitEnv(t, ns, "web", cmVar, hash)
	settle(t)
	if got := getDeployment(t, ns, "web").Generation - before; got != 1 {
		t.Fatalf("template changed %d times, want exactly 1", got)
	}
}

// A crash after the patch but before the state write leaves the state behind: the next start
// must see the workload already current and not restart it again.
func TestReloadPatchedBeforeCrashIsNotRepeated(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	first := startController(t, ns, controllerOpts{grace: 5 * time.Second})
	settle(t)
	oldHash := stateEntry(t, ns, "v1.ConfigMap_app-config")
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitEnv(t, ns, "web", cmVar, hash)
	first.stop(t)
	reloaded := getDeployment(t, ns, "web").Generation
	setStateEntry(t, ns, "v1.ConfigMap_app-config", oldHash) // as if the state write was lost

	second := startController(t, ns, controllerOpts{grace: 5 * time.Second})
	second.settle()
	if g := getDeployment(t, ns, "web").Generation; g != reloaded {
		t.Fatalf("the workload was restarted again (generation %d→%d)", reloaded, g)
	}
	// The state caught up by the stop shows the controller judged the workload: the marker holds
	// the content, so the entry went with the write at exit.
	if got := stoppedEntry(t, second, ns, "v1.ConfigMap_app-config"); got != hash {
		t.Fatalf("the state holds %q after the stop, want %q", got, hash)
	}
}

func stateEntry(t *testing.T, ns, key string) string {
	t.Helper()
	cm, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data[key]
}

func setStateEntry(t *testing.T, ns, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"data":{%q:%q}}`, key, value)
	_, err := cluster.Client().CoreV1().ConfigMaps(ns).Patch(context.Background(), "reloader-state", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func TestStrippedEnvVarCausesNoRestart(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	startController(t, ns, controllerOpts{})
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitEnv(t, ns, "web", cmVar, hash)

	// The user's `kubectl apply` of the original manifest drops our variable.
	d := updateDeployment(t, ns, "web", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "USER_VAR", Value: "kept"}}
	})
	settle(t)
	got := getDeployment(t, ns, "web")
	if _, set := env(got, "app", cmVar); set || got.Generation != d.Generation {
		t.Fatalf("the reloader restored its variable (generation %d→%d) although the config did not change", d.Generation, got.Generation)
	}
	// Positive control: the stripped workload still reloads on the next change, once.
	waitEnv(t, ns, "web", cmVar, updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"}))
	settle(t)
	if g := getDeployment(t, ns, "web").Generation; g != d.Generation+1 {
		t.Fatalf("generation %d→%d after the next change, want one reload", d.Generation, g)
	}
}

func TestDeletedStateWhileRunningCausesNoMassRestart(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	population(t, ns, 5)
	r := startController(t, ns, controllerOpts{grace: 5 * time.Second})
	settle(t)
	before := generations(t, ns)
	if err := cluster.Client().CoreV1().ConfigMaps(ns).Delete(context.Background(), "reloader-state", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	hash := updateConfigMap(t, ns, "cfg-2", map[string]string{"v": "1"})
	waitEnv(t, ns, "app-2", "_RELOADER_-configmap-cfg-2", hash)
	settle(t)
	if moved := changed(before, generations(t, ns)); fmt.Sprint(moved) != fmt.Sprint(map[string]int64{"app-2": 1}) {
		t.Fatalf("restarted %v, want only app-2 once", moved)
	}
	// The next write recreates it, at the latest the one at the stop: every entry is back.
	r.stop(t)
	cm, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the state was not recreated: %v", err)
	}
	for i := range 5 {
		if k := fmt.Sprintf("v1.ConfigMap_cfg-%d", i); !state.IsHash(cm.Data[k]) {
			t.Fatalf("the recreated state holds %s=%q", k, cm.Data[k])
		}
	}
	if got := cm.Data["v1.ConfigMap_cfg-2"]; got != hash {
		t.Fatalf("the recreated state holds cfg-2=%q, want %q", got, hash)
	}
	if !strings.Contains(r.log.String(), "recreating it from memory") {
		t.Fatalf("no log line about the recreated state:\n%s", r.log.String())
	}
}

func TestCorruptStateEntryCausesNoRestart(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	population(t, ns, 3)
	first := startController(t, ns, controllerOpts{grace: 5 * time.Second})
	settle(t)
	first.stop(t)
	before := generations(t, ns)
	setStateEntry(t, ns, "v1.ConfigMap_cfg-1", "garbage")

	r := startController(t, ns, controllerOpts{grace: 5 * time.Second})
	waitFor(t, 10*time.Second, "corrupt entry rewritten", func() (bool, error) {
		return state.IsHash(stateEntry(t, ns, "v1.ConfigMap_cfg-1")), nil
	})
	settle(t)
	if moved := changed(before, generations(t, ns)); len(moved) != 0 {
		t.Fatalf("a corrupt state entry restarted %v", moved)
	}
	if !strings.Contains(r.log.String(), "state entry is corrupt") {
		t.Fatalf("no log line about the corrupt entry:\n%s", r.log.String())
	}
}

func TestEnvVarGoesOnlyToContainersUsingTheConfig(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createConfigMap(t, ns, "app.config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, map[string]string{"reloader.stakater.com/auto": "true"}, func(s *corev1.PodSpec) {
		s.Containers = append(s.Containers,
			corev1.Container{Name: "sidecar", Image: "fake", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}},
			corev1.Container{Name: "other", Image: "fake", Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "app.config"}, Key: "v"}}}}})
	})
	startController(t, ns, controllerOpts{})
	h1 := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	updateConfigMap(t, ns, "app.config", map[string]string{"v": "1"})
	// "other" reads only key v of app.config, so it carries the hash of that key alone.
	h2 := confighash.Subset(confighash.ConfigMapKeys(&corev1.ConfigMap{Data: map[string]string{"v": "1"}}), []string{"v"})
	waitFor(t, 30*time.Second, "both reloads", func() (bool, error) {
		d := getDeployment(t, ns, "web")
		a, _ := env(d, "sidecar", "_RELOADER_-configmap-app-config")
		b, _ := env(d, "other", "_RELOADER_-configmap-app.config")
		return a == h1 && b == h2, nil
	})
	d := getDeployment(t, ns, "web")
	for _, check := range []struct{ container, variable string }{
		{"app", "_RELOADER_-configmap-app-config"}, {"app", "_RELOADER_-configmap-app.config"},
		{"other", "_RELOADER_-configmap-app-config"}, {"sidecar", "_RELOADER_-configmap-app.config"},
	} {
		if _, set := env(d, check.container, check.variable); set {
			t.Errorf("container %s got %s although it does not use that config", check.container, check.variable)
		}
	}
}

func TestTheReloadLogSaysWhyAndNeverASecretValue(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	const secretValue = "hunter2-very-secret-value"
	createSecret(t, ns, "db", map[string]string{"password": "initial-" + secretValue})
	createDeployment(t, ns, "web", 0, named("secret", "db"), nil)
	r := startController(t, ns, controllerOpts{})
	hash := updateSecret(t, ns, "db", map[string]string{"password": secretValue})
	waitEnv(t, ns, "web", "_RELOADER_-secret-db", hash)
	r.settle() // the API server shows the patch before its answer reaches the reloader, which logs
	r.stop(t)
	if strings.Contains(r.log.String(), secretValue) {
		t.Fatalf("the log contains a secret value:\n%s", r.log.String())
	}
	if !strings.Contains(r.log.String(), "reloaded workload") {
		t.Fatalf("the log has no reload line, so the check proves nothing:\n%s", r.log.String())
	}
	if why := "Secret/db: " + policy.StateDiffers.String(); !strings.Contains(r.log.String(), why) {
		t.Errorf("the reload line does not say why (%q):\n%s", why, r.log.String())
	}
}

func TestReloadLeavesAnEventOnTheWorkload(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	startController(t, ns, controllerOpts{})
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	want := "Reloaded for ConfigMap/app-config (" + hash[:8] + ")"
	waitFor(t, 30*time.Second, "a Reloaded event on deployment web", func() (bool, error) {
		events, err := cluster.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Deployment,involvedObject.name=web,reason=Reloaded"})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Message == want && e.Type == corev1.EventTypeNormal {
				return true, nil
			}
		}
		return false, nil
	})
}

func TestShutdownFlushesPendingReloads(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	r := startController(t, ns, controllerOpts{period: time.Minute, grace: 10 * time.Second})
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitFor(t, 10*time.Second, "the change to open a window", func() (bool, error) {
		return strings.Contains(r.log.String(), "config changed"), nil
	})
	r.stop(t) // long before the one-minute window closes
	if got, _ := env(getDeployment(t, ns, "web"), "app", cmVar); got != hash {
		t.Fatalf("after a graceful stop the env var is %q, want the pending hash %s", got, hash)
	}
	if got := stateEntry(t, ns, "v1.ConfigMap_app-config"); got != hash {
		t.Fatalf("after a graceful stop the state holds %q, want %s", got, hash)
	}
}

// The last reload's update event is what lets the state advance, so the shutdown drain waits,
// within the grace, until the cache shows it. Here the Deployments' watch is slow (each read
// of its stream held 800 ms once armed): a drain that ended after a quiet queue alone stopped
// before that event and left the old hash in the state.
func TestShutdownWaitsForTheCacheToShowItsLastReloadOnASlowWatch(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	armed, slow := slowWatch("/deployments", 800*time.Millisecond)
	r := startController(t, ns, controllerOpts{period: time.Minute, grace: 10 * time.Second, wrap: slow})
	armed.Store(true) // after the first sync: startController waits for it
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitFor(t, 10*time.Second, "the change to open a window", func() (bool, error) {
		return strings.Contains(r.log.String(), "config changed"), nil
	})
	r.stop(t)
	if got, _ := env(getDeployment(t, ns, "web"), "app", cmVar); got != hash {
		t.Fatalf("after a graceful stop the env var is %q, want the pending hash %s", got, hash)
	}
	if got := stateEntry(t, ns, "v1.ConfigMap_app-config"); got != hash {
		t.Fatalf("after a graceful stop on a slow watch the state holds %q, want %s", got, hash)
	}
}

// slowWatch wraps the controller's transport so that, once armed, each read of a watch stream
// whose path ends in suffix is held for delay: events arrive late, as on a loaded API server.
func slowWatch(suffix string, delay time.Duration) (armed *atomic.Bool, wrap func(http.RoundTripper) http.RoundTripper) {
	armed = &atomic.Bool{}
	wrap = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && req.URL.Query().Get("watch") == "true" && strings.HasSuffix(req.URL.Path, suffix) {
				resp.Body = &slowBody{ReadCloser: resp.Body, armed: armed, delay: delay}
			}
			return resp, err
		})
	}
	return armed, wrap
}

type slowBody struct {
	io.ReadCloser
	armed *atomic.Bool
	delay time.Duration
}

func (b *slowBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 && b.armed.Load() {
		time.Sleep(b.delay)
	}
	return n, err
}
