package reloader_test

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

func dryRun(o *reloader.Options) { o.DryRun = true }

// recordWrites wraps a controller's transport and records every request that could change the
// cluster, but Events and the permission probe's self-reviews.
func recordWrites() (wrap func(http.RoundTripper) http.RoundTripper, writes func() []string) {
	var mu sync.Mutex
	var seen []string
	wrap = func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			p := r.URL.Path
			harmless := strings.Contains(p, "/events") || strings.Contains(p, "/apis/authorization.k8s.io/")
			if r.Method != http.MethodGet && r.Method != http.MethodHead && !harmless {
				mu.Lock()
				seen = append(seen, r.Method+" "+p)
				mu.Unlock()
			}
			return next.RoundTrip(r)
		})
	}
	return wrap, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// reloads is reloader_reloads_total{kind, result} of r.
func reloads(t *testing.T, r *running, kind, result string) float64 {
	t.Helper()
	var m dto.Metric
	if err := r.metrics.Reloads.WithLabelValues(kind, result).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// waitDryRuns waits until r has reported want dry-run reloads of kind.
func waitDryRuns(t *testing.T, r *running, kind string, want float64) {
	t.Helper()
	waitFor(t, 30*time.Second, kind+" dry-run reports", func() (bool, error) {
		return reloads(t, r, kind, metrics.ResultDryRun) >= want, nil
	})
}

// touchConfigMap labels ConfigMap name, its content unchanged: its dependents are judged again.
func touchConfigMap(t *testing.T, ns, name string) {
	t.Helper()
	patch := []byte(`{"metadata":{"labels":{"touched":"1"}}}`)
	if _, err := cluster.Client().CoreV1().ConfigMaps(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func missing(t *testing.T, err error, what string) {
	t.Helper()
	if !apierrors.IsNotFound(err) {
		t.Fatalf("%s: want none, got err %v", what, err)
	}
}

// A dry run over a sequence of changes reports each due reload once, as a WouldReload Event and
// in reloader_reloads_total{result="dry-run"}, and writes nothing: no workload patched, no Job
// recreated, no state and no hash key Secret. Beside a real reloader, which reloads (the
// positive control), it still writes nothing, and leaves the state that reloader wrote as it is.
func TestADryRunReportsEachReloadOnceAndWritesNothingAloneOrBesideARealReloader(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createSecret(t, ns, "db", map[string]string{"password": "0"})
	web := createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	db := createDeployment(t, ns, "db", 0, named("secret", "db"), nil)
	job := createJob(t, ns, "migrate", named("configmap", "app-config"))
	// Held by its window, it is not reported, and keeps app-config's change from being rolled out
	// everywhere: the state does not advance, and web stays due by it once its own version changes.
	createDeployment(t, ns, "held", 0, withAnnotations(named("configmap", "app-config"), map[string]string{policy.WindowAnnotation: closedWindow()}), nil)
	wrap, writes := recordWrites()
	dry := startController(t, ns, controllerOpts{wrap: wrap, tweak: dryRun})

	h1 := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitDryRuns(t, dry, "Deployment", 1)
	waitDryRuns(t, dry, "Job", 1)
	updateSecret(t, ns, "db", map[string]string{"password": "1"})
	waitDryRuns(t, dry, "Deployment", 2)
	h2 := updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	waitDryRuns(t, dry, "Deployment", 3)
	waitDryRuns(t, dry, "Job", 2)
	// Still due, never done: an edit of web judges it again, and reports nothing new.
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Labels = map[string]string{"touched": "1"} })
	done := configSyncs(t, dry)
	touchConfigMap(t, ns, "app-config")
	judgedAfter(t, dry, done, "app-config touched")
	if got := reloads(t, dry, "Deployment", metrics.ResultDryRun); got != 3 {
		t.Fatalf("dry-run reports of Deployments: %v, want 3 (each change once, none for held)", got)
	}
	// stakater beside it restarts web: the reported marker is kept over the new version, so the
	// revert to the first content is a change for web, as it would be for a real run.
	cm, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "app-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env,
			corev1.EnvVar{Name: "STAKATER_APP_CONFIG_CONFIGMAP", Value: confighash.StakaterConfigMap(cm)})
	})
	web = getDeployment(t, ns, "web")
	h0 := updateConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	waitDryRuns(t, dry, "Deployment", 4)
	waitDryRuns(t, dry, "Job", 3)
	waitFor(t, 30*time.Second, "a WouldReload Event per change on web", func() (bool, error) {
		msgs := strings.Join(eventMessages(t, ns, "web"), "\n")
		return strings.Contains(msgs, "WouldReload x1: Would reload for ConfigMap/app-config ("+confighash.SumOf(h1)[:8]+")") &&
			strings.Contains(msgs, "WouldReload x1: Would reload for ConfigMap/app-config ("+confighash.SumOf(h2)[:8]+")") &&
			strings.Contains(msgs, "WouldReload x1: Would reload for ConfigMap/app-config ("+confighash.SumOf(h0)[:8]+")"), nil
	})
	if got := getDeployment(t, ns, "web").Generation; got != web.Generation {
		t.Fatalf("web patched by a dry run: generation %d → %d", web.Generation, got)
	}
	if got := getDeployment(t, ns, "db").Generation; got != db.Generation {
		t.Fatalf("db patched by a dry run: generation %d → %d", db.Generation, got)
	}
	if got := getJob(t, ns, "migrate").UID; got != job.UID {
		t.Fatal("the Job was recreated by a dry run")
	}
	_, err = cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "reloader-state", metav1.GetOptions{})
	missing(t, err, "state ConfigMap after a dry run")
	_, err = cluster.Client().CoreV1().Secrets(ns).Get(context.Background(), reloader.DefaultHashKeySecret, metav1.GetOptions{})
	missing(t, err, "hash key Secret after a dry run")
	if w := writes(); len(w) != 0 {
		t.Fatalf("a dry run wrote: %v", w)
	}

	// Beside a real reloader: it reloads; the dry run still writes nothing.
	real := startController(t, ns, controllerOpts{})
	h3 := updateConfigMap(t, ns, "app-config", map[string]string{"v": "3"})
	waitEnv(t, ns, "web", cmVar, h3)
	settle(t)
	real.stop(t)
	state, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the real reloader wrote no state: %v", err)
	}
	gen := getDeployment(t, ns, "web").Generation
	before := reloads(t, dry, "Deployment", metrics.ResultDryRun)
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "4"})
	waitDryRuns(t, dry, "Deployment", before+1)
	settle(t)
	after, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != state.ResourceVersion {
		t.Fatalf("the state written by the real reloader changed under a dry run: %s → %s", state.ResourceVersion, after.ResourceVersion)
	}
	if got := getDeployment(t, ns, "web").Generation; got != gen {
		t.Fatalf("web patched by a dry run: generation %d → %d", gen, got)
	}
	if w := writes(); len(w) != 0 {
		t.Fatalf("a dry run wrote: %v", w)
	}
}

// A dry run and a real run over the same sequence of changes, in fresh namespaces that share a
// hash key, name the same (workload, config content) pairs: WouldReload for the one, Reloaded
// for the other.
func TestADryRunWouldReloadWhatARealRunReloads(t *testing.T) {
	t.Parallel()
	key := confighashKeySecret()
	would := reloadSet(t, key, true)
	did := reloadSet(t, key, false)
	if len(did) == 0 {
		t.Fatal("the real run reloaded nothing: the sequence tests nothing")
	}
	if !slices.Equal(would, did) {
		t.Fatalf("dry run would reload:\n  %s\nreal run reloaded:\n  %s", strings.Join(would, "\n  "), strings.Join(did, "\n  "))
	}
}

// confighashKeySecret is a hash key Secret with a fixed key, so that two namespaces hash a
// Secret's content alike.
func confighashKeySecret() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: reloader.DefaultHashKeySecret},
		Data: map[string][]byte{reloader.HashKeyField: []byte(strings.Repeat("k", confighash.MinKeyLen))}}
}

// reloadItem parses an item of a reload Event's message: "ConfigMap/app-config (1a2b3c4d)".
var reloadItem = regexp.MustCompile(`(ConfigMap|Secret)/[a-z0-9.-]+ \([^)]+\)`)

// reloadSet runs the sequence in a fresh namespace, with a dry run or a real controller, and
// returns the sorted "workload config (hash)" pairs its WouldReload or Reloaded Events name.
func reloadSet(t *testing.T, key *corev1.Secret, dry bool) []string {
	t.Helper()
	ns := cluster.NewNamespace(t)
	if _, err := cluster.Client().CoreV1().Secrets(ns).Create(context.Background(), key.DeepCopy(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createConfigMap(t, ns, "unread", map[string]string{"v": "0"})
	createSecret(t, ns, "db", map[string]string{"password": "0"})
	auto := map[string]string{"reloader.stakater.com/auto": "true"}
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	createDeployment(t, ns, "api", 0, auto, func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}}
	})
	createDeployment(t, ns, "plain", 0, nil, func(s *corev1.PodSpec) { // reads, but asks for no reload
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}
	})
	createJob(t, ns, "migrate", named("secret", "db"))
	o := controllerOpts{}
	result := metrics.ResultSuccess
	reason := "Reloaded"
	if dry {
		o.tweak, result, reason = dryRun, metrics.ResultDryRun, "WouldReload"
	}
	r := startController(t, ns, o)
	steps := []func(){
		func() { updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"}) },
		func() { updateSecret(t, ns, "db", map[string]string{"password": "1"}) },
		func() { updateConfigMap(t, ns, "unread", map[string]string{"v": "1"}) },
		func() { updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"}) },
		func() { updateConfigMap(t, ns, "app-config", map[string]string{"v": "0"}) },
	}
	for i, step := range steps {
		done := configSyncs(t, r)
		step()
		judgedAfter(t, r, done, "step "+string(rune('1'+i)))
	}
	total := func() float64 { return reloads(t, r, "Deployment", result) + reloads(t, r, "Job", result) }
	var out []string
	waitFor(t, 30*time.Second, "an Event per reload", func() (bool, error) {
		out = out[:0]
		list, err := cluster.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		n := 0
		for _, e := range list.Items {
			if e.Reason != reason {
				continue
			}
			n += int(max(e.Count, 1))
			for _, item := range reloadItem.FindAllString(e.Message, -1) {
				out = append(out, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+" "+item)
			}
		}
		return float64(n) == total(), nil
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// A controller's write of a workload's status is no other writer's version: the dry run keeps
// judging the workload as its reported patch left it, as a real run judges the patched one. Here
// a revert is a change for web, whose reported marker holds the content before it; held by its
// window, another dependent keeps the state from advancing, so only that marker says so. (A
// Job's status written between two changes made the revert go unreported, now and then.)
func TestADryRunKeepsItsReportedPatchOverAStatusUpdate(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	createDeployment(t, ns, "held", 0, withAnnotations(named("configmap", "app-config"), map[string]string{policy.WindowAnnotation: closedWindow()}), nil)
	dry := startController(t, ns, controllerOpts{tweak: dryRun})

	updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitDryRuns(t, dry, "Deployment", 1)
	settle(t)
	web := getDeployment(t, ns, "web")
	web.Status.Conditions = append(web.Status.Conditions, appsv1.DeploymentCondition{
		Type: "Touched", Status: corev1.ConditionTrue, Reason: "Test", LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now()})
	after, err := cluster.Client().AppsV1().Deployments(ns).UpdateStatus(context.Background(), web, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Generation != web.Generation {
		t.Fatalf("the status update changed the generation: %d → %d", web.Generation, after.Generation)
	}
	settle(t)
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	waitDryRuns(t, dry, "Deployment", 2)
}
