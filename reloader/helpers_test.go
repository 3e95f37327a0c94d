package reloader_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/internal/dev/testcluster"
	"github.com/reloader/reloader/internal/kube"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(testcluster.Main(m, testcluster.Options{Pods: true, NudgeDeadlines: true, Parallel: 12, Log: os.Stderr}, &cluster))
}

// running is a controller started in-process for one test.
type running struct {
	ctrl    *reloader.Controller
	cancel  context.CancelFunc
	done    chan error
	log     *testcluster.LogBuffer
	metrics *metrics.Metrics
	ns      string // the namespace it watches; "" for all
}

type controllerOpts struct {
	period time.Duration
	grace  time.Duration // 0 abandons pending work on stop, as kill -9 would
	// tweak adjusts the options before the controller is built.
	tweak func(*reloader.Options)
	// wrap, if set, wraps the controller's transport to the API server.
	wrap func(http.RoundTripper) http.RoundTripper
}

func startController(t *testing.T, ns string, o controllerOpts) *running {
	t.Helper()
	return startControllerAs(t, cluster.Config, ns, o)
}

// startControllerAs is startController authenticated by cfg instead of as the admin.
func startControllerAs(t *testing.T, cfg *rest.Config, ns string, o controllerOpts) *running {
	t.Helper()
	log := &testcluster.LogBuffer{}
	opts := reloader.Options{
		Namespace: ns, StateNamespace: ns, StateName: "reloader-state",
		CoalescePeriod: o.period, CoalesceMaxWait: 5 * o.period, ShutdownGrace: o.grace,
		Annotations: policy.DefaultAnnotations(),
		Log:         slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Metrics:     metrics.New("test"),
		// A lost state is written back within seconds, not the default minute.
		StateCheckPeriod: 2 * time.Second,
	}
	if o.tweak != nil {
		o.tweak(&opts)
	}
	if o.wrap != nil {
		cfg = rest.CopyConfig(cfg)
		cfg.Wrap(o.wrap)
	}
	clients, err := kube.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := reloader.New(clients, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{ctrl: ctrl, cancel: cancel, done: make(chan error, 1), log: log, metrics: opts.Metrics, ns: opts.Namespace}
	go func() { r.done <- ctrl.Run(ctx) }()
	started.Store(r, t.Name())
	waitFor(t, 30*time.Second, "controller ready", func() (bool, error) { return ctrl.Ready(), nil })
	t.Cleanup(func() {
		r.stop(t)
		if t.Failed() {
			t.Logf("controller log:\n%s", log.String())
		}
	})
	return r
}

// stop ends the controller and waits for it; calling it twice is harmless.
func (r *running) stop(t *testing.T) {
	t.Helper()
	started.Delete(r)
	r.cancel()
	if err, ok := <-r.done; ok {
		close(r.done)
		if err != nil {
			t.Errorf("controller Run: %v", err)
		}
		if err := r.ctrl.CheckShared(); err != nil {
			t.Error(err)
		}
	}
}

// waitFor polls cond until it holds, at first every 10 ms, then less often up to every
// waitPollMax: most waits end within a few polls, and a long one (a rollout, a window) costs
// the API server, which bounds the package's run, a request every waitPollMax.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	delay := wait.Backoff{Duration: 10 * time.Millisecond, Factor: 1.5, Steps: math.MaxInt32, Cap: waitPollMax}.DelayFunc()
	err := delay.Until(ctx, true, false, func(context.Context) (bool, error) { return cond() })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitPollMax is the longest interval between waitFor's polls.
const waitPollMax = 100 * time.Millisecond

func createConfigMap(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
	if _, err := cluster.Client().CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// updateConfigMap replaces the data and returns the new content hash.
func updateConfigMap(t *testing.T, ns, name string, data map[string]string) string {
	t.Helper()
	cms := cluster.Client().CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = data
	if cm, err = cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return confighash.ConfigMap(cm)
}

func createSecret(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}
	if _, err := cluster.Client().CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func updateSecret(t *testing.T, ns, name string, data map[string]string) string {
	t.Helper()
	secrets := cluster.Client().CoreV1().Secrets(ns)
	s, err := secrets.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data, s.StringData = nil, data
	if s, err = secrets.Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return keyedHash(t, ns, s)
}

// createDeployment creates a Deployment with one container "app"; mutate adjusts its pod spec.
func createDeployment(t *testing.T, ns, name string, replicas int32, annotations map[string]string, mutate func(*corev1.PodSpec)) *appsv1.Deployment {
	t.Helper()
	return createDeploymentFrom(t, ns, name, func(d *appsv1.Deployment) {
		d.Spec.Replicas, d.Annotations = &replicas, annotations
		if mutate != nil {
			mutate(&d.Spec.Template.Spec)
		}
	})
}

// createDeploymentFrom creates a Deployment with no replicas and one container "app" (with a
// user env var); mutate adjusts it before creation.
func createDeploymentFrom(t *testing.T, ns, name string, mutate func(*appsv1.Deployment)) *appsv1.Deployment {
	t.Helper()
	labels := map[string]string{"app": name}
	replicas := int32(0)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "fake",
					Env: []corev1.EnvVar{{Name: "USER_VAR", Value: "kept"}}}}},
			},
		},
	}
	mutate(d)
	d, err := cluster.Client().AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func getDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	d, err := cluster.Client().AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// env returns the value of variable name in container c of d's template, and whether it is set.
func env(d *appsv1.Deployment, c, name string) (string, bool) {
	for _, ctr := range d.Spec.Template.Spec.Containers {
		if ctr.Name != c {
			continue
		}
		for _, e := range ctr.Env {
			if e.Name == name {
				return e.Value, true
			}
		}
	}
	return "", false
}

// waitEnv waits until the app container of deployment name has variable v set to want. A
// refused patch is retried up to refusedRetryMax (30 s) later, and several refusals in a row on
// a loaded machine reach that bound: the wait outlasts it.
func waitEnv(t *testing.T, ns, name, v, want string) {
	t.Helper()
	waitFor(t, 45*time.Second, name+" env "+v+"="+want, func() (bool, error) {
		got, _ := env(getDeployment(t, ns, name), "app", v)
		return got == want, nil
	})
}

// started holds the running controllers and the tests that started them, for settle.
var started sync.Map // *running → test name

// settle waits until every controller that t or one of its parents started has settled; the
// controllers of tests running in parallel are theirs to settle.
func settle(t *testing.T) {
	started.Range(func(r, name any) bool {
		if n := name.(string); n == t.Name() || strings.HasPrefix(t.Name(), n+"/") {
			r.(*running).settle()
		}
		return true
	})
}

// settle waits until the controller has seen every write of the tests' admin clients in what it
// watches (cluster.Writes), kube-controller-manager's answer to every template change (a status
// that observed it) and the start-up's note of stakater's comparison, and has then been idle for
// 100 ms in a row, so that whatever it would do, it has done. A written object it does not hold after 300 ms is taken as one its selectors
// leave out (or deleted ones it no longer holds); a watch event can take seconds to arrive on a
// loaded machine, so a fixed quiet alone would hide what arrives after it.
func (r *running) settle() {
	deadline := time.Now().Add(20 * time.Second)
	quietSince := time.Now()
	for time.Now().Before(deadline) {
		if !r.ctrl.Idle() || !r.ctrl.StakaterNoted() || !r.seenWrites() || r.ctrl.Unobserved() {
			quietSince = time.Now()
		} else if time.Since(quietSince) >= 100*time.Millisecond {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// seenWrites reports whether the controller's caches show every write in cluster.Writes to what
// they watch.
func (r *running) seenWrites() bool {
	for _, w := range cluster.Writes.InNamespace(r.ns) {
		rv, found, watched := r.ctrl.CachedVersion(w.Resource, w.Namespace, w.Name)
		aged := time.Since(w.At) >= 300*time.Millisecond
		switch {
		case !watched:
		case w.Deleted:
			if found && !aged {
				return false
			}
		case found:
			if !atLeast(rv, w.ResourceVersion) {
				return false
			}
		case !aged:
			return false
		}
	}
	return true
}

// atLeast compares resource versions as the numbers this API server writes.
func atLeast(rv, than string) bool {
	a, errA := strconv.ParseUint(rv, 10, 64)
	b, errB := strconv.ParseUint(than, 10, 64)
	if errA != nil || errB != nil {
		return rv == than
	}
	return a >= b
}

func named(kind, names string) map[string]string {
	return map[string]string{kind + ".reloader.stakater.com/reload": names}
}

// wantReloads settles, then fails unless Deployment name's template changed exactly n times
// since generation before.
func wantReloads(t *testing.T, ns, name string, before, n int64) {
	t.Helper()
	settle(t)
	if got := getDeployment(t, ns, name).Generation - before; got != n {
		t.Fatalf("%s: template changed %d times, want %d", name, got, n)
	}
}

// updateDeployment applies mutate to Deployment name and writes it, again on a conflict (the
// deployment controller updates the status during a rollout); it returns what was written.
func updateDeployment(t *testing.T, ns, name string, mutate func(*appsv1.Deployment)) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	err := retry.RetryOnConflict(retry.DefaultRetry, func() (err error) {
		d = getDeployment(t, ns, name)
		mutate(d)
		d, err = cluster.Client().AppsV1().Deployments(ns).Update(context.Background(), d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// closedWindow is a reload window of one minute, twelve hours from now: closed for any test.
func closedWindow() string {
	at := time.Now().UTC().Add(12 * time.Hour)
	end := at.Add(time.Minute)
	return fmt.Sprintf("%02d:%02d-%02d:%02d", at.Hour(), at.Minute(), end.Hour(), end.Minute())
}

// stoppedEntry stops r and returns key's entry in the state. A change whose every dependent's
// marker holds it is written at the latest by the stop (configs.Records.RolledOut), so after a stop the
// entry shows whether the controller judged the change and found nothing left to reload.
func stoppedEntry(t *testing.T, r *running, ns, key string) string {
	t.Helper()
	r.stop(t)
	return stateEntry(t, ns, key)
}

// waitRecorded waits until r's state holds want under the entry key, in memory: the change has
// been judged and recorded, though a change every dependent's marker holds is written to the
// ConfigMap only with its next write (stoppedEntry).
func waitRecorded(t *testing.T, r *running, key, want string) {
	t.Helper()
	waitFor(t, 10*time.Second, key+" recorded as "+want, func() (bool, error) { return r.ctrl.Recorded(key) == want, nil })
}

// configSyncs is how many config syncs r has finished.
func configSyncs(t *testing.T, r *running) float64 {
	t.Helper()
	var n float64
	for _, res := range []string{"configmaps", "secrets"} {
		n += value(t, r.metrics.Stakater.EventsProcessed.WithLabelValues("unknown", res, "success"))
	}
	return n
}

// judgedAfter waits until r has finished more config syncs than done (configSyncs before a
// change), then settles: the change has been judged, and whatever it led to is done. It is
// the observable end of a change that reloads nothing, now that such a change writes no state
// of its own.
func judgedAfter(t *testing.T, r *running, done float64, what string) {
	t.Helper()
	waitFor(t, 10*time.Second, what+" judged", func() (bool, error) { return configSyncs(t, r) > done, nil })
	r.settle()
}
