package reloader_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/reloader/reloader/internal/kube"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// readOnly fails the test on any request that could change the cluster: explain sends none
// (a SelfSubjectAccessReview, the permission probe, stores nothing).
type readOnly struct {
	t    *testing.T
	next http.RoundTripper
}

func (r readOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && !strings.Contains(req.URL.Path, "/apis/authorization.k8s.io/") {
		r.t.Errorf("explain sent %s %s", req.Method, req.URL.Path)
		return nil, fmt.Errorf("explain writes nothing: %s %s", req.Method, req.URL.Path)
	}
	return r.next.RoundTrip(req)
}

// explainNow is what reloader explain says of workload kind/name in ns, from a controller built
// as explain builds it (DryRun, informers on ns only); tweak adjusts its options.
func explainNow(t *testing.T, ns, kind, name string, config *policy.ConfigRef, tweak func(*reloader.Options)) reloader.Explanation {
	t.Helper()
	opts := reloader.Options{
		Namespace: ns, StateNamespace: ns, StateName: "reloader-state", Annotations: policy.DefaultAnnotations(),
		Log: slog.New(slog.DiscardHandler), Metrics: metrics.New("test"), DryRun: true, ListNamespace: ns,
	}
	if tweak != nil {
		tweak(&opts)
	}
	cfg := rest.CopyConfig(cluster.Config)
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper { return readOnly{t, next} })
	clients, err := kube.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := reloader.New(clients, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := ctrl.Observe(ctx); err != nil {
		t.Fatal(err)
	}
	e, err := ctrl.Explainer().Explain(ctx, reloader.Query{Kind: kind, Namespace: ns, Name: name, Config: config})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// configOf is e's explanation of config kind/name.
func configOf(t *testing.T, e reloader.Explanation, kind, name string) reloader.Config {
	t.Helper()
	for _, c := range e.Configs {
		if c.Kind == kind && c.Name == name {
			return c
		}
	}
	t.Fatalf("no config %s/%s in the explanation: %+v", kind, name, e)
	return reloader.Config{}
}

// wantWords fails unless s holds every part.
func wantWords(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%s %q does not say %q", what, s, p)
		}
	}
}

// generation is the generation of workload kind/name (Deployment or StatefulSet).
func generation(t *testing.T, kind, ns, name string) int64 {
	t.Helper()
	if kind == "StatefulSet" {
		return getStatefulSet(t, ns, name).Generation
	}
	return getDeployment(t, ns, name).Generation
}

// agrees starts a controller on the state explain read and fails unless it reloads the
// workload exactly when explain said it reloads now; it returns the running controller.
func agrees(t *testing.T, ns, kind, name string, e reloader.Explanation) *running {
	t.Helper()
	before := generation(t, kind, ns, name)
	r := startController(t, ns, controllerOpts{})
	settle(t)
	reloaded := generation(t, kind, ns, name) != before
	if want := e.Next == "reload"; reloaded != want {
		t.Fatalf("explain said %q (%s), but the controller reloaded: %t", e.Next, e.Decision, reloaded)
	}
	return r
}

// wantReloadNow is a positive control: explain now says the workload reloads now, and a
// controller started on that state does.
func wantReloadNow(t *testing.T, ns, kind, name, after string) reloader.Explanation {
	t.Helper()
	e := explainNow(t, ns, kind, name, nil, nil)
	agrees(t, ns, kind, name, e)
	if e.Next != "reload" {
		t.Fatalf("%s: %q, %s", after, e.Next, e.Decision)
	}
	return e
}

// recorded runs a controller until the state holds what it found, then stops it: the state a
// reloader leaves behind, for explain to read while none runs.
func recorded(t *testing.T, ns string) {
	t.Helper()
	r := startController(t, ns, controllerOpts{})
	settle(t)
	r.stop(t)
}

func TestExplainSaysAChangedConfigIsDueAndTheControllerReloads(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}
	})
	recorded(t, ns)
	e := explainNow(t, ns, "Deployment", "web", nil, nil)
	if e.Next != "up-to-date" || configOf(t, e, "ConfigMap", "app-config").Reload {
		t.Fatalf("before the change: %q, %s", e.Next, e.Decision)
	}
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	e = explainNow(t, ns, "Deployment", "web", nil, nil)
	c := configOf(t, e, "ConfigMap", "app-config")
	if e.Next != "reload" || !c.Reload || !e.Watched {
		t.Fatalf("after the change: %q, %s", e.Next, e.Decision)
	}
	wantWords(t, "the decision", c.Decision, "due: reloads now")
	// The first controller noted what the unmarked pods ran (reloader/runs/strips.go): that note decides.
	wantWords(t, "the reason", c.Why, policy.StripStale.String())
	if len(c.Read) != 1 || c.Read[0].How != policy.ReadEnvFrom || c.Read[0].Container != "app" {
		t.Errorf("read as %+v, want envFrom in container app", c.Read)
	}
	if !strings.HasPrefix(hash, c.Hash) && !strings.Contains(hash, c.Hash) {
		t.Errorf("hash %q is not the content's (%s)", c.Hash, hash)
	}
	agrees(t, ns, "Deployment", "web", e)
	waitEnv(t, ns, "web", cmVar, hash)
}

func TestExplainSaysWhenAClosedWindowOpensAndTheControllerWaits(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	window := closedWindow()
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"), map[string]string{policy.WindowAnnotation: window}), nil)
	recorded(t, ns)
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	e := explainNow(t, ns, "Deployment", "web", nil, nil)
	if e.Next != "held-by-gate" || e.Gate.WindowOpens == nil {
		t.Fatalf("%q, %s, gate %+v", e.Next, e.Decision, e.Gate)
	}
	wantWords(t, "the decision", configOf(t, e, "ConfigMap", "app-config").Decision, "due: reloads at ", fmt.Sprintf("when window %q opens", window))
	r := agrees(t, ns, "Deployment", "web", e)
	r.stop(t)

	// Positive control: without the window, explain says it reloads now, and it does.
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { delete(d.Annotations, policy.WindowAnnotation) })
	wantReloadNow(t, ns, "Deployment", "web", "without the window")
}

func TestExplainSaysWhenTheMinimumIntervalEndsAndTheControllerWaits(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	last := time.Now().UTC().Format(time.RFC3339Nano)
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"),
		map[string]string{policy.MinIntervalAnnotation: "1h", policy.LastReloadAnnotation: last}), nil)
	recorded(t, ns)
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	e := explainNow(t, ns, "Deployment", "web", nil, nil)
	if e.Next != "held-by-gate" || e.Gate.NextAllowed == nil || e.Gate.MinInterval != "1h0m0s" {
		t.Fatalf("%q, %s, gate %+v", e.Next, e.Decision, e.Gate)
	}
	wantWords(t, "the decision", e.Decision, "reloads at ", "1h0m0s after the last reload (minimum interval)")
	agrees(t, ns, "Deployment", "web", e).stop(t)

	// Positive control: with the interval gone, explain says it reloads now, and it does.
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { delete(d.Annotations, policy.MinIntervalAnnotation) })
	wantReloadNow(t, ns, "Deployment", "web", "without the interval")
}

func TestExplainSaysAPausePeriodHoldsAndUntilWhen(t *testing.T) {
	t.Parallel()
	const pausePeriod = "deployment.reloader.stakater.com/pause-period"
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createStatefulSetNamed(t, ns, "db", withAnnotations(named("configmap", "app-config"), map[string]string{pausePeriod: "1h"}))
	recorded(t, ns)
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	e := explainNow(t, ns, "StatefulSet", "db", nil, nil)
	if e.Next != "held-by-gate" {
		t.Fatalf("%q, %s", e.Next, e.Decision)
	}
	wantWords(t, "the decision", e.Decision, "a pause period of 1h0m0s starts now; it reloads at ")
	r := agrees(t, ns, "StatefulSet", "db", e) // the pause starts: paused-at, no reload
	waitFor(t, 10*time.Second, "the pause started", func() (bool, error) {
		return getStatefulSet(t, ns, "db").Annotations["deployment.reloader.stakater.com/paused-at"] != "", nil
	})
	r.stop(t)
	e = explainNow(t, ns, "StatefulSet", "db", nil, nil)
	if e.Next != "held-by-gate" || e.Gate.PauseUntil == nil {
		t.Fatalf("during the pause: %q, %s, gate %+v", e.Next, e.Decision, e.Gate)
	}
	wantWords(t, "the decision", e.Decision, "held by the pause period of 1h0m0s until "+e.Gate.PauseUntil.Format("2006-01-02 15:04:05 UTC"))
	agrees(t, ns, "StatefulSet", "db", e).stop(t)

	// Positive control: without the pause period, explain says it reloads now, and it does.
	s := getStatefulSet(t, ns, "db")
	delete(s.Annotations, pausePeriod)
	if _, err := cluster.Client().AppsV1().StatefulSets(ns).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantReloadNow(t, ns, "StatefulSet", "db", "without the pause period")
}

func TestExplainSaysAContentRolledBackIsHeldUntilANewContent(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	followedDeployment(t, ns, map[string]string{"configmap.reloader.stakater.com/reload": "app", policy.RollbackAnnotation: "true"})
	r := startController(t, ns, controllerOpts{})
	rollbackScenario(t, ns, func() {})
	wantHeld(t, ns)
	settle(t)
	r.stop(t)
	e := explainNow(t, ns, "Deployment", "web", nil, nil)
	c := configOf(t, e, "ConfigMap", "app")
	if !c.HeldAfterRollback || c.Reload || c.RolledBackAt == nil {
		t.Fatalf("not said held: %+v", c)
	}
	wantWords(t, "the decision", c.Decision, "held after a rollback", "a new content ends the hold")
	agrees(t, ns, "Deployment", "web", e).stop(t)

	// Positive control: a new content ends the hold; explain says it reloads now, and it does.
	updateConfigMap(t, ns, "app", fixedConfig)
	e = explainNow(t, ns, "Deployment", "web", nil, nil)
	if e.Next != "reload" {
		t.Fatalf("after a new content: %q, %s", e.Next, e.Decision)
	}
	startController(t, ns, controllerOpts{})
	waitEnv(t, ns, "web", appVar, hashOfData(fixedConfig))
}

func TestExplainSaysContentThatDoesNotValidateHoldsTheReload(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Annotations: map[string]string{policy.ValidateAnnotation: "app.json=json"}},
		Data: map[string]string{"app.json": `{"v": 0}`}}
	if _, err := cluster.Client().CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}}
	})
	recorded(t, ns)
	updateConfigMap(t, ns, "app-config", map[string]string{"app.json": `{"v": `})
	e := explainNow(t, ns, "Deployment", "web", nil, nil)
	c := configOf(t, e, "ConfigMap", "app-config")
	if c.Invalid == "" || c.Reload {
		t.Fatalf("not said invalid: %+v", c)
	}
	wantWords(t, "the decision", c.Decision, "held: its content does not validate", "app.json")
	agrees(t, ns, "Deployment", "web", e).stop(t)

	// Positive control: fixed, explain says it reloads now, and it does.
	updateConfigMap(t, ns, "app-config", map[string]string{"app.json": `{"v": 1}`})
	wantReloadNow(t, ns, "Deployment", "web", "fixed")
}

func TestExplainSaysAMisspeltKeyIsNotReadAndNamesTheNearest(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, map[string]string{"configmap.reloader.stakater.com/reloads": "app-config"}, func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}
	})
	recorded(t, ns)
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	e := explainNow(t, ns, "Deployment", "web", nil, nil)
	wantWords(t, "the problems", strings.Join(e.Problems, "; "), "configmap.reloader.stakater.com/reloads is not one the reloader reads; did you mean configmap.reloader.stakater.com/reload?")
	c := configOf(t, e, "ConfigMap", "app-config")
	wantWords(t, "the decision", c.Decision, "not reloaded: the pod spec reads it, but no reload annotation asks for it")
	agrees(t, ns, "Deployment", "web", e).stop(t)

	// Positive control: spelt right, a change is due; explain says it reloads now, and it does.
	// (The controller above recorded the change no workload reloads on: nothing is due for it.)
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) {
		d.Annotations = named("configmap", "app-config")
	})
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	if e = wantReloadNow(t, ns, "Deployment", "web", "spelt right"); len(e.Problems) != 0 {
		t.Errorf("spelt right, problems: %q", e.Problems)
	}
}

func TestExplainSaysAConfigNeitherReadNorNamedReloadsNothing(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createConfigMap(t, ns, "other", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	recorded(t, ns)
	updateConfigMap(t, ns, "other", map[string]string{"v": "1"})
	other := &policy.ConfigRef{Kind: policy.KindConfigMap, Name: "other"}
	e := explainNow(t, ns, "Deployment", "web", other, nil)
	if len(e.Configs) != 1 {
		t.Fatalf("configs %+v, want other alone", e.Configs)
	}
	wantWords(t, "the decision", e.Configs[0].Decision, `not reloaded: ConfigMap "other" is neither read by the pod spec nor named in a reload annotation`)
	agrees(t, ns, "Deployment", "web", e).stop(t)

	// Positive control: named, a change is due; explain says it reloads now, and it does.
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Annotations = named("configmap", "app-config,other") })
	updateConfigMap(t, ns, "other", map[string]string{"v": "2"})
	e = explainNow(t, ns, "Deployment", "web", other, nil)
	agrees(t, ns, "Deployment", "web", e)
	if e.Next != "reload" || !e.Configs[0].Reload {
		t.Fatalf("named: %q, %s", e.Next, e.Decision)
	}
}

func TestExplainSaysANamespaceOutsideTheSelectionIsNotWatched(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	recorded(t, ns)
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	allBut := func(o *reloader.Options) { o.Namespace, o.NamespacesToIgnore = "", []string{ns} }
	e := explainNow(t, ns, "Deployment", "web", nil, allBut)
	if e.Watched || e.Next != reloader.NextNotWatched {
		t.Fatalf("said watched: %+v", e)
	}
	wantWords(t, "the decision", e.Decision, fmt.Sprintf("not reloaded: the reloader does not watch namespace %q", ns))

	// Positive control: watching it, explain says it reloads now, and it does.
	if e = wantReloadNow(t, ns, "Deployment", "web", "watched"); !e.Watched {
		t.Errorf("watched, said not: %+v", e)
	}
}

func TestExplainSaysAMarkerStrippedByHelmUpgradeIsNotAChange(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	r := startController(t, ns, controllerOpts{})
	settle(t)
	hashB := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitEnv(t, ns, "web", cmVar, hashB)
	settle(t)
	stripMarker(t, ns, "web")
	settle(t)
	r.stop(t)
	e := explainNow(t, ns, "Deployment", "web", nil, nil)
	c := configOf(t, e, "ConfigMap", "app-config")
	if len(c.Markers) != 0 || c.Reload {
		t.Fatalf("after the strip: %+v", c)
	}
	wantWords(t, "the decision", c.Decision, "up to date: the workload carries no marker of it")
	agrees(t, ns, "Deployment", "web", e).stop(t)

	// Positive control: a change after the strip; explain says it reloads now, and it does.
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	wantReloadNow(t, ns, "Deployment", "web", "after a change")
}

// markersOf are Deployment name's markers, by config.
func markersOf(t *testing.T, ns, name string) map[string][]policy.MarkerCopy {
	t.Helper()
	d := getDeployment(t, ns, name)
	out := map[string][]policy.MarkerCopy{}
	for _, c := range []string{"app-config", "extra", "other"} {
		out[c] = policy.MarkerCopies(d.Annotations, &d.Spec.Template, policy.ConfigRef{Kind: policy.KindConfigMap, Name: c})
	}
	return out
}

// Explain and the controller agree config by config: over workloads in several states at once,
// a controller started on the state explain read rewrites the marker of exactly the configs
// explain said reload now, and of no other.
func TestExplainAgreesWithTheControllerConfigByConfig(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	for _, c := range []string{"app-config", "extra", "other"} {
		createConfigMap(t, ns, c, map[string]string{"v": "0"})
	}
	reads := func(names ...string) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			for _, n := range names {
				s.Containers[0].EnvFrom = append(s.Containers[0].EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: n}}})
			}
		}
	}
	states := map[string]map[string]string{
		"both":    named("configmap", "app-config,extra"),                                                                        // one config changes, one does not
		"auto":    {"reloader.stakater.com/auto": "true"},                                                                        // reads app-config and extra
		"window":  withAnnotations(named("configmap", "app-config"), map[string]string{policy.WindowAnnotation: closedWindow()}), // held
		"typo":    {"configmap.reloader.stakater.com/reloads": "app-config"},                                                     // reads it, reloads on nothing
		"other":   named("configmap", "other"),                                                                                   // names a config that stays
		"pattern": named("configmap", "app-.*"),                                                                                  // a pattern
	}
	for name, a := range states {
		createDeployment(t, ns, name, 0, a, reads("app-config", "extra"))
	}
	recorded(t, ns)
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	said := map[string]reloader.Explanation{}
	before := map[string]map[string][]policy.MarkerCopy{}
	for name := range states {
		said[name] = explainNow(t, ns, "Deployment", name, nil, nil)
		before[name] = markersOf(t, ns, name)
	}
	if said["both"].Next != "reload" || said["window"].Next != "held-by-gate" || said["typo"].Next != "up-to-date" {
		t.Fatalf("positive control: both %q, window %q, typo %q", said["both"].Next, said["window"].Next, said["typo"].Next)
	}
	startController(t, ns, controllerOpts{})
	settle(t)
	for name, e := range said {
		after := markersOf(t, ns, name)
		for _, c := range e.Configs {
			changed := !slices.Equal(before[name][c.Name], after[c.Name])
			if reloads := c.Reload && e.Next == "reload"; changed != reloads {
				t.Errorf("%s, %s/%s: explain said %q (%s); its marker changed: %t", name, c.Kind, c.Name, e.Next, c.Decision, changed)
			}
		}
	}
}
