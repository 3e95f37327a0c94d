package reloader_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// waitWarning waits for an Event of the reason on the object and returns its messages.
func waitWarning(t *testing.T, ns, object, reason string) string {
	t.Helper()
	var msgs []string
	waitFor(t, 10*time.Second, "a "+reason+" event on "+object, func() (bool, error) {
		list, err := cluster.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: "reason=" + reason + ",involvedObject.name=" + object})
		if err != nil {
			return false, err
		}
		msgs = msgs[:0]
		for _, e := range list.Items {
			msgs = append(msgs, e.Message)
		}
		return len(msgs) > 0, nil
	})
	return strings.Join(msgs, "\n")
}

func TestAMisspeltReloaderKeyGetsOneWarningNamingTheKeyMeant(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "typo", 0, map[string]string{"configmap.reloader.stakater.com/reloads": "app-config"}, nil)
	createDeployment(t, ns, "fine", 0, named("configmap", "app-config"), nil)
	// A StatefulSet's generation, unlike a Deployment's, ignores its annotations.
	if _, err := cluster.Client().AppsV1().StatefulSets(ns).Create(context.Background(), &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "quiet"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "quiet"}},
			Template: podTemplate("quiet")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := startController(t, ns, controllerOpts{})

	msg := waitWarning(t, ns, "typo", "UnknownAnnotation")
	if !strings.Contains(msg, "configmap.reloader.stakater.com/reloads is not one the reloader reads; did you mean configmap.reloader.stakater.com/reload?") {
		t.Fatalf("the warning does not name the key meant: %q", msg)
	}
	// Touched, and through a reload of the other, the typo is not said again.
	updateDeployment(t, ns, "typo", func(d *appsv1.Deployment) { d.Labels = map[string]string{"touched": "yes"} })
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitEnv(t, ns, "fine", cmVar, hash) // the positive control: the right key reloads
	settle(t)
	if n := countEvents(t, ns, "typo", "UnknownAnnotation"); n != 1 {
		t.Fatalf("%d UnknownAnnotation events on typo, want 1: %q", n, eventMessages(t, ns, "typo"))
	}
	if n := countEvents(t, ns, "fine", "UnknownAnnotation"); n != 0 {
		t.Fatalf("a correctly spelt key was warned about: %q", eventMessages(t, ns, "fine"))
	}
	if _, ok := env(getDeployment(t, ns, "typo"), "app", cmVar); ok {
		t.Fatal("the misspelt key reloaded the workload")
	}
	if n := strings.Count(r.log.String(), "is not one it reads"); n != 1 {
		t.Fatalf("%d log lines about the unknown key, want 1", n)
	}

	// A misspelt key added later, by a change of nothing else, is said too.
	sts, err := cluster.Client().AppsV1().StatefulSets(ns).Patch(context.Background(), "quiet", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"reloader.stakater.com/autoo":"true"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sts.Generation != 1 {
		t.Fatalf("the annotation changed the generation to %d: the update is decisive anyway", sts.Generation)
	}
	msg = waitWarning(t, ns, "quiet", "UnknownAnnotation")
	if !strings.Contains(msg, "did you mean reloader.stakater.com/auto?") {
		t.Fatalf("the warning does not name the key meant: %q", msg)
	}
}

func TestAnUpperCaseNameInAReloadAnnotationIsReported(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "upper", 0, named("configmap", "App-Config"), nil)
	createDeployment(t, ns, "nomatch", 0, named("configmap", "nothing-.*"), nil)
	createDeployment(t, ns, "lower", 0, named("configmap", "app-config"), nil)
	createDeployment(t, ns, "pattern", 0, named("configmap", "app-.*"), nil)
	startController(t, ns, controllerOpts{})

	msg := waitWarning(t, ns, "upper", "InvalidAnnotation")
	if !strings.Contains(msg, `"App-Config" in a reload annotation is not a ConfigMap name: names are lower case`) ||
		!strings.Contains(msg, `did you mean "app-config"?`) {
		t.Fatalf("the warning does not say the name is upper case: %q", msg)
	}
	msg = waitWarning(t, ns, "nomatch", "InvalidAnnotation")
	if !strings.Contains(msg, `"nothing-.*" in a reload annotation is not a ConfigMap name, and as a pattern it matches no ConfigMap`) {
		t.Fatalf("the warning does not say the pattern matches nothing: %q", msg)
	}
	// The positive controls: a name and a pattern that match reload, and are not reported.
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitEnv(t, ns, "lower", cmVar, hash)
	waitEnv(t, ns, "pattern", cmVar, hash)
	settle(t)
	for _, name := range []string{"lower", "pattern"} {
		if n := countEvents(t, ns, name, "InvalidAnnotation"); n != 0 {
			t.Fatalf("%s was reported: %q", name, eventMessages(t, ns, name))
		}
	}
	if n := countEvents(t, ns, "upper", "InvalidAnnotation"); n != 1 {
		t.Fatalf("%d InvalidAnnotation events on upper, want 1: %q", n, eventMessages(t, ns, "upper"))
	}
}

func TestARolloutWithAWorkloadRefIsWarnedThatItsAnnotationsCannotApply(t *testing.T) {
	t.Parallel()
	ensureCRDs(t)
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	ref := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": rolloutsGVR.GroupVersion().String(), "kind": "Rollout",
		"metadata": map[string]any{"name": "by-ref", "annotations": map[string]any{"configmap.reloader.stakater.com/reload": "app-config"}},
		// Argo takes an empty template beside a workloadRef, and refuses any other.
		"spec": map[string]any{"replicas": int64(0), "template": map[string]any{},
			"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
	}}
	rollouts := dynamic.NewForConfigOrDie(cluster.AdminConfig()).Resource(rolloutsGVR).Namespace(ns)
	if _, err := rollouts.Create(context.Background(), ref, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ref.SetName("by-rs")
	_ = unstructured.SetNestedMap(ref.Object, map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs"}, "spec", "workloadRef")
	if _, err := rollouts.Create(context.Background(), ref, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createCustom(t, rolloutsGVR, "Rollout", ns, "own", named("configmap", "app-config"))
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.ArgoRollouts = true }})

	msg := waitWarning(t, ns, "by-ref", "TemplateElsewhere")
	if !strings.Contains(msg, `Rollout's pod template is Deployment "web"'s (spec.workloadRef)`) ||
		!strings.Contains(msg, `put the reload annotations on Deployment "web" instead`) {
		t.Fatalf("the warning does not say why and what to do: %q", msg)
	}
	// The reloader reloads no ReplicaSet: annotating it would not help.
	if msg := waitWarning(t, ns, "by-rs", "TemplateElsewhere"); !strings.Contains(msg, "the reloader does not reload a ReplicaSet") {
		t.Fatalf("the warning advises annotating a ReplicaSet: %q", msg)
	}
	// explain tells each Rollout what its Warning says.
	argo := func(o *reloader.Options) { o.ArgoRollouts = true }
	for name, want := range map[string]string{"by-ref": `put the reload annotations on Deployment "web" instead`,
		"by-rs": "the reloader does not reload a ReplicaSet"} {
		e := explainNow(t, ns, "Rollout", name, nil, argo)
		if !slices.ContainsFunc(e.Problems, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("explain of %s says %q, not %q", name, e.Problems, want)
		}
	}
	// The positive control: a Rollout with its own template reloads, and is not warned; the
	// referenced Deployment reloads, which is what rolls the Rollout out under Argo.
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitFor(t, 10*time.Second, "own reloaded", func() (bool, error) {
		v, _ := templateEnv(t, rolloutsGVR, ns, "own", cmVar)
		return v == hash, nil
	})
	waitEnv(t, ns, "web", cmVar, hash)
	settle(t)
	if n := countEvents(t, ns, "own", "TemplateElsewhere"); n != 0 {
		t.Fatalf("a Rollout with its own template was warned: %q", eventMessages(t, ns, "own"))
	}
	if n := countEvents(t, ns, "by-ref", "TemplateElsewhere"); n != 1 {
		t.Fatalf("%d TemplateElsewhere events, want 1: %q", n, eventMessages(t, ns, "by-ref"))
	}
	// Argo refuses a template beside a workloadRef: nothing is written into the empty one.
	_, u := templateEnv(t, rolloutsGVR, ns, "by-ref", cmVar)
	if tmpl, _, _ := unstructured.NestedMap(u.Object, "spec", "template"); len(tmpl) > 0 {
		t.Fatalf("a template was written beside the workloadRef: %v", tmpl)
	}
}

func TestAWorkloadRefRolloutsEmptyTemplateIsNeitherWrittenNorRetried(t *testing.T) {
	t.Parallel()
	ensureCRDs(t)
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	ref := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": rolloutsGVR.GroupVersion().String(), "kind": "Rollout",
		"metadata": map[string]any{"name": "by-ref", "annotations": map[string]any{"configmap.reloader.stakater.com/reload": "app-config"}},
		"spec": map[string]any{"replicas": int64(0), "template": map[string]any{},
			"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
	}}
	if _, err := dynamic.NewForConfigOrDie(cluster.AdminConfig()).Resource(rolloutsGVR).Namespace(ns).Create(context.Background(), ref, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createCustom(t, rolloutsGVR, "Rollout", ns, "own", named("configmap", "app-config"))
	// The annotations strategy writes a marker whatever the containers: into an empty template too.
	r := startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.ArgoRollouts, o.Strategy = true, policy.StrategyAnnotations }})
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	// The positive control: the Rollout with its own template gets the marker.
	waitFor(t, 10*time.Second, "own reloaded", func() (bool, error) {
		_, u := templateEnv(t, rolloutsGVR, ns, "own", cmVar)
		got, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", "reloader/config-hashes")
		return strings.Contains(got, hash), nil
	})
	settle(t)
	_, u := templateEnv(t, rolloutsGVR, ns, "by-ref", cmVar)
	if tmpl, _, _ := unstructured.NestedMap(u.Object, "spec", "template"); len(tmpl) > 0 {
		t.Fatalf("a template was written beside the workloadRef, which Argo refuses: %v", tmpl)
	}
	// Judged as a template of its own, the empty one was never current: its sync was retried
	// without end.
	for _, line := range strings.Split(r.log.String(), "\n") {
		if strings.Contains(line, "retrying") && strings.Contains(line, "/by-ref") {
			t.Fatalf("the Rollout's sync is retried: %s", line)
		}
	}
}
