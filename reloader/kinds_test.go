package reloader_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// podTemplate is the template every kind in these tests carries: one container "app".
func podTemplate(name string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "fake"}}},
	}
}

var (
	rolloutsGVR          = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}
	deploymentConfigsGVR = schema.GroupVersionResource{Group: "apps.openshift.io", Version: "v1", Resource: "deploymentconfigs"}
)

// ensureCRDs registers the minimal Rollout and DeploymentConfig CRDs from testdata once.
func ensureCRDs(t *testing.T) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(cluster.AdminConfig())
	for _, f := range []string{"rollouts", "deploymentconfigs"} {
		if _, err := cluster.ApplyFile(context.Background(), "", "../testdata/crds/"+f+".yaml"); err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
	}
	for _, gvr := range []schema.GroupVersionResource{rolloutsGVR, deploymentConfigsGVR} {
		waitFor(t, 30*time.Second, gvr.Resource+" served", func() (bool, error) {
			_, err := dyn.Resource(gvr).Namespace("default").List(context.Background(), metav1.ListOptions{})
			return err == nil, nil
		})
	}
}

func createCustom(t *testing.T, gvr schema.GroupVersionResource, kind, ns, name string, annotations map[string]string) {
	t.Helper()
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ptr(podTemplate(name)))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"replicas": int64(0), "template": tmpl},
	}}
	u.SetAnnotations(annotations)
	if _, err := dynamic.NewForConfigOrDie(cluster.AdminConfig()).Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// templateEnv reads the app container's variable from any kind, through the dynamic client.
func templateEnv(t *testing.T, gvr schema.GroupVersionResource, ns, name, variable string) (string, *unstructured.Unstructured) {
	t.Helper()
	u, err := dynamic.NewForConfigOrDie(cluster.AdminConfig()).Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		env, _, _ := unstructured.NestedSlice(c.(map[string]any), "env")
		for _, e := range env {
			if m := e.(map[string]any); m["name"] == variable {
				return fmt.Sprint(m["value"]), u
			}
		}
	}
	return "", u
}

func TestEveryWorkloadKindReloads(t *testing.T) {
	t.Parallel()
	ensureCRDs(t)
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	ann := named("configmap", "app-config")
	apps := cluster.Client().AppsV1()
	ctx := context.Background()
	sel := func(name string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	}
	createDeployment(t, ns, "deploy", 0, ann, nil)
	if _, err := apps.StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "sts", Annotations: ann},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(0)), Selector: sel("sts"), Template: podTemplate("sts")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := apps.DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds", Annotations: ann},
		Spec: appsv1.DaemonSetSpec{Selector: sel("ds"), Template: podTemplate("ds")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createCustom(t, rolloutsGVR, "Rollout", ns, "rollout", ann)
	createCustom(t, deploymentConfigsGVR, "DeploymentConfig", ns, "dc", ann)
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.ArgoRollouts, o.OpenShift = true, true }})

	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	for _, w := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{
		{appsv1.SchemeGroupVersion.WithResource("deployments"), "deploy"},
		{appsv1.SchemeGroupVersion.WithResource("statefulsets"), "sts"},
		{appsv1.SchemeGroupVersion.WithResource("daemonsets"), "ds"},
		{rolloutsGVR, "rollout"},
		{deploymentConfigsGVR, "dc"},
	} {
		waitFor(t, 10*time.Second, w.gvr.Resource+" reloaded", func() (bool, error) {
			v, _ := templateEnv(t, w.gvr, ns, w.name, cmVar)
			return v == hash, nil
		})
	}
}

func TestRolloutRestartStrategySetsRestartAt(t *testing.T) {
	t.Parallel()
	ensureCRDs(t)
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	ann := named("configmap", "app-config")
	ann["reloader.stakater.com/rollout-strategy"] = "restart"
	createCustom(t, rolloutsGVR, "Rollout", ns, "rollout", ann)
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.ArgoRollouts = true }})
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	var u *unstructured.Unstructured
	waitFor(t, 10*time.Second, "spec.restartAt", func() (bool, error) {
		_, u = templateEnv(t, rolloutsGVR, ns, "rollout", cmVar)
		_, found, _ := unstructured.NestedString(u.Object, "spec", "restartAt")
		return found, nil
	})
	if v, _ := templateEnv(t, rolloutsGVR, ns, "rollout", cmVar); v != "" {
		t.Fatalf("the restart strategy changed the template (env %s=%s)", cmVar, v)
	}
	if got := u.GetAnnotations()["reloader/config-hashes"]; !strings.Contains(got, hash) {
		t.Fatalf("the Rollout does not record the applied hash: %q", got)
	}
}

func TestOnDeleteStatefulSetIsReported(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	_, err := cluster.Client().AppsV1().StatefulSets(ns).Create(context.Background(), &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "sts", Annotations: named("configmap", "app-config")},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sts"}},
			Template: podTemplate("sts"), UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startController(t, ns, controllerOpts{})
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitFor(t, 10*time.Second, "a ReloadNeedsPodDeletion event", func() (bool, error) {
		list, err := cluster.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=ReloadNeedsPodDeletion"})
		return err == nil && len(list.Items) == 1 && list.Items[0].InvolvedObject.Name == "sts", err
	})
}

func TestIgnoredWorkloadTypesAreLeftAlone(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.IgnoredWorkloadTypes = []string{reloader.TypeDeployments} }})
	before := getDeployment(t, ns, "web").Generation
	// No workload of a kind watched reads app-config: the state keeps no entry to wait for.
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	settle(t)
	if g := getDeployment(t, ns, "web").Generation; g != before {
		t.Fatalf("an ignored Deployment was reloaded (generation %d→%d)", before, g)
	}
}

func TestAnnotationsStrategy(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	r := startController(t, ns, controllerOpts{grace: 5 * time.Second, tweak: func(o *reloader.Options) { o.Strategy = policy.StrategyAnnotations }})
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	var from map[string]any
	waitFor(t, 10*time.Second, "last-reloaded-from", func() (bool, error) {
		raw := getDeployment(t, ns, "web").Spec.Template.Annotations["reloader.stakater.com/last-reloaded-from"]
		return json.Unmarshal([]byte(raw), &from) == nil && from["hash"] == hash, nil
	})
	if from["type"] != "CONFIGMAP" || from["name"] != "app-config" || from["namespace"] != ns {
		t.Fatalf("last-reloaded-from = %v, not stakater's form", from)
	}
	d := getDeployment(t, ns, "web")
	if _, set := env(d, "app", cmVar); set {
		t.Fatal("the annotations strategy also set the env var")
	}
	// Restarting with the state rolled back must not reload again: the annotation holds the hash.
	r.stop(t)
	setStateEntry(t, ns, "v1.ConfigMap_app-config", confighash.ConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "0"}}))
	again := startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.Strategy = policy.StrategyAnnotations }})
	again.settle()
	if g := getDeployment(t, ns, "web").Generation; g != d.Generation {
		t.Fatalf("reloaded twice (generation %d→%d)", d.Generation, g)
	}
	if got := stoppedEntry(t, again, ns, "v1.ConfigMap_app-config"); got != hash {
		t.Fatalf("the state holds %q after the stop, want %q: the change was not judged", got, hash)
	}
}

// With --reload-on-delete a deletion restarts every workload that ran the config: one that
// carries a marker of it (set to "deleted") and one that never took a change of it, which gets
// the same marker. Once the deletion reached both, the tombstone holds no content: a
// recreation is a creation. A workload created after the deletion never read the config, and is
// not restarted for it.
func TestReloadOnDeleteRestartsEveryWorkloadThatRanTheConfig(t *testing.T) {
	t.Parallel()
	for _, strategy := range []string{policy.StrategyEnvVars, policy.StrategyAnnotations} {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			ns := cluster.NewNamespace(t)
			createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
			createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
			startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.Strategy, o.ReloadOnDelete = strategy, true }})
			updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
			waitFor(t, 10*time.Second, "the first reload", func() (bool, error) { return getDeployment(t, ns, "web").Generation == 2, nil })
			createDeployment(t, ns, "idle", 0, named("configmap", "app-config"), nil) // no marker of it
			settle(t)
			before := generations(t, ns)
			if err := cluster.Client().CoreV1().ConfigMaps(ns).Delete(context.Background(), "app-config", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"web", "idle"} {
				waitFor(t, 10*time.Second, name+" marked with the deletion", func() (bool, error) {
					d := getDeployment(t, ns, name)
					if strategy == policy.StrategyEnvVars {
						v, _ := env(d, "app", cmVar)
						return v == policy.DeletedMarker, nil
					}
					return strings.Contains(d.Spec.Template.Annotations["reloader/config-hashes"], `"configmap/app-config":"deleted"`), nil
				})
			}
			waitFor(t, 10*time.Second, "a tombstone without content", func() (bool, error) {
				v := stateEntry(t, ns, "v1.ConfigMap_app-config")
				return strings.HasPrefix(v, "deleted@") && strings.HasSuffix(v, ":"), nil
			})
			before["late"] = createDeployment(t, ns, "late", 0, named("configmap", "app-config"), nil).Generation
			settle(t)
			if moved := changed(before, generations(t, ns)); fmt.Sprint(moved) != fmt.Sprint(map[string]int64{"idle": 1, "web": 1}) {
				t.Fatalf("the deletion restarted %v; want web and idle once each, late not at all", moved)
			}
		})
	}
}

// A deletion's reload held by a window keeps the tombstone's content. A workload created a
// second after the deletion never read the config: it is not restarted for the deletion (the
// tombstone's time says so), while the held one is, once its window opens.
func TestAWorkloadCreatedAfterADeletionIsNotReloadedForIt(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "held", 0, withAnnotations(named("configmap", "app-config"), map[string]string{policy.WindowAnnotation: closedWindow()}), nil)
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.ReloadOnDelete = true }})
	settle(t)
	if err := cluster.Client().CoreV1().ConfigMaps(ns).Delete(context.Background(), "app-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var since int64
	waitFor(t, 10*time.Second, "the tombstone with the content", func() (bool, error) {
		v := stateEntry(t, ns, "v1.ConfigMap_app-config")
		at, hash, ok := strings.Cut(strings.TrimPrefix(v, "deleted@"), ":")
		if !strings.HasPrefix(v, "deleted@") || !ok || hash == "" {
			return false, nil
		}
		_, err := fmt.Sscan(at, &since)
		return err == nil, err
	})
	waitFor(t, 3*time.Second, "a second after the deletion", func() (bool, error) { return time.Now().Unix() > since, nil })
	late := createDeployment(t, ns, "late", 0, named("configmap", "app-config"), nil)
	settle(t)
	patchAnnotation(t, ns, "held", policy.WindowAnnotation, "00:00-24:00")
	waitEnv(t, ns, "held", cmVar, policy.DeletedMarker)
	settle(t)
	if g := getDeployment(t, ns, "late").Generation; g != late.Generation {
		t.Fatalf("late, created after the deletion, was restarted for it (generation %d→%d)", late.Generation, g)
	}
}

// A config sync that ran while a deletion's reload was in flight judged the workload by that
// patch, as running without the config, found every dependent reached and dropped the content
// from the tombstone; the patch then failed on a workload changed meanwhile, and its retry found
// nothing left to reload (TestAWorkloadCreatedAfterADeletionIsNotReloadedForIt, now and then
// under load). Here the first reload patch of held waits for a config sync, on a held changed
// under it.
func TestADeletionReloadWhosePatchFailsWhileItsConfigIsJudgedIsRetried(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "held", 0, withAnnotations(named("configmap", "app-config"), map[string]string{policy.WindowAnnotation: closedWindow()}), nil)
	createDeployment(t, ns, "other", 0, named("configmap", "app-config"), nil)
	var (
		ctrl   atomic.Pointer[running]
		armed  atomic.Bool
		synced = make(chan bool, 1)
	)
	interfere := func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPatch && strings.HasSuffix(req.URL.Path, "/deployments/held") && armed.CompareAndSwap(true, false) {
				synced <- judgedWhile(ns, ctrl.Load())
			}
			return rt.RoundTrip(req)
		})
	}
	ctrl.Store(startController(t, ns, controllerOpts{wrap: interfere, tweak: func(o *reloader.Options) { o.ReloadOnDelete = true }}))
	settle(t)
	deleteConfigMap(t, ns, "app-config")
	waitEnv(t, ns, "other", cmVar, policy.DeletedMarker) // positive control; held's window is closed
	settle(t)
	armed.Store(true)
	patchAnnotation(t, ns, "held", policy.WindowAnnotation, "00:00-24:00")
	if !<-synced {
		t.Fatal("no config sync ran while held's patch was in flight")
	}
	waitEnv(t, ns, "held", cmVar, policy.DeletedMarker)
}

// judgedWhile, called with a reload patch of held in flight, changes held (the patch fails its
// resourceVersion test) and queues app-config (an annotation of other's that the reloader reads),
// and reports whether a config sync finished within 10 s.
func judgedWhile(ns string, r *running) bool {
	ctx := context.Background()
	syncs := func() float64 {
		return testutil.ToFloat64(r.metrics.Stakater.EventsProcessed.WithLabelValues("unknown", "configmaps", "success"))
	}
	before := syncs()
	deployments := cluster.Client().AppsV1().Deployments(ns)
	for name, ann := range map[string]string{"held": "example.com/touched", "other": policy.WindowAnnotation} {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"00:00-24:00"}}}`, ann)
		if _, err := deployments.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return false
		}
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if syncs() > before {
			return true
		}
	}
	return false
}

func TestSwitchingFromStakaterCausesNoRestartWave(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "current"})
	current := confighash.StakaterConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "current"}})
	stale := confighash.StakaterConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "older"}})
	for name, value := range map[string]string{"up-to-date": current, "lagging": stale} {
		createDeployment(t, ns, name, 0, named("configmap", "app-config"), func(s *corev1.PodSpec) {
			s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "STAKATER_APP_CONFIG_CONFIGMAP", Value: value})
		})
	}
	before := generations(t, ns)
	startController(t, ns, controllerOpts{})
	waitFor(t, 10*time.Second, "the lagging workload reloaded", func() (bool, error) {
		return getDeployment(t, ns, "lagging").Generation == before["lagging"]+1, nil
	})
	settle(t)
	if moved := changed(before, generations(t, ns)); fmt.Sprint(moved) != fmt.Sprint(map[string]int64{"lagging": 1}) {
		t.Fatalf("first start restarted %v; want only the workload whose stakater hash lags, once", moved)
	}
}
