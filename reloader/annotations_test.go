package reloader_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// config is a ConfigMap or Secret a scenario creates, with data {v: "0"}.
type config struct {
	kind        string // "ConfigMap" or "Secret"
	name        string
	annotations map[string]string
	labels      map[string]string
}

// scenario: a Deployment "web" and some configs; one config changes; did web reload?
type scenario struct {
	name        string
	tweak       func(*reloader.Options)
	annotations map[string]string // on the Deployment
	template    map[string]string // on its pod template
	spec        func(*corev1.PodSpec)
	configs     []config
	change      string // name of the config that changes (kind taken from configs)
	reload      bool
	// control adds Deployment "control", which names the changed config and must reload: the
	// positive control of a row where web must not and nothing else reads that config (an unread
	// config has no state entry to show that its change was judged).
	control bool
}

func cmRef(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }

func envFromCM(names ...string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		for _, n := range names {
			s.Containers[0].EnvFrom = append(s.Containers[0].EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cmRef(n)}})
		}
	}
}

func envFromSecret(name string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = append(s.Containers[0].EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: cmRef(name)}})
	}
}

func both(fs ...func(*corev1.PodSpec)) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		for _, f := range fs {
			f(s)
		}
	}
}

func renamed(f func(*policy.Annotations)) func(*reloader.Options) {
	return func(o *reloader.Options) { f(&o.Annotations) }
}

var (
	cmA     = config{kind: "ConfigMap", name: "a"}
	cmB     = config{kind: "ConfigMap", name: "b"}
	secretS = config{kind: "Secret", name: "s"}
	matched = config{kind: "ConfigMap", name: "a", annotations: map[string]string{"reloader.stakater.com/match": "true"}}
	ignored = config{kind: "ConfigMap", name: "a", annotations: map[string]string{"reloader.stakater.com/ignore": "true"}}
)

// TestAnnotations runs a few rows of each mode end to end; policy's table tests cover every
// annotation row.
func TestAnnotations(t *testing.T) {
	t.Parallel()
	auto := map[string]string{"reloader.stakater.com/auto": "true"}
	scenarios := []scenario{
		{name: "named configmap", annotations: named("configmap", "a"), configs: []config{cmA}, change: "a", reload: true},
		{name: "named secret", annotations: named("secret", "s"), configs: []config{secretS}, change: "s", reload: true},
		{name: "named on the pod template", template: named("configmap", "a"), configs: []config{cmA}, change: "a", reload: true},
		{name: "unrelated config changes", annotations: named("configmap", "a"), configs: []config{cmA, cmB}, change: "b", control: true},
		{name: "auto", annotations: auto, spec: envFromCM("a"), configs: []config{cmA}, change: "a", reload: true},
		{name: "auto secret", annotations: auto, spec: envFromSecret("s"), configs: []config{secretS}, change: "s", reload: true},
		{name: "search with match", annotations: map[string]string{"reloader.stakater.com/search": "true"}, spec: envFromCM("a"), configs: []config{matched}, change: "a", reload: true},
		{name: "search without match", annotations: map[string]string{"reloader.stakater.com/search": "true"}, spec: envFromCM("a"), configs: []config{cmA}, change: "a"},
		{name: "ignore on the config", annotations: named("configmap", "a"), configs: []config{ignored}, change: "a"},
		{name: "exclude from auto", annotations: map[string]string{"reloader.stakater.com/auto": "true", "configmaps.exclude.reloader.stakater.com/reload": "a"}, spec: envFromCM("a", "b"), configs: []config{cmA, cmB}, change: "a", control: true},
		{name: "--configmap-annotation", tweak: renamed(func(a *policy.Annotations) { a.ConfigMap = "example.com/cms" }),
			annotations: map[string]string{"example.com/cms": "a"}, configs: []config{cmA}, change: "a", reload: true},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			runScenario(t, sc)
		})
	}
}

// runScenario changes one config and checks whether web reloaded. A config's new hash in the
// state after the stop shows the controller judged every dependent and found none due: that is
// the observable end of a "nothing happens" row. A config no workload reads has no entry: such a
// row adds control, whose reload shows the change was judged.
func runScenario(t *testing.T, sc scenario) {
	ns := cluster.NewNamespace(t)
	kinds := map[string]string{}
	for _, c := range sc.configs {
		createConfig(t, ns, c)
		kinds[c.name] = c.kind
	}
	createDeploymentFrom(t, ns, "web", func(d *appsv1.Deployment) {
		d.Annotations, d.Spec.Template.Annotations = sc.annotations, sc.template
		if sc.spec != nil {
			sc.spec(&d.Spec.Template.Spec)
		}
	})
	if sc.control {
		createDeployment(t, ns, "control", 0, named(strings.ToLower(kinds[sc.change]), sc.change), nil)
	}
	r := startController(t, ns, controllerOpts{tweak: sc.tweak})
	r.settle()
	before := getDeployment(t, ns, "web").Generation
	var control int64
	if sc.control {
		control = getDeployment(t, ns, "control").Generation
	}
	hash := changeConfig(t, ns, kinds[sc.change], sc.change)
	if sc.reload {
		waitFor(t, 10*time.Second, "web to reload", func() (bool, error) { return getDeployment(t, ns, "web").Generation > before, nil })
	}
	if sc.control {
		waitFor(t, 10*time.Second, "control to reload", func() (bool, error) { return getDeployment(t, ns, "control").Generation > control, nil })
	}
	r.settle()
	if got := stoppedEntry(t, r, ns, "v1."+kinds[sc.change]+"_"+sc.change); got != hash {
		t.Fatalf("the state holds %q after the stop, want the new hash %q", got, hash)
	}
	want := before
	if sc.reload {
		want++
	}
	if got := getDeployment(t, ns, "web").Generation; got != want {
		t.Fatalf("generation %d → %d, want %d (reload=%v)", before, got, want, sc.reload)
	}
}

func createConfig(t *testing.T, ns string, c config) {
	t.Helper()
	meta := metav1.ObjectMeta{Name: c.name, Annotations: c.annotations, Labels: c.labels}
	var err error
	if c.kind == "Secret" {
		_, err = cluster.Client().CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"v": "0"}}, metav1.CreateOptions{})
	} else {
		_, err = cluster.Client().CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"v": "0"}}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// changeConfig sets data v to "1" and returns the new content hash.
func changeConfig(t *testing.T, ns, kind, name string) string {
	t.Helper()
	if kind == "Secret" {
		return updateSecret(t, ns, name, map[string]string{"v": "1"})
	}
	return updateConfigMap(t, ns, name, map[string]string{"v": "1"})
}
