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

// TestStakaterAnnotationValues: values stakater users write, with stakater's meaning.
func TestStakaterAnnotationValues(t *testing.T) {
	t.Parallel()
	reloadAll := renamed(func(a *policy.Annotations) { a.ReloadAll = true })
	scenarios := []scenario{
		{name: "auto True", annotations: map[string]string{"reloader.stakater.com/auto": "True"}, spec: envFromCM("a"), configs: []config{cmA}, change: "a", reload: true},
		{name: "configmap auto 1", annotations: map[string]string{"configmap.reloader.stakater.com/auto": "1"}, spec: envFromCM("a"), configs: []config{cmA}, change: "a", reload: true},
		{name: "search True is not search", annotations: map[string]string{"reloader.stakater.com/search": "True"}, spec: envFromCM("a"), configs: []config{matched}, change: "a", control: true},
		{name: "--auto-reload-all without annotations", tweak: reloadAll, spec: envFromCM("a"), configs: []config{cmA}, change: "a", reload: true},
		{name: "--auto-reload-all, a Secret", tweak: reloadAll, spec: envFromSecret("s"), configs: []config{secretS}, change: "s", reload: true},
		{name: "--auto-reload-all, opted out", tweak: reloadAll, annotations: map[string]string{"reloader.stakater.com/auto": "false"}, spec: envFromCM("a"), configs: []config{cmA}, change: "a", control: true},
		{name: "--auto-reload-all, unreferenced", tweak: reloadAll, spec: envFromCM("b"), configs: []config{cmA, cmB}, change: "a", control: true},
		{name: "--ignore-annotation", tweak: renamed(func(a *policy.Annotations) { a.Ignore = "example.com/ignore" }), annotations: named("configmap", "a"),
			configs: []config{{kind: "ConfigMap", name: "a", annotations: map[string]string{"example.com/ignore": "true"}}}, change: "a"},
		{name: "--ignore-annotation leaves the stakater key alone", tweak: renamed(func(a *policy.Annotations) { a.Ignore = "example.com/ignore" }), annotations: named("configmap", "a"),
			configs: []config{ignored}, change: "a", reload: true},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			runScenario(t, sc)
		})
	}
}

// A regular expression in a reload annotation reloads on every config whose whole name it
// matches, existing or created later, and on nothing else.
func TestReloadAnnotationPatternReloadsOnMatchingConfigs(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	for _, n := range []string{"app-one", "other", "my-app-two"} {
		createConfigMap(t, ns, n, map[string]string{"v": "0"})
	}
	createSecret(t, ns, "app-secret", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-.*"), nil)
	r := startController(t, ns, controllerOpts{})
	r.settle()
	gen := getDeployment(t, ns, "web").Generation
	hash := updateConfigMap(t, ns, "app-one", map[string]string{"v": "1"})
	waitEnv(t, ns, "web", "_RELOADER_-configmap-app-one", hash)
	wantReloads(t, ns, "web", gen, 1)

	// Not matched: not anchored at the start, another kind, another name. Each is judged (a
	// config sync finishes after it) and reloads nothing.
	for _, change := range []struct{ kind, name string }{{"ConfigMap", "my-app-two"}, {"Secret", "app-secret"}, {"ConfigMap", "other"}} {
		done := configSyncs(t, r)
		changeConfig(t, ns, change.kind, change.name)
		judgedAfter(t, r, done, change.name+"'s change")
	}
	wantReloads(t, ns, "web", gen, 1)

	// A config created later that matches, then changed: one reload.
	createConfigMap(t, ns, "app-late", map[string]string{"v": "0"})
	wantReloads(t, ns, "web", gen, 1) // its creation is not a change
	hash = updateConfigMap(t, ns, "app-late", map[string]string{"v": "1"})
	waitEnv(t, ns, "web", "_RELOADER_-configmap-app-late", hash)
	wantReloads(t, ns, "web", gen, 2)
	if !strings.Contains(r.log.String(), "reloaded workload") || strings.Contains(r.log.String(), "does not exist") {
		t.Fatalf("log:\n%s", r.log.String())
	}
}

// A restart with a pattern annotation restarts nothing, and a change made while down is caught
// up once.
func TestReloadAnnotationPatternCatchesUpAfterRestart(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-one", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-[a-z]+"), nil)
	r := startController(t, ns, controllerOpts{})
	hash := updateConfigMap(t, ns, "app-one", map[string]string{"v": "1"})
	waitEnv(t, ns, "web", "_RELOADER_-configmap-app-one", hash)
	r.settle()
	r.stop(t)
	gen := getDeployment(t, ns, "web").Generation
	startController(t, ns, controllerOpts{})
	wantReloads(t, ns, "web", gen, 0)
	r.stop(t)
}

// An invalid expression gets one Warning Event saying so; the valid names beside it still work,
// and a missing plain name is still reported as missing, not as malformed.
func TestInvalidReloadPatternIsReportedOnceAndMissingNamesAsMissing(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "a", map[string]string{"v": "0"})
	createDeployment(t, ns, "broken", 0, named("configmap", "a,app-(,gone"), nil)
	r := startController(t, ns, controllerOpts{})
	var msg string
	waitFor(t, 10*time.Second, "an InvalidAnnotation event on broken", func() (bool, error) {
		list, err := cluster.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=InvalidAnnotation,involvedObject.name=broken"})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		msg = list.Items[0].Message
		return true, nil
	})
	hash := updateConfigMap(t, ns, "a", map[string]string{"v": "1"})
	waitEnv(t, ns, "broken", "_RELOADER_-configmap-a", hash)
	settle(t)
	if n := countEvents(t, ns, "broken", "InvalidAnnotation"); n != 1 {
		t.Fatalf("%d InvalidAnnotation events, want 1: %q", n, eventMessages(t, ns, "broken"))
	}
	if !strings.Contains(msg, `"app-(" is neither a ConfigMap name nor a valid regular expression`) ||
		!strings.Contains(msg, `ConfigMap "gone" named in a reload annotation does not exist`) {
		t.Fatalf("message does not say what is wrong with each: %s", msg)
	}
	log := r.log.String()
	if !strings.Contains(log, "malformed reload annotation") || !strings.Contains(log, "a config named in a reload annotation does not exist") {
		t.Fatalf("log does not tell malformed from missing:\n%s", log)
	}
	for line := range strings.Lines(log) {
		if strings.Contains(line, "malformed") && strings.Contains(line, "gone") {
			t.Fatalf("a missing config logged as malformed: %s", line)
		}
	}
}

// Seed 004: match and kind on a workload mean nothing; one Warning says what match means. The
// workload's auto annotation still works.
func TestMatchAndKindOnAWorkloadAreExplained(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "a", map[string]string{"v": "0"})
	createDeploymentFrom(t, ns, "selective-app", func(d *appsv1.Deployment) {
		d.Annotations = map[string]string{"reloader.stakater.com/auto": "true", "reloader.stakater.com/search": "true",
			"reloader.stakater.com/match": "configmap", "reloader.stakater.com/kind": "configmap"}
		envFromCM("a")(&d.Spec.Template.Spec)
	})
	startController(t, ns, controllerOpts{})
	hash := updateConfigMap(t, ns, "a", map[string]string{"v": "1"})
	waitEnv(t, ns, "selective-app", "_RELOADER_-configmap-a", hash)
	settle(t)
	msgs := eventMessages(t, ns, "selective-app")
	if n := countEvents(t, ns, "selective-app", "InvalidAnnotation"); n != 1 {
		t.Fatalf("%d InvalidAnnotation events, want 1: %q", n, msgs)
	}
	all := strings.Join(msgs, "\n")
	if !strings.Contains(all, "it goes on a ConfigMap or Secret") || !strings.Contains(all, `reloader.stakater.com/kind="configmap" means nothing`) {
		t.Fatalf("the warning does not say what match and kind mean: %q", msgs)
	}
}

// With --reload-on-create, a plain name's creation reloads; a pattern has no name to wait for,
// so the creation of a config only a pattern matches, and the pod spec does not read, does not (docs/annotations.md), and its first change does.
func TestPatternMatchedCreationWithReloadOnCreate(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createDeployment(t, ns, "plain", 0, named("configmap", "app-one"), nil)
	createDeployment(t, ns, "pattern", 0, named("configmap", "pat-.*"), nil)
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.ReloadOnCreate = true }})
	settle(t)
	plain, pattern := getDeployment(t, ns, "plain").Generation, getDeployment(t, ns, "pattern").Generation
	createConfigMap(t, ns, "pat-one", map[string]string{"v": "0"})
	createConfigMap(t, ns, "app-one", map[string]string{"v": "0"})
	waitFor(t, 10*time.Second, "the plain name's creation to reload", func() (bool, error) {
		return getDeployment(t, ns, "plain").Generation > plain, nil
	})
	wantReloads(t, ns, "pattern", pattern, 0)
	hash := updateConfigMap(t, ns, "pat-one", map[string]string{"v": "1"})
	waitEnv(t, ns, "pattern", "_RELOADER_-configmap-pat-one", hash)
	wantReloads(t, ns, "pattern", pattern, 1)
}

// With --reload-on-delete, the deletion of a config the pod spec reads reloads a workload whose
// reload annotation matches it by a pattern, as one that names it (checker seed 1046@8: the
// cache no longer lists a deleted config among those the pattern matches). Positive control: the
// named workload.
func TestAPatternMatchedConfigsDeletionReloadsWithReloadOnDelete(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	reads := func(name string) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}
		}
	}
	createConfigMap(t, ns, "app-one", map[string]string{"v": "0"})
	createConfigMap(t, ns, "pat-one", map[string]string{"v": "0"})
	createDeployment(t, ns, "plain", 0, named("configmap", "app-one"), reads("app-one"))
	createDeployment(t, ns, "pattern", 0, named("configmap", "pat-.*"), reads("pat-one"))
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.ReloadOnDelete = true }})
	settle(t)
	plain, pattern := getDeployment(t, ns, "plain").Generation, getDeployment(t, ns, "pattern").Generation
	deleteConfigMap(t, ns, "app-one")
	deleteConfigMap(t, ns, "pat-one")
	for name, before := range map[string]int64{"plain": plain, "pattern": pattern} {
		waitFor(t, 30*time.Second, name+" reloaded for the deletion", func() (bool, error) {
			return getDeployment(t, ns, name).Generation > before, nil
		})
	}
	wantReloads(t, ns, "plain", plain, 1)
	wantReloads(t, ns, "pattern", pattern, 1)
}

// With --reload-on-create, so does the creation of a config the pod spec reads that the pattern
// matches (docs/annotations.md); one it does not read has no name to wait for
// (TestPatternMatchedCreationWithReloadOnCreate).
func TestAPatternMatchedConfigThePodReadsReloadsOnItsCreation(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createDeployment(t, ns, "pattern", 0, named("configmap", "pat-.*"), func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "pat-two"}, Optional: new(true)}}}
	})
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.ReloadOnCreate = true }})
	settle(t)
	before := getDeployment(t, ns, "pattern").Generation
	createConfigMap(t, ns, "pat-two", map[string]string{"v": "0"})
	waitFor(t, 30*time.Second, "pattern reloaded for the creation", func() (bool, error) {
		return getDeployment(t, ns, "pattern").Generation > before, nil
	})
	wantReloads(t, ns, "pattern", before, 1)
}

// A pattern workload under edits: a delete-and-recreate with the same content restarts nothing,
// one with new content restarts once, a revert restarts once more, and a pattern edited to
// another one stops matching the old configs.
func TestReloadAnnotationPatternUnderEditsAndReplacements(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-one", map[string]string{"v": "0"})
	createConfigMap(t, ns, "other-one", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-.*"), nil)
	r := startController(t, ns, controllerOpts{})
	first := updateConfigMap(t, ns, "app-one", map[string]string{"v": "1"})
	waitEnv(t, ns, "web", "_RELOADER_-configmap-app-one", first)
	r.settle()
	gen := getDeployment(t, ns, "web").Generation

	replaceConfigMap(t, ns, "app-one", map[string]string{"v": "1"})
	wantReloads(t, ns, "web", gen, 0)
	second := replaceConfigMap(t, ns, "app-one", map[string]string{"v": "2"})
	waitEnv(t, ns, "web", "_RELOADER_-configmap-app-one", second)
	wantReloads(t, ns, "web", gen, 1)
	updateConfigMap(t, ns, "app-one", map[string]string{"v": "1"}) // revert
	waitEnv(t, ns, "web", "_RELOADER_-configmap-app-one", first)
	wantReloads(t, ns, "web", gen, 2)

	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Annotations["configmap.reloader.stakater.com/reload"] = "other-.*" })
	settle(t)
	gen = getDeployment(t, ns, "web").Generation
	updateConfigMap(t, ns, "app-one", map[string]string{"v": "3"})
	// Positive control, changed after: the new pattern's config reloads.
	hash := updateConfigMap(t, ns, "other-one", map[string]string{"v": "1"})
	waitEnv(t, ns, "web", "_RELOADER_-configmap-other-one", hash)
	wantReloads(t, ns, "web", gen, 1)
	if v, _ := env(getDeployment(t, ns, "web"), "app", "_RELOADER_-configmap-app-one"); v != first {
		t.Fatalf("app-one's marker moved to %s after the pattern stopped matching it", v)
	}
}

// --auto-reload-all: a workload that opts out while running stops reloading; another keeps on.
func TestAutoReloadAllOptOutWhileRunning(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "a", map[string]string{"v": "0"})
	createDeployment(t, ns, "quiet", 0, nil, envFromCM("a"))
	createDeployment(t, ns, "loud", 0, nil, envFromCM("a"))
	startController(t, ns, controllerOpts{tweak: renamed(func(a *policy.Annotations) { a.ReloadAll = true })})
	hash := updateConfigMap(t, ns, "a", map[string]string{"v": "1"})
	waitEnv(t, ns, "quiet", "_RELOADER_-configmap-a", hash)
	waitEnv(t, ns, "loud", "_RELOADER_-configmap-a", hash)
	updateDeployment(t, ns, "quiet", func(d *appsv1.Deployment) {
		d.Annotations = map[string]string{"reloader.stakater.com/auto": "false"}
	})
	settle(t)
	gen := getDeployment(t, ns, "quiet").Generation
	hash = updateConfigMap(t, ns, "a", map[string]string{"v": "2"})
	waitEnv(t, ns, "loud", "_RELOADER_-configmap-a", hash)
	wantReloads(t, ns, "quiet", gen, 0)
}
