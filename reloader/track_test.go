package reloader_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/internal/dev/testcluster"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

var (
	goodConfig   = map[string]string{"app.json": `{"ok": true}`}
	brokenConfig = map[string]string{"app.json": `{"ok": false}`}
	fixedConfig  = map[string]string{"app.json": `{"ok": true, "fixed": true}`}
	appVar       = policy.EnvVarName(policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app"})
)

// hashOfData is the marker value the reloader writes for a ConfigMap holding data.
func hashOfData(data map[string]string) string {
	return confighash.ConfigMap(&corev1.ConfigMap{Data: data})
}

// followedDeployment creates Deployment web (2 replicas, progress deadline 3 s, one pod
// unavailable at a time) that reads
// ConfigMap app and whose pods never become Ready on brokenConfig; it waits for its first
// rollout.
func followedDeployment(t *testing.T, ns string, annotations map[string]string) {
	t.Helper()
	createConfigMap(t, ns, "app", goodConfig)
	createDeploymentFrom(t, ns, "web", func(d *appsv1.Deployment) {
		d.Annotations = annotations
		d.Spec.Replicas = new(int32(2))
		d.Spec.ProgressDeadlineSeconds = new(int32(3))
		// One old pod goes before a new one is available: a rollback really scales the previous
		// ReplicaSet back up.
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))}
		c := &d.Spec.Template.Spec.Containers[0]
		c.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}
		c.Env = append(c.Env, corev1.EnvVar{Name: testcluster.NotReadyWhen, Value: hashOfData(brokenConfig)})
	})
	waitFor(t, 30*time.Second, "first rollout", func() (bool, error) {
		p, _ := policy.RolloutProgress(getDeployment(t, ns, "web"))
		return p == policy.Done, nil
	})
}

func newestEntry(t *testing.T, ns string) (policy.Entry, bool) {
	h := policy.ParseHistory(getDeployment(t, ns, "web").Annotations[policy.HistoryAnnotation])
	if len(h) == 0 {
		return policy.Entry{}, false
	}
	return h[0], true
}

func waitOutcome(t *testing.T, ns, outcome string) policy.Entry {
	t.Helper()
	var e policy.Entry
	waitFor(t, 60*time.Second, "history outcome "+outcome, func() (bool, error) {
		var ok bool
		e, ok = newestEntry(t, ns)
		return ok && e.Outcome == outcome, nil
	})
	return e
}

// waitRolledBack waits for web's newest reload (followedWeb) to end, and fails unless it was
// rolled back. Its rollout timeout and progress deadline are both 3 s: under load either ends it,
// timed out or failed.
func waitRolledBack(t *testing.T, ns, what string) policy.Entry {
	t.Helper()
	var e policy.Entry
	waitFor(t, 60*time.Second, what+" ended", func() (bool, error) {
		var ok bool
		e, ok = newestEntry(t, ns)
		return ok && (e.Outcome == policy.OutcomeTimedOut || e.Outcome == policy.OutcomeFailed), nil
	})
	if !e.RolledBack {
		t.Fatalf("%s was not rolled back: %+v", what, e)
	}
	return e
}

func eventReasons(t *testing.T, ns string) string {
	t.Helper()
	list, err := cluster.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "Deployment" {
			reasons = append(reasons, e.Reason)
		}
	}
	return strings.Join(reasons, ",")
}

func waitEvent(t *testing.T, ns, reason string) {
	t.Helper()
	waitFor(t, 10*time.Second, "Event "+reason, func() (bool, error) {
		return strings.Contains(eventReasons(t, ns), reason), nil
	})
}

func outcomes(r *running, outcome string) float64 {
	return testutil.ToFloat64(r.metrics.Rollouts.Outcomes.WithLabelValues("Deployment", outcome))
}

func TestAHealthyReloadReportsSucceededWithinASecondOfTheRolloutCompleting(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	followedDeployment(t, ns, map[string]string{"configmap.reloader.stakater.com/reload": "app", policy.TrackAnnotation: "true"})
	r := startController(t, ns, controllerOpts{})
	w, err := cluster.Client().AppsV1().Deployments(ns).Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=web"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	updateConfigMap(t, ns, "app", fixedConfig)
	var completed, reported time.Time
	deadline := time.After(60 * time.Second)
	for reported.IsZero() {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Modified {
				continue
			}
			d := ev.Object.(*appsv1.Deployment)
			e := policy.ParseHistory(d.Annotations[policy.HistoryAnnotation])
			if p, _ := policy.RolloutProgress(d); p == policy.Done && completed.IsZero() && len(e) > 0 {
				completed = time.Now()
			}
			if len(e) > 0 && e[0].Outcome == policy.OutcomeSucceeded {
				reported = time.Now()
			}
		case <-deadline:
			t.Fatalf("no succeeded outcome; history %q", getDeployment(t, ns, "web").Annotations[policy.HistoryAnnotation])
		}
	}
	if lag := reported.Sub(completed); lag > time.Second {
		t.Errorf("succeeded reported %s after the rollout completed, want within 1s", lag)
	}
	t.Logf("succeeded reported %s after the rollout completed", reported.Sub(completed).Round(time.Millisecond))
	e, _ := newestEntry(t, ns)
	if want := "ConfigMap/app@" + hashOfData(fixedConfig)[:8]; len(e.Configs) != 1 || e.Configs[0] != want {
		t.Errorf("history names %v, want %s", e.Configs, want)
	}
	waitEvent(t, ns, "RolloutSucceeded")
	if n := outcomes(r, policy.OutcomeSucceeded); n != 1 {
		t.Errorf("reloader_rollouts_total{outcome=succeeded} = %v, want 1", n)
	}
	if _, ok := getDeployment(t, ns, "web").Annotations[policy.RestoreAnnotation]; ok {
		t.Error("a reload without rollback left a restore record")
	}
}

func TestABrokenReloadReportsFailedAtTheProgressDeadlineAndStays(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	followedDeployment(t, ns, map[string]string{"configmap.reloader.stakater.com/reload": "app", policy.TrackAnnotation: "true"})
	r := startController(t, ns, controllerOpts{})
	updateConfigMap(t, ns, "app", brokenConfig)
	e := waitOutcome(t, ns, policy.OutcomeFailed)
	if e.RolledBack {
		t.Error("rolled back without rollback on")
	}
	waitEvent(t, ns, "RolloutFailed")
	if n := outcomes(r, policy.OutcomeFailed); n != 1 {
		t.Errorf("reloader_rollouts_total{outcome=failed} = %v, want 1", n)
	}
	wantReloads(t, ns, "web", getDeployment(t, ns, "web").Generation, 0)
	if got, _ := env(getDeployment(t, ns, "web"), "app", appVar); got != hashOfData(brokenConfig) {
		t.Errorf("without rollback the template holds %q, want the broken content's hash", got)
	}
}

// rollbackScenario reloads web onto brokenConfig and waits until the rollback has restored the
// previous ReplicaSet to full availability. between runs after the reload's patch, before its
// rollout fails.
func rollbackScenario(t *testing.T, ns string, between func()) {
	t.Helper()
	updateConfigMap(t, ns, "app", brokenConfig)
	waitEnv(t, ns, "web", appVar, hashOfData(brokenConfig))
	waitFor(t, 30*time.Second, "the failing rollout to take an old pod down", func() (bool, error) {
		return getDeployment(t, ns, "web").Status.AvailableReplicas < 2, nil // well before its 3 s deadline
	})
	between()
	e := waitOutcome(t, ns, policy.OutcomeFailed)
	if !e.RolledBack {
		t.Fatalf("failed rollout not rolled back: %+v", e)
	}
	// The Deployment was created before the reloader ran: the template it restores has no marker.
	waitFor(t, 10*time.Second, "the marker removed again", func() (bool, error) {
		_, set := env(getDeployment(t, ns, "web"), "app", appVar)
		return !set, nil
	})
	waitFor(t, 30*time.Second, "previous ReplicaSet fully available, broken one scaled to zero", func() (bool, error) {
		sets, err := cluster.Client().AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: labels.Set{"app": "web"}.String()})
		if err != nil {
			return false, err
		}
		good, broken := false, false
		for _, rs := range sets.Items {
			v := ""
			for _, ev := range rs.Spec.Template.Spec.Containers[0].Env {
				if ev.Name == appVar {
					v = ev.Value
				}
			}
			switch v {
			case "":
				good = rs.Status.AvailableReplicas == 2 && *rs.Spec.Replicas == 2
			case hashOfData(brokenConfig):
				broken = *rs.Spec.Replicas == 0
			}
		}
		return good && broken && len(sets.Items) == 2, nil
	})
}

func TestRollbackRestoresThePreviousReplicaSetAndHoldsTheBrokenContent(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	followedDeployment(t, ns, map[string]string{"configmap.reloader.stakater.com/reload": "app", policy.RollbackAnnotation: "true"})
	r := startController(t, ns, controllerOpts{})
	rollbackScenario(t, ns, func() {})
	waitEvent(t, ns, "RolledBack")
	if n := testutil.ToFloat64(r.metrics.Rollouts.Rollbacks.WithLabelValues("Deployment", "success")); n != 1 {
		t.Errorf("reloader_rollbacks_total{result=success} = %v, want 1", n)
	}
	wantHeld(t, ns)

	// Held: the broken content does not reload web again, though web runs other content.
	wantReloads(t, ns, "web", getDeployment(t, ns, "web").Generation, 0)
	// Positive control: another content lifts the hold and reloads.
	updateConfigMap(t, ns, "app", fixedConfig)
	waitOutcome(t, ns, policy.OutcomeSucceeded)
	if got, _ := env(getDeployment(t, ns, "web"), "app", appVar); got != hashOfData(fixedConfig) {
		t.Errorf("after the hold was lifted web runs %q", got)
	}
	settle(t)
	state, _ := cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "reloader-state", metav1.GetOptions{})
	for k := range state.Data {
		if strings.HasPrefix(k, "hold.") {
			t.Errorf("hold %s outlived a reload to another content", k)
		}
	}
}

// A revert to the content the rolled-back workload runs reloads nothing, but it is a change:
// the broken content applied again afterwards is reloaded (and rolled back) again, not held. The
// rollout surged, so the rollback started no pod on the broken content (a revert after one that
// did restarts them: TestARevertAfterARollbackRestartsThePodsTheRollbackStartedOnTheBrokenContent).
func TestARevertEndsAHoldSoTheBrokenContentAppliedAgainReloads(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	broken := brokenRolledBack(t, ns, rollbackCase{surge: true})
	gen := getDeployment(t, ns, "web").Generation
	broken.revert(t) // to fixedConfig, what web runs since the rollback
	wantReloads(t, ns, "web", gen, 0)
	waitHoldLifted(t, ns, "the revert")
	updateConfigMap(t, ns, "app", brokenConfig)
	waitEnv(t, ns, "web", appVar, hashOfData(brokenConfig))
}

// heldWhileRunningFixed reloads web (rollback on) onto fixedConfig, then onto brokenConfig,
// which is rolled back, so web carries the marker of fixedConfig and brokenConfig is held; it
// returns the namespace and web's generation then.
func heldWhileRunningFixed(t *testing.T) (ns string, gen int64) {
	t.Helper()
	ns = cluster.NewNamespace(t)
	followedDeployment(t, ns, map[string]string{"configmap.reloader.stakater.com/reload": "app", policy.RollbackAnnotation: "true"})
	startController(t, ns, controllerOpts{})
	updateConfigMap(t, ns, "app", fixedConfig) // web carries a marker of fixed: the rollback restores it
	waitOutcome(t, ns, policy.OutcomeSucceeded)
	updateConfigMap(t, ns, "app", brokenConfig)
	waitEnv(t, ns, "web", appVar, hashOfData(brokenConfig))
	waitEnv(t, ns, "web", appVar, hashOfData(fixedConfig)) // rolled back
	wantHeld(t, ns)
	return ns, getDeployment(t, ns, "web").Generation
}

// waitHoldLifted waits until web's hold on app is gone from the state ConfigMap.
func waitHoldLifted(t *testing.T, ns, by string) {
	t.Helper()
	waitFor(t, 10*time.Second, "the hold lifted by "+by, func() (bool, error) {
		_, held := stateValues(t, ns, "hold.")["hold.ConfigMap.Deployment_web_app"]
		return !held, nil
	})
}

// Content that does not validate reloads nothing, but it is another content seen: it ends a
// hold, so the rolled-back content applied again afterwards is a change the user made on
// purpose, and reloads (it stayed held).
func TestContentThatDoesNotValidateEndsAHoldSoTheBrokenContentAppliedAgainReloads(t *testing.T) {
	t.Parallel()
	ns, gen := heldWhileRunningFixed(t)
	setConfigMapAnnotation(t, ns, "app", policy.ValidateAnnotation, `"app.json=json"`)
	updateConfigMap(t, ns, "app", map[string]string{"app.json": `{"ok": `})
	waitFor(t, 10*time.Second, "the InvalidConfig warning", func() (bool, error) {
		return countEvents(t, ns, "app", "InvalidConfig") == 1, nil
	})
	waitHoldLifted(t, ns, "the content that does not validate")
	wantReloads(t, ns, "web", gen, 0)

	// Positive control: the broken content applied again reloads web.
	updateConfigMap(t, ns, "app", brokenConfig)
	waitEnv(t, ns, "web", appVar, hashOfData(brokenConfig))
}

// wantHeld fails unless the state ConfigMap holds web's hold on the broken content.
func wantHeld(t *testing.T, ns string) {
	t.Helper()
	waitFor(t, 10*time.Second, "hold written to the state", func() (bool, error) {
		cm, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "reloader-state", metav1.GetOptions{})
		return err == nil && cm.Data["hold.ConfigMap.Deployment_web_app"] == hashOfData(brokenConfig), err
	})
}

func TestARollbackLostToACrashIsDoneByTheNextStartAndNotReloadedAgain(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	followedDeployment(t, ns, map[string]string{"configmap.reloader.stakater.com/reload": "app"})
	rollback := func(o *reloader.Options) { o.Follow.Rollback = true } // the flag, not the annotation
	first := startController(t, ns, controllerOpts{tweak: rollback})
	rollbackScenario(t, ns, func() {
		first.stop(t) // grace 0: abandons everything, as kill -9 would
		waitFor(t, 30*time.Second, "the rollout to fail while no reloader runs", func() (bool, error) {
			p, _ := policy.RolloutProgress(getDeployment(t, ns, "web"))
			return p == policy.Stuck, nil
		})
		startController(t, ns, controllerOpts{tweak: rollback})
	})
	wantHeld(t, ns)
	wantReloads(t, ns, "web", getDeployment(t, ns, "web").Generation, 0)
}

func TestANewerReloadSupersedesOneStillRolling(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	followedDeployment(t, ns, map[string]string{"configmap.reloader.stakater.com/reload": "app", policy.TrackAnnotation: "true"})
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) {
		d.Spec.ProgressDeadlineSeconds = new(int32(600)) // the broken rollout stays progressing
	})
	r := startController(t, ns, controllerOpts{})
	updateConfigMap(t, ns, "app", brokenConfig)
	waitOutcome(t, ns, policy.OutcomeProgressing)
	updateConfigMap(t, ns, "app", fixedConfig)
	waitOutcome(t, ns, policy.OutcomeSucceeded)
	h := policy.ParseHistory(getDeployment(t, ns, "web").Annotations[policy.HistoryAnnotation])
	if len(h) != 2 || h[1].Outcome != policy.OutcomeSuperseded || !strings.HasSuffix(h[1].Configs[0], hashOfData(brokenConfig)[:8]) {
		t.Fatalf("history %+v, want the broken reload superseded", h)
	}
	waitEvent(t, ns, "RolloutSuperseded")
	if n := outcomes(r, policy.OutcomeSuperseded); n != 1 {
		t.Errorf("reloader_rollouts_total{outcome=superseded} = %v, want 1", n)
	}
}

func TestADaemonSetRolloutPastItsTimeoutIsTimedOutAndRolledBack(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app", goodConfig)
	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Annotations: map[string]string{"configmap.reloader.stakater.com/reload": "app",
			policy.RollbackAnnotation: "true", policy.TimeoutAnnotation: "3s"}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "fake",
					Env: []corev1.EnvVar{{Name: testcluster.NotReadyWhen, Value: hashOfData(brokenConfig)}}}}}}},
	}
	dss := cluster.Client().AppsV1().DaemonSets(ns)
	if _, err := dss.Create(context.Background(), ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	get := func() *appsv1.DaemonSet {
		d, err := dss.Get(context.Background(), "agent", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	waitFor(t, 30*time.Second, "first rollout", func() (bool, error) {
		d := get()
		p, _ := policy.RolloutProgress(d)
		return p == policy.Done && d.Status.NumberAvailable == 1, nil
	})
	r := startController(t, ns, controllerOpts{})
	updateConfigMap(t, ns, "app", brokenConfig)
	var e policy.Entry
	waitFor(t, 30*time.Second, "timed out and rolled back", func() (bool, error) {
		h := policy.ParseHistory(get().Annotations[policy.HistoryAnnotation])
		if len(h) > 0 {
			e = h[0]
		}
		return e.Outcome == policy.OutcomeTimedOut && e.RolledBack, nil
	})
	waitFor(t, 30*time.Second, "the previous pod template running and available again", func() (bool, error) {
		d := get()
		p, _ := policy.RolloutProgress(d)
		return p == policy.Done && d.Status.NumberAvailable == 1, nil
	})
	if n := testutil.ToFloat64(r.metrics.Rollouts.Outcomes.WithLabelValues("DaemonSet", policy.OutcomeTimedOut)); n != 1 {
		t.Errorf("reloader_rollouts_total{kind=DaemonSet,outcome=timed-out} = %v, want 1", n)
	}
	settle(t)
	if g := get().Generation; g != 3 {
		t.Errorf("DaemonSet generation %d, want 3 (created, reloaded, rolled back)", g)
	}
}

// setCustomStatus writes a custom workload's status as its controller would. The test CRDs have
// no status subresource, so the write bumps the generation: the observed generation written is
// the one the write makes.
func setCustomStatus(t *testing.T, gvr schema.GroupVersionResource, ns, name string, status map[string]any) {
	t.Helper()
	res := dynamic.NewForConfigOrDie(cluster.AdminConfig()).Resource(gvr).Namespace(ns)
	u, err := res.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status["observedGeneration"] = u.GetGeneration() + 1
	u.Object["status"] = status
	if _, err := res.Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func customHistory(t *testing.T, gvr schema.GroupVersionResource, ns, name string) []policy.Entry {
	_, u := templateEnv(t, gvr, ns, name, cmVar)
	return policy.ParseHistory(u.GetAnnotations()[policy.HistoryAnnotation])
}

func TestArgoRolloutsAndDeploymentConfigsAreFollowedByTheirStatus(t *testing.T) {
	t.Parallel()
	ensureCRDs(t)
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	ann := named("configmap", "app-config")
	ann[policy.RollbackAnnotation] = "true"
	createCustom(t, rolloutsGVR, "Rollout", ns, "rollout", ann)
	createCustom(t, deploymentConfigsGVR, "DeploymentConfig", ns, "dc", ann)
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.ArgoRollouts, o.OpenShift = true, true }})
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	for _, w := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{{rolloutsGVR, "rollout"}, {deploymentConfigsGVR, "dc"}} {
		waitFor(t, 10*time.Second, w.name+" reloaded and followed", func() (bool, error) {
			v, _ := templateEnv(t, w.gvr, ns, w.name, cmVar)
			h := customHistory(t, w.gvr, ns, w.name)
			return v == hash && len(h) == 1 && h[0].Outcome == policy.OutcomeProgressing, nil
		})
	}

	setCustomStatus(t, rolloutsGVR, ns, "rollout", map[string]any{"phase": "Degraded", "message": "ProgressDeadlineExceeded"})
	setCustomStatus(t, deploymentConfigsGVR, ns, "dc", map[string]any{"conditions": []any{
		map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicationControllerAvailable"}}})
	waitFor(t, 10*time.Second, "the degraded Rollout rolled back", func() (bool, error) {
		v, _ := templateEnv(t, rolloutsGVR, ns, "rollout", cmVar)
		h := customHistory(t, rolloutsGVR, ns, "rollout")
		return v == "" && h[0].Outcome == policy.OutcomeFailed && h[0].RolledBack, nil
	})
	waitFor(t, 10*time.Second, "the DeploymentConfig succeeded", func() (bool, error) {
		v, _ := templateEnv(t, deploymentConfigsGVR, ns, "dc", cmVar)
		return v == hash && customHistory(t, deploymentConfigsGVR, ns, "dc")[0].Outcome == policy.OutcomeSucceeded, nil
	})
}

func TestAMalformedSafeReloadAnnotationIsReportedOnceAndTheDefaultApplies(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	followedDeployment(t, ns, map[string]string{"configmap.reloader.stakater.com/reload": "app",
		policy.TrackAnnotation: "true", policy.TimeoutAnnotation: "soon"})
	startController(t, ns, controllerOpts{})
	updateConfigMap(t, ns, "app", fixedConfig)
	waitOutcome(t, ns, policy.OutcomeSucceeded)
	waitEvent(t, ns, "InvalidSafeReloadAnnotation")
	list, err := cluster.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=InvalidSafeReloadAnnotation"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Count != 1 || !strings.Contains(list.Items[0].Message, `"soon"`) {
		t.Errorf("want one Event naming the value once, got %+v", list.Items)
	}
}

func TestAStatefulSetRolloutWithAPartitionSucceedsOnceTheOrdinalsAboveItAreUpdated(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app", goodConfig)
	labels := map[string]string{"app": "db"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: map[string]string{"configmap.reloader.stakater.com/reload": "app",
			policy.TrackAnnotation: "true"}},
		Spec: appsv1.StatefulSetSpec{Replicas: new(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: new(int32(2))}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "fake"}}}}},
	}
	client := cluster.Client().AppsV1().StatefulSets(ns)
	if _, err := client.Create(context.Background(), sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	get := func() *appsv1.StatefulSet {
		s, err := client.Get(context.Background(), "db", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	waitFor(t, 60*time.Second, "three ready replicas", func() (bool, error) { return get().Status.ReadyReplicas == 3, nil })
	startController(t, ns, controllerOpts{})
	updateConfigMap(t, ns, "app", fixedConfig)
	var h []policy.Entry
	waitFor(t, 60*time.Second, "succeeded", func() (bool, error) {
		h = policy.ParseHistory(get().Annotations[policy.HistoryAnnotation])
		return len(h) > 0 && h[0].Outcome == policy.OutcomeSucceeded, nil
	})
	s := get()
	if s.Status.UpdatedReplicas != 1 || s.Status.CurrentRevision == s.Status.UpdateRevision {
		t.Errorf("succeeded with %d replicas updated and revisions %s/%s; want only the ordinal above the partition updated",
			s.Status.UpdatedReplicas, s.Status.CurrentRevision, s.Status.UpdateRevision)
	}
}

// brokenImage stands for kubectl set image to an image that never becomes Ready: the container
// gets a variable holding the value that makes the test cluster keep its pods not Ready.
const brokenImage = "web:broken"

func setBrokenImage(d *appsv1.Deployment) {
	c := &d.Spec.Template.Spec.Containers[0]
	c.Image = brokenImage
	c.Env = append(c.Env, corev1.EnvVar{Name: "BROKEN_IMAGE", Value: hashOfData(brokenConfig)})
	d.Spec.ProgressDeadlineSeconds = new(int32(3))
	d.Spec.MinReadySeconds = 0
}

// anotherActorsChangeScenario reloads web onto good content whose rollout cannot end by itself
// (its new pods are Ready but not available for 10 minutes), then, while that rollout is
// followed, another actor sets an image that never becomes Ready. With restart, the reloader is
// killed before the other actor's change and started again once that rollout has failed, so it
// resumes the follow from the history line alone. It returns the reload's history entry once its
// outcome is written.
func anotherActorsChangeScenario(t *testing.T, ns string, restart bool) policy.Entry {
	t.Helper()
	followedDeployment(t, ns, map[string]string{"configmap.reloader.stakater.com/reload": "app", policy.RollbackAnnotation: "true"})
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) {
		d.Spec.ProgressDeadlineSeconds, d.Spec.MinReadySeconds = new(int32(3600)), 600
	})
	r := startController(t, ns, controllerOpts{})
	updateConfigMap(t, ns, "app", fixedConfig)
	waitEnv(t, ns, "web", appVar, hashOfData(fixedConfig))
	waitOutcome(t, ns, policy.OutcomeProgressing)
	if restart {
		r.stop(t) // grace 0, as kill -9 would
	}
	updateDeployment(t, ns, "web", setBrokenImage)
	waitFor(t, 60*time.Second, "the other actor's rollout to fail", func() (bool, error) {
		p, _ := policy.RolloutProgress(getDeployment(t, ns, "web"))
		return p == policy.Stuck, nil
	})
	if restart {
		startController(t, ns, controllerOpts{})
	}
	var e policy.Entry
	waitFor(t, 60*time.Second, "the reload's outcome", func() (bool, error) {
		var ok bool
		e, ok = newestEntry(t, ns)
		return ok && e.Outcome != policy.OutcomeProgressing, nil
	})
	settle(t)
	return e
}

// wantSupersededByTheOtherActor fails unless the reload was judged superseded, nothing was rolled
// back or held, and the other actor's template stands; then, as a positive control, once the
// other actor repairs the image, a config change reloads web exactly once.
func wantSupersededByTheOtherActor(t *testing.T, ns string, e policy.Entry) {
	t.Helper()
	if e.Outcome != policy.OutcomeSuperseded || e.RolledBack {
		t.Errorf("our reload's outcome is %q (rolled back: %v), want superseded and not rolled back", e.Outcome, e.RolledBack)
	}
	d := getDeployment(t, ns, "web")
	if d.Spec.Template.Spec.Containers[0].Image != brokenImage {
		t.Errorf("the other actor's image was replaced: %q", d.Spec.Template.Spec.Containers[0].Image)
	}
	if got, _ := env(d, "app", appVar); got != hashOfData(fixedConfig) {
		t.Errorf("web's marker is %q, want the reloaded content's hash (not rolled back)", got)
	}
	if _, ok := d.Annotations[policy.RestoreAnnotation]; ok {
		t.Error("the restore record outlived the reload's outcome")
	}
	if holds := stateValues(t, ns, "hold."); len(holds) != 0 {
		t.Errorf("holds %v, want none", holds)
	}
	if reasons := eventReasons(t, ns); strings.Contains(reasons, "RolledBack") || strings.Contains(reasons, "RolloutFailed") {
		t.Errorf("Events %s blame the reload", reasons)
	}
	waitEvent(t, ns, "RolloutSuperseded")

	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) {
		c := &d.Spec.Template.Spec.Containers[0]
		c.Image, c.Env = "fake", c.Env[:len(c.Env)-1]
	})
	waitFor(t, 60*time.Second, "the other actor's repaired rollout", func() (bool, error) {
		p, _ := policy.RolloutProgress(getDeployment(t, ns, "web"))
		return p == policy.Done, nil
	})
	gen := getDeployment(t, ns, "web").Generation
	other := map[string]string{"app.json": `{"ok": true, "v": 3}`}
	updateConfigMap(t, ns, "app", other)
	waitEnv(t, ns, "web", appVar, hashOfData(other))
	waitOutcome(t, ns, policy.OutcomeSucceeded)
	// One patch made the reload (a Deployment's generation also moves with its annotations, so
	// the outcome's write moves it once more): the history has one line more, made at gen+1.
	settle(t)
	h := policy.ParseHistory(getDeployment(t, ns, "web").Annotations[policy.HistoryAnnotation])
	if len(h) != 2 || h[0].Generation != gen+1 || h[0].Outcome != policy.OutcomeSucceeded || h[1].Outcome != policy.OutcomeSuperseded {
		t.Errorf("history %+v, want one reload at generation %d after the superseded one", h, gen+1)
	}
}

func TestAnotherActorsBrokenImageDuringOurRolloutIsNotRolledBackNorHeld(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	wantSupersededByTheOtherActor(t, ns, anotherActorsChangeScenario(t, ns, false))
}

func TestAnotherActorsBrokenImageWhileTheReloaderIsDownIsNotRolledBackAtItsStart(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	wantSupersededByTheOtherActor(t, ns, anotherActorsChangeScenario(t, ns, true))
}

// stoppedDeadline is the progress deadline of stoppedInARollout's web.
const stoppedDeadline = time.Hour

// stoppedInARollout reloads a followed web (with rollback) whose rollout never ends by itself,
// and stops the reloader while it is progressing: a stand-in for a cache judged at a chosen
// moment (JudgeRolloutAsCached). It returns the stopped reloader and the reload's entry.
func stoppedInARollout(t *testing.T, ns string) (*running, policy.Entry) {
	t.Helper()
	followedDeployment(t, ns, map[string]string{"configmap.reloader.stakater.com/reload": "app", policy.RollbackAnnotation: "true"})
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) {
		d.Spec.ProgressDeadlineSeconds, d.Spec.MinReadySeconds = new(int32(stoppedDeadline/time.Second)), 600 // never ends by itself
	})
	r := startController(t, ns, controllerOpts{})
	updateConfigMap(t, ns, "app", fixedConfig)
	waitEnv(t, ns, "web", appVar, hashOfData(fixedConfig))
	reload := waitOutcome(t, ns, policy.OutcomeProgressing)
	r.stop(t)
	return r, reload
}

// The rollout's outcome is judged on the cached workload, which may not show yet another actor's
// template change made just before the deadline (soak seed 1795711302120981478@4). Its write,
// a rollback here, applies only to the generation it was judged on: it is stale, nothing is
// rolled back or held, and the next judgement, on the change, calls the rollout superseded
// and lifts the holds the unsent rollback wrote.
func TestARollbackJudgedOnACacheBehindAnotherActorsChangeIsNotSent(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	r, _ := stoppedInARollout(t, ns)
	cached := getDeployment(t, ns, "web")
	updateDeployment(t, ns, "web", setBrokenImage)

	// As the cache held it at the deadline: a timeout of 1ms stands in for the deadline passed.
	cached.Annotations[policy.TimeoutAnnotation] = "1ms"
	time.Sleep(time.Second) // the history keeps the second: the deadline is the next one's end
	if err := r.ctrl.JudgeRolloutAsCached(context.Background(), cached); !errors.Is(err, reloader.ErrStale) {
		t.Fatalf("judged on a cache behind the other actor's change: %v, want the write stale", err)
	}
	if e, _ := newestEntry(t, ns); e.Outcome != policy.OutcomeProgressing {
		t.Fatalf("outcome %q written from a cache behind the other actor's change", e.Outcome)
	}
	if d := getDeployment(t, ns, "web"); d.Spec.Template.Spec.Containers[0].Image != brokenImage {
		t.Fatalf("the other actor's image was replaced: %q", d.Spec.Template.Spec.Containers[0].Image)
	}

	// Judged again on the change: superseded, and the holds the unsent rollback wrote are lifted.
	startController(t, ns, controllerOpts{})
	e := waitOutcome(t, ns, policy.OutcomeSuperseded)
	settle(t)
	wantSupersededByTheOtherActor(t, ns, e)
}

// The Deployment controller keeps a progress deadline the last rollout exceeded until the next
// one progresses (it writes no new condition when the next template's ReplicaSet exists), so a
// reload judged on that status was taken as failed 17 ms after its patch and rolled back (make
// test, TestARollbackAtTheResumeOfAPausedDeletionReloadReloadsTheRecreation, once). A deadline
// written before the reload is not its own, nor one a lagging controller writes in the seconds
// after it (CI 2026-12-03); one written once the reload's own deadline could pass is (the control).
func TestAProgressDeadlineWrittenBeforeTheReloadDoesNotFailIt(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		offset time.Duration // after the reload's own deadline could first pass
		want   string
	}{
		"written before the reload":           {-time.Minute - stoppedDeadline, policy.OutcomeProgressing},
		"written a second after the reload":   {time.Second - stoppedDeadline, policy.OutcomeProgressing},
		"written once its own deadline could": {time.Minute, policy.OutcomeFailed},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := cluster.NewNamespace(t)
			r, reload := stoppedInARollout(t, ns)
			cached := getDeployment(t, ns, "web")
			cached.Status.ObservedGeneration = cached.Generation
			cached.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
				Reason: "ProgressDeadlineExceeded", LastUpdateTime: metav1.NewTime(reload.At.Add(stoppedDeadline + c.offset))}}
			if err := r.ctrl.JudgeRolloutAsCached(context.Background(), cached); err != nil {
				t.Fatal(err)
			}
			if e, _ := newestEntry(t, ns); e.Outcome != c.want {
				t.Errorf("outcome %q, want %q", e.Outcome, c.want)
			}
		})
	}
}

// A change outside the pod template (here the revision history limit; a scale is another) moves
// the generation without replacing the reload's template: its failure is still its own.
func TestAFailedReloadIsRolledBackThoughTheSpecChangedOutsideItsTemplate(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	followedDeployment(t, ns, map[string]string{"configmap.reloader.stakater.com/reload": "app", policy.RollbackAnnotation: "true"})
	startController(t, ns, controllerOpts{})
	rollbackScenario(t, ns, func() {
		updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Spec.RevisionHistoryLimit = new(int32(5)) })
	})
	wantHeld(t, ns)
}

// A CronJob's reload runs a Job and a Job's recreates it: there is no rollout of a template to
// follow, so with tracking and rollback on they get no history line, no restore record and no
// hold, as OnDelete workloads do. Later edits of their specs run and recreate nothing: their
// progressing line was marked superseded through their reload patch, which ran a second Job and
// recreated the Job again. The Deployment beside them, on the same config, is followed.
func TestCronJobsAndJobsAreNotFollowedUnderTrackingAndRollback(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	followedDeployment(t, ns, named("configmap", "app"))
	cj := createCronJob(t, ns, "nightly", named("configmap", "app"))
	old := createJob(t, ns, "migrate", named("configmap", "app"))
	r := startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.Follow.Track, o.Follow.Rollback = true, true }})
	settle(t)

	updateConfigMap(t, ns, "app", fixedConfig)
	waitOutcome(t, ns, policy.OutcomeSucceeded) // the positive control: web is followed
	waitFor(t, 30*time.Second, "a Job run and the Job recreated", func() (bool, error) {
		return len(jobsOf(t, ns, cj.UID)) == 1 && getJob(t, ns, "migrate").UID != old.UID, nil
	})
	settle(t)
	cronJobs := cluster.Client().BatchV1().CronJobs(ns)
	cronJob, err := cronJobs.Get(context.Background(), "nightly", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recreated := getJob(t, ns, "migrate")
	for what, ann := range map[string]map[string]string{"CronJob": cronJob.Annotations, "Job": recreated.Annotations} {
		for _, a := range []string{policy.HistoryAnnotation, policy.RestoreAnnotation} {
			if v, ok := ann[a]; ok {
				t.Errorf("the %s carries %s: %q", what, a, v)
			}
		}
	}
	if holds := stateValues(t, ns, "hold."); len(holds) != 0 {
		t.Errorf("holds in the state: %v", holds)
	}

	// Edits of their specs by someone else: nothing to judge, so no Job runs, none is recreated.
	for i := range int64(2) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			c, err := cronJobs.Get(context.Background(), "nightly", metav1.GetOptions{})
			if err != nil {
				return err
			}
			c.Spec.Schedule = fmt.Sprintf("0 %d 1 1 *", i+1)
			_, err = cronJobs.Update(context.Background(), c, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			j := getJob(t, ns, "migrate")
			j.Spec.ActiveDeadlineSeconds = new(int64(3600 + i))
			_, err := cluster.Client().BatchV1().Jobs(ns).Update(context.Background(), j, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	settle(t)
	if n := len(jobsOf(t, ns, cj.UID)); n != 1 {
		t.Errorf("%d Jobs of the CronJob after one change, want 1", n)
	}
	if j := getJob(t, ns, "migrate"); j.UID != recreated.UID {
		t.Error("an edit of the Job's spec recreated it")
	}
	for _, kind := range []string{"CronJob", "Job"} {
		for _, o := range []string{policy.OutcomeSucceeded, policy.OutcomeSuperseded, policy.OutcomeFailed, policy.OutcomeTimedOut} {
			if n := testutil.ToFloat64(r.metrics.Rollouts.Outcomes.WithLabelValues(kind, o)); n != 0 {
				t.Errorf("reloader_rollouts_total{kind=%s,outcome=%s} = %v, want 0", kind, o, n)
			}
		}
	}
}

// A followed reload whose read of the pod template is slow (an outage held it) takes its time
// after that read, so its rollout times out no sooner than its timeout after the patch (soak
// seed 1795657828041649790: the time was taken before a read an outage held for seconds, and
// the reload was rolled back a second after it landed). The positive control: it still times
// out and is rolled back.
func TestAFollowedReloadTakesItsTimeAfterASlowReadOfItsTemplate(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	followedDeployment(t, ns, map[string]string{"configmap.reloader.stakater.com/reload": "app",
		policy.RollbackAnnotation: "true", policy.TimeoutAnnotation: "2s"})
	var armed atomic.Bool
	var readEnd atomic.Int64
	cfg := rest.CopyConfig(cluster.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, "/deployments/web") || !armed.CompareAndSwap(true, false) {
				return rt.RoundTrip(req)
			}
			select { // one read of web held 4 s, as an outage would
			case <-time.After(4 * time.Second):
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
			resp, err := rt.RoundTrip(req)
			readEnd.Store(time.Now().UnixNano())
			return resp, err
		})
	})
	startControllerAs(t, cfg, ns, controllerOpts{})
	settle(t)
	armed.Store(true)
	updateConfigMap(t, ns, "app", brokenConfig)
	var e policy.Entry
	waitFor(t, 30*time.Second, "the reload's history line", func() (bool, error) {
		var ok bool
		e, ok = newestEntry(t, ns)
		return ok && strings.HasSuffix(e.Configs[0], hashOfData(brokenConfig)[:8]), nil
	})
	if read := time.Unix(0, readEnd.Load()); readEnd.Load() == 0 || e.At.Add(time.Second).Before(read) {
		t.Fatalf("the reload's time is %s, before its read of the template ended (%s): its timeout counts from before its patch",
			e.At.Format(time.StampMilli), read.Format(time.StampMilli))
	}
	e = waitOutcome(t, ns, policy.OutcomeTimedOut)
	if !e.RolledBack {
		t.Fatalf("the timed-out rollout was not rolled back: %+v", e)
	}
}

// The lost change of soak seed 1795664411625522854@4: web, followed with rollback on, also reads
// key a of ConfigMap db. db is deleted (no --reload-on-delete: no restart), then a change of app
// restarts web while db is absent: the new pods would wait for db and start on the content it
// reappears with. That rollout fails and is rolled back: the pods are the previous ReplicaSet's
// again, which run db's content from before its deletion. db reappearing with other content is
// a change for them: web must reload once for it, though app's broken content stays held.
func TestAConfigReappearingAfterARolledBackRestartWhileItWasAbsentReloadsTheRestoredPods(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	dbVar := policy.EnvVarName(policy.ConfigRef{Kind: policy.KindConfigMap, Name: "db"})
	createConfigMap(t, ns, "db", map[string]string{"a": "0"})
	followedDeployment(t, ns, map[string]string{"reloader.stakater.com/auto": "true", policy.RollbackAnnotation: "true"})
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) {
		c := &d.Spec.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "a"}}})
	})
	waitFor(t, 30*time.Second, "the rollout reading db", func() (bool, error) {
		p, _ := policy.RolloutProgress(getDeployment(t, ns, "web"))
		return p == policy.Done, nil
	})
	startController(t, ns, controllerOpts{})
	settle(t)
	// A first change of db gives web a marker of it, and rolls out.
	updateConfigMap(t, ns, "db", map[string]string{"a": "1"})
	waitOutcome(t, ns, policy.OutcomeSucceeded)
	marker, _ := env(getDeployment(t, ns, "web"), "app", dbVar)

	if err := cluster.Client().CoreV1().ConfigMaps(ns).Delete(context.Background(), "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	settle(t)
	updateConfigMap(t, ns, "app", brokenConfig) // restarts web while db is absent
	waitEnv(t, ns, "web", appVar, hashOfData(brokenConfig))
	if e := waitOutcome(t, ns, policy.OutcomeFailed); !e.RolledBack {
		t.Fatalf("failed rollout not rolled back: %+v", e)
	}
	waitFor(t, 10*time.Second, "the marker of db restored", func() (bool, error) {
		got, _ := env(getDeployment(t, ns, "web"), "app", dbVar)
		_, broken := env(getDeployment(t, ns, "web"), "app", appVar)
		return got == marker && !broken, nil
	})
	settle(t)

	createConfigMap(t, ns, "db", map[string]string{"a": "2"})
	waitFor(t, 30*time.Second, "web reloaded for db's reappearance with other content", func() (bool, error) {
		got, _ := env(getDeployment(t, ns, "web"), "app", dbVar)
		return got != marker, nil
	})
	if _, broken := env(getDeployment(t, ns, "web"), "app", appVar); broken {
		t.Error("the reload for db carried app's held content")
	}
	waitOutcome(t, ns, policy.OutcomeSucceeded)
	wantReloads(t, ns, "web", getDeployment(t, ns, "web").Generation, 0) // once
}

// The runaway of soak seed 1795668697359437001@4: with --reload-on-delete and rollback, a reload
// for a config's deletion whose rollout fails is rolled back, and the deletion must then be held
// like any failed content. Unheld, it was due again at once, and every rollout failed and was
// rolled back in turn, 57 times in a minute. Here a ResourceQuota leaves no room for the surge
// pod, so the deletion's rollout cannot progress; lifting the quota and recreating the config
// (positive control) ends the hold and reloads once.
func TestARolledBackReloadForADeletionIsHeldUntilTheConfigChanges(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	dbVar := policy.EnvVarName(policy.ConfigRef{Kind: policy.KindConfigMap, Name: "db"})
	lift := heldReloads(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.ReloadOnDelete = true }})
	marker, _ := env(getDeployment(t, ns, "web"), "app", dbVar)

	deleteConfigMap(t, ns, "db")
	waitRolledBack(t, ns, "the deletion's rollout")
	settle(t)
	settle(t)
	if got, _ := env(getDeployment(t, ns, "web"), "app", dbVar); got != marker {
		t.Fatalf("web's marker of db is %q after the rollback, want the restored %q: the deletion was reloaded again", got, marker)
	}
	if h := webHistory(t, ns); len(h) != 2 {
		t.Fatalf("web's history has %d reloads, want 2 (the change, the rolled-back deletion): %+v", len(h), h)
	}

	lift()
	createConfigMap(t, ns, "db", map[string]string{"a": "2"})
	waitEnv(t, ns, "web", dbVar, hashOfData(map[string]string{"a": "2"}))
	waitOutcome(t, ns, policy.OutcomeSucceeded)
	settle(t)
	if h := webHistory(t, ns); len(h) != 3 {
		t.Fatalf("web's history has %d reloads after the recreation, want 3: %+v", len(h), h)
	}
}

func deleteConfigMap(t *testing.T, ns, name string) {
	t.Helper()
	if err := cluster.Client().CoreV1().ConfigMaps(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// heldReloads starts web, reading all of ConfigMap db, with rollback, and a reloader; its first
// reload (to a=1) succeeds. Then a quota keeps any rollout from surging a pod, so each reload
// after it times out and is rolled back, until noSurge's returned lift removes it.
func heldReloads(t *testing.T, ns string, o controllerOpts, also ...string) (lift func()) {
	t.Helper()
	followedWeb(t, ns, also...)
	startController(t, ns, o)
	settle(t)
	updateConfigMap(t, ns, "db", map[string]string{"a": "1"}) // a marker, for rollbacks to restore
	waitOutcome(t, ns, policy.OutcomeSucceeded)
	settle(t)

	return noSurge(t, ns)
}

// followedWeb creates ConfigMap db (a=0) and the others named in also (v=0), and web, reloaded
// on all of them, followed with rollback after 3 s, and waits for its first rollout.
func followedWeb(t *testing.T, ns string, also ...string) {
	t.Helper()
	createConfigMap(t, ns, "db", map[string]string{"a": "0"})
	for _, name := range also {
		createConfigMap(t, ns, name, map[string]string{"v": "0"})
	}
	createDeploymentFrom(t, ns, "web", func(d *appsv1.Deployment) {
		d.Annotations = map[string]string{"reloader.stakater.com/auto": "true",
			policy.RollbackAnnotation: "true", policy.TimeoutAnnotation: "60s"}
		d.Spec.Replicas = new(int32(1))
		d.Spec.ProgressDeadlineSeconds = new(int32(60))
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr(intstr.FromInt32(0)), MaxSurge: ptr(intstr.FromInt32(1))}
		c := &d.Spec.Template.Spec.Containers[0]
		for _, name := range append([]string{"db"}, also...) {
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}})
		}
	})
	waitFor(t, 30*time.Second, "first rollout", func() (bool, error) {
		p, _ := policy.RolloutProgress(getDeployment(t, ns, "web"))
		return p == policy.Done, nil
	})
}

// noSurge keeps any rollout in ns from surging a pod, so that each times out and is rolled
// back, until the returned lift.
func noSurge(t *testing.T, ns string) (lift func()) {
	t.Helper()
	quotas := cluster.Client().CoreV1().ResourceQuotas(ns)
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-surge"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}}}
	if _, err := quotas.Create(context.Background(), q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the quota counted", func() (bool, error) {
		q, err := quotas.Get(context.Background(), "no-surge", metav1.GetOptions{})
		_, used := q.Status.Used[corev1.ResourcePods]
		return err == nil && used, err
	})
	webRolloutTimeout(t, ns, 3)
	return func() {
		if err := quotas.Delete(context.Background(), "no-surge", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		webRolloutTimeout(t, ns, 60)
	}
}

// webRolloutTimeout sets web's rollout timeout and progress deadline: 3 s where its rollouts are
// to fail fast, a minute where they are to succeed, which a loaded machine took more than 3 s
// to do (pods_started=0).
func webRolloutTimeout(t *testing.T, ns string, seconds int32) {
	t.Helper()
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) {
		d.Annotations[policy.TimeoutAnnotation], d.Spec.ProgressDeadlineSeconds = fmt.Sprintf("%ds", seconds), new(seconds)
	})
	settle(t)
}

// rolledBackTo changes db to data and waits until web's reload for it is rolled back, its
// marker back at the content a=1.
func rolledBackTo(t *testing.T, ns string, data map[string]string) {
	t.Helper()
	before := len(webHistory(t, ns))
	updateConfigMap(t, ns, "db", data)
	waitFor(t, 60*time.Second, "the reload for "+fmt.Sprint(data)+" rolled back", func() (bool, error) {
		h := webHistory(t, ns)
		// The rollout timeout and the progress deadline are both 3 s: under load either ends it.
		return len(h) > before && (h[0].Outcome == policy.OutcomeTimedOut || h[0].Outcome == policy.OutcomeFailed) && h[0].RolledBack, nil
	})
	settle(t)
	dbVar := policy.EnvVarName(policy.ConfigRef{Kind: policy.KindConfigMap, Name: "db"})
	if got, _ := env(getDeployment(t, ns, "web"), "app", dbVar); got != hashOfData(map[string]string{"a": "1"}) {
		t.Fatalf("web's marker of db is %q after the rollback, want the restored one of a=1", got)
	}
}

func webHistory(t *testing.T, ns string) []policy.Entry {
	t.Helper()
	return policy.ParseHistory(getDeployment(t, ns, "web").Annotations[policy.HistoryAnnotation])
}

// wantOneReloadForTheReturn sets db back to a=1, the content of web's marker, and wants web
// reloaded for it, once.
func wantOneReloadForTheReturn(t *testing.T, ns string) {
	t.Helper()
	webRolloutTimeout(t, ns, 60) // the reload for the return is to succeed
	before := len(webHistory(t, ns))
	updateConfigMap(t, ns, "db", map[string]string{"a": "1"})
	waitFor(t, 30*time.Second, "web reloaded for the return of db's content", func() (bool, error) {
		return len(webHistory(t, ns)) > before, nil
	})
	waitOutcome(t, ns, policy.OutcomeSucceeded)
	settle(t)
	if h := webHistory(t, ns); len(h) != before+1 {
		t.Fatalf("web was reloaded %d times for the return of db's content, want 1: %+v", len(h)-before, h)
	}
}

func setImage(t *testing.T, ns, image string) {
	t.Helper()
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image })
	settle(t)
}

// TestPodsAnotherActorRestartedWhileAReloadWasHeldAreReloadedWhenTheConfigReturns: a reload is
// rolled back and its content held; then another actor changes the image, so the new pods read
// the held content although the restored marker says the one before. When the config returns
// to the marker's content, those pods run the held one: the workload is reloaded, once (soak
// seed 1795669739113515711@4, lost).
func TestPodsAnotherActorRestartedWhileAReloadWasHeldAreReloadedWhenTheConfigReturns(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	lift := heldReloads(t, ns, controllerOpts{})
	rolledBackTo(t, ns, map[string]string{"a": "2"})
	lift()
	setImage(t, ns, "web:2") // its pods read db as it is, a=2
	wantOneReloadForTheReturn(t, ns)
}

// TestARolledBackReloadPutsBackWhatAnotherActorsRestartGaveThePods: as above, but a reload made
// after the other actor's change is rolled back too. The rollback puts back the other actor's
// template, whose pods read a=2: the config's return to a=1 still reloads the workload, once
// (the same seed, after the fix above).
func TestARolledBackReloadPutsBackWhatAnotherActorsRestartGaveThePods(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	lift := heldReloads(t, ns, controllerOpts{})
	rolledBackTo(t, ns, map[string]string{"a": "2"})
	setImage(t, ns, "web:2") // its pods read a=2
	rolledBackTo(t, ns, map[string]string{"a": "3"})
	lift()
	wantOneReloadForTheReturn(t, ns)
}

// TestPodsOfOurReloadForAnotherConfigRunTheHeldContent: db's reload is rolled back and a=2 held;
// then web is reloaded for another config, and its new pods read db as it is, a=2, although the
// marker says a=1. db's return to a=1 reloads web, once (soak seed 1795669739113515711@4, lost,
// after the two fixes above).
func TestPodsOfOurReloadForAnotherConfigRunTheHeldContent(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	lift := heldReloads(t, ns, controllerOpts{}, "other")
	rolledBackTo(t, ns, map[string]string{"a": "2"})
	lift()
	reloadForOther(t, ns)
	waitOutcome(t, ns, policy.OutcomeSucceeded)
	settle(t)
	wantOneReloadForTheReturn(t, ns)
}

// TestARollbackPutsBackARestartWhosePodsWaitedForAConfigWithTheContentItReappearedWith: web is
// reloaded for another config while db is absent, so its pods wait for db. A later reload is
// rolled back after db reappeared: the pods put back started on db's first content, C1, which
// restarts nothing; db's next content restarts web once. Before, the restart kept for the
// rollback saw no version of db, took the next one, C2, as what its pods ran, and that change
// was lost (soak seed 1795669739113515740@4).
func TestARollbackPutsBackARestartWhosePodsWaitedForAConfigWithTheContentItReappearedWith(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	heldReloads(t, ns, controllerOpts{}, "other")()
	deleteConfigMap(t, ns, "db")
	settle(t)
	before := len(webHistory(t, ns))
	updateConfigMap(t, ns, "other", map[string]string{"v": "1"}) // its pods wait for db
	waitFor(t, 30*time.Second, "web reloaded for other", func() (bool, error) { return len(webHistory(t, ns)) > before, nil })
	waitOutcome(t, ns, policy.OutcomeSucceeded)
	settle(t)

	lift := noSurge(t, ns)
	before = len(webHistory(t, ns))
	updateConfigMap(t, ns, "other", map[string]string{"v": "2"})
	waitFor(t, 30*time.Second, "web reloaded for other again", func() (bool, error) { return len(webHistory(t, ns)) > before, nil })
	createConfigMap(t, ns, "db", map[string]string{"a": "C1"}) // while that reload's rollout runs
	waitRolledBack(t, ns, "the second reload")
	settle(t)
	settle(t)
	lift()
	if h := webHistory(t, ns); len(h) != before+1 {
		t.Fatalf("web was reloaded %d times after the rollback, want none: the pods it put back run db's C1: %+v", len(h)-before-1, h)
	}
	before = len(webHistory(t, ns))
	updateConfigMap(t, ns, "db", map[string]string{"a": "C2"})
	waitFor(t, 30*time.Second, "web reloaded for C2", func() (bool, error) { return len(webHistory(t, ns)) > before, nil })
	waitOutcome(t, ns, policy.OutcomeSucceeded)
	settle(t)
	if h := webHistory(t, ns); len(h) != before+1 {
		t.Fatalf("web was reloaded %d times for C2, want 1: %+v", len(h)-before, h)
	}
}

// TestARollbackWhoseOwnEventIsHandledFirstJudgesByThePodsItPutsBack: web is reloaded for
// another config while db is absent, and db reappears with C1 during that reload's rollout, so
// its pods take C1 and db's reappearance restarts nothing more. The reload is rolled back: the
// pods put back run db's a=1, so web is reloaded for C1. The rollback's own update event is
// handled before its patch call returns (the response is held 1 s here); judged then by the
// restart being undone, db's C1 was left out for good (soak seed 1795681571291661041@4).
func TestARollbackWhoseOwnEventIsHandledFirstJudgesByThePodsItPutsBack(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	var slow atomic.Bool
	slowPatches := func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if req.Method == http.MethodPatch && strings.HasSuffix(req.URL.Path, "/deployments/web") && slow.Load() {
				time.Sleep(time.Second)
			}
			return resp, err
		})
	}
	heldReloads(t, ns, controllerOpts{wrap: slowPatches}, "other")()
	deleteConfigMap(t, ns, "db") // web's pods keep running a=1
	settle(t)

	lift := noSurge(t, ns)
	defer lift()
	slow.Store(true)
	before := len(webHistory(t, ns))
	updateConfigMap(t, ns, "other", map[string]string{"v": "1"}) // its pods wait for db
	waitFor(t, 30*time.Second, "web reloaded for other", func() (bool, error) { return len(webHistory(t, ns)) > before, nil })
	c1 := map[string]string{"a": "C1"}
	createConfigMap(t, ns, "db", c1) // while that reload's rollout runs
	waitRolledBack(t, ns, "the reload")
	waitReloadedFor(t, ns, c1)
}

// TestARollbackPutsBackPodsThatRunAnotherContentOfAConfigTheyCarryNoMarkerOf: web carries no
// marker of db, deleted; it is reloaded for another config, and db reappears with C1 during
// that reload's rollout. Its pods take C1, so the state records C1 as run by every dependent.
// The reload is rolled back: the pods put back started on db's a=0 and carry no marker to say
// so; web is reloaded for C1 (soak seed 1795681571291661041@4: lost, the state judged them).
func TestARollbackPutsBackPodsThatRunAnotherContentOfAConfigTheyCarryNoMarkerOf(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	followedWeb(t, ns, "other")
	first := startController(t, ns, controllerOpts{})
	settle(t)
	updateConfigMap(t, ns, "other", map[string]string{"v": "1"}) // a restore record for rollbacks
	waitOutcome(t, ns, policy.OutcomeSucceeded)
	settle(t)
	dbVar := policy.EnvVarName(policy.ConfigRef{Kind: policy.KindConfigMap, Name: "db"})
	if v, ok := env(getDeployment(t, ns, "web"), "app", dbVar); ok {
		t.Fatalf("web carries a marker of db (%q); this test needs none", v)
	}
	deleteConfigMap(t, ns, "db") // web's pods keep running a=0
	settle(t)
	// A new process: nothing is noted of the restart before the one rolled back.
	first.stop(t)
	startController(t, ns, controllerOpts{})
	settle(t)

	lift := noSurge(t, ns)
	defer lift()
	v2 := map[string]string{"v": "2"}
	updateConfigMap(t, ns, "other", v2) // its pods wait for db
	waitFor(t, 30*time.Second, "web reloaded for other", func() (bool, error) { return newestEntryFor(t, ns, v2) != nil, nil })
	c1 := map[string]string{"a": "C1"}
	createConfigMap(t, ns, "db", c1) // while that reload's rollout runs
	waitFor(t, 30*time.Second, "the reload for other rolled back", func() (bool, error) {
		e := newestEntryFor(t, ns, v2)
		return e.RolledBack, nil
	})
	waitReloadedFor(t, ns, c1)
}

// A reload for a config's deletion carries a marker of it (annotations strategy: a "deleted"
// entry); its rollback takes the marker away and puts back pods without one, which run the
// content from before the deletion. The config reappears with another content during that
// reload's rollout: the workload is reloaded for it once the rollback is done (the sequence of
// soak seed 1795691391691440059@4, whose loss came from elsewhere: see
// TestAScaleAfterAStartIsNotTakenForAnotherActorsRestart).
func TestARollbackOfADeletionReloadLeavesTheContentThatReappearedDue(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	followedWeb(t, ns, "other")
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) {
		o.ReloadOnDelete, o.Strategy = true, policy.StrategyAnnotations
	}})
	settle(t)
	updateConfigMap(t, ns, "other", map[string]string{"v": "1"}) // a restore record for rollbacks
	waitOutcome(t, ns, policy.OutcomeSucceeded)
	settle(t)
	db := policy.ConfigRef{Kind: policy.KindConfigMap, Name: "db"}
	if d := getDeployment(t, ns, "web"); len(policy.MarkerCopies(d.Annotations, &d.Spec.Template, db)) > 0 {
		t.Fatal("web carries a marker of db; this test needs none")
	}

	lift := noSurge(t, ns)
	defer lift()
	before := len(webHistory(t, ns))
	deleteConfigMap(t, ns, "db") // web is reloaded for it; its new pods would wait for db
	var deletion policy.Entry
	waitFor(t, 30*time.Second, "web reloaded for db's deletion", func() (bool, error) {
		h := webHistory(t, ns)
		if len(h) > before {
			deletion = h[0]
		}
		return len(h) > before, nil
	})
	c1 := map[string]string{"a": "C1"}
	createConfigMap(t, ns, "db", c1) // while that reload's rollout runs
	waitFor(t, 30*time.Second, "the deletion reload rolled back", func() (bool, error) {
		h := webHistory(t, ns)
		i := slices.IndexFunc(h, func(e policy.Entry) bool { return e.At.Equal(deletion.At) })
		return i >= 0 && h[i].RolledBack, nil
	})
	waitReloadedFor(t, ns, c1) // the pods put back run a=0
}

// newestEntryFor is web's newest history entry for a reload for content data (nil: none).
func newestEntryFor(t *testing.T, ns string, data map[string]string) *policy.Entry {
	t.Helper()
	for _, e := range webHistory(t, ns) {
		if slices.ContainsFunc(e.Configs, func(c string) bool { return strings.HasSuffix(c, hashOfData(data)[:8]) }) {
			return &e
		}
	}
	return nil
}

// waitReloadedFor waits until web's history holds a reload for db's content data.
func waitReloadedFor(t *testing.T, ns string, data map[string]string) {
	t.Helper()
	waitFor(t, 30*time.Second, "web reloaded for db's "+fmt.Sprint(data), func() (bool, error) {
		return newestEntryFor(t, ns, data) != nil, nil
	})
}

// A reload for another config restarts pods that read the content a hold keeps from them (its
// rollout was rolled back): the reload says so, with a Warning on the workload. Before the hold,
// the reload for db said nothing (the control).
func TestAReloadWhosePodsReadHeldContentWarns(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	lift := heldReloads(t, ns, controllerOpts{}, "other")
	if n := countEvents(t, ns, "web", "HeldContentRead"); n != 0 {
		t.Fatalf("%d HeldContentRead warnings before any hold: %v", n, eventMessages(t, ns, "web"))
	}
	rolledBackTo(t, ns, map[string]string{"a": "2"})
	lift()
	reloadForOther(t, ns)
	waitFor(t, 10*time.Second, "the HeldContentRead warning", func() (bool, error) {
		return countEvents(t, ns, "web", "HeldContentRead") == 1, nil
	})
	if msgs := strings.Join(eventMessages(t, ns, "web"), "\n"); !strings.Contains(msgs, "read the held content of ConfigMap/db") {
		t.Fatalf("the warning does not name db:\n%s", msgs)
	}
}

// reloadForOther changes ConfigMap other and waits until web is reloaded for it.
func reloadForOther(t *testing.T, ns string) {
	t.Helper()
	before := len(webHistory(t, ns))
	updateConfigMap(t, ns, "other", map[string]string{"v": "1"})
	waitFor(t, 30*time.Second, "web reloaded for the other config", func() (bool, error) {
		return len(webHistory(t, ns)) > before, nil
	})
}

// A workload's first reload fails and is rolled back to its template without a marker: its
// pods run the content from before (the rollout surged: the rollback started no pod). A revert to
// that content restarts nothing; the broken content applied again afterwards reloads it
// (positive control).
func TestARevertAfterAFirstReloadWasRolledBackRestartsNothing(t *testing.T) {
	t.Parallel()
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "same process", true: "a reloader started since"}[restart], func(t *testing.T) {
			t.Parallel()
			ns := cluster.NewNamespace(t)
			broken := brokenRolledBack(t, ns, rollbackCase{surge: true, first: true, restart: restart})
			gen := getDeployment(t, ns, "web").Generation
			broken.revert(t) // to goodConfig, what web's pods run since the rollback
			waitHoldLifted(t, ns, "the revert")
			wantReloads(t, ns, "web", gen, 0)

			updateConfigMap(t, ns, "app", brokenConfig)
			waitEnv(t, ns, "web", appVar, hashOfData(brokenConfig))
		})
	}
}

// Two reloads patched into a Deployment during its pause roll out as one at its end; when that
// rollout fails, the rollback puts back the template from before the pause, which its pods
// run, not the first reload's, which never rolled out (seed 1795000000000000115@5).
func TestARollbackAfterAPauseRestoresTheTemplateFromBeforeThePause(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	followedDeployment(t, ns, map[string]string{"configmap.reloader.stakater.com/reload": "app", policy.RollbackAnnotation: "true",
		"deployment.reloader.stakater.com/pause-period": "2s"})
	startController(t, ns, controllerOpts{})
	updateConfigMap(t, ns, "app", fixedConfig)
	waitEnv(t, ns, "web", appVar, hashOfData(fixedConfig))
	updateConfigMap(t, ns, "app", brokenConfig)
	waitEnv(t, ns, "web", appVar, hashOfData(brokenConfig))
	if d := getDeployment(t, ns, "web"); !d.Spec.Paused {
		t.Fatal("web is not paused after its two reloads")
	}
	if e := waitOutcome(t, ns, policy.OutcomeFailed); !e.RolledBack {
		t.Fatalf("failed rollout not rolled back: %+v", e)
	}
	d := getDeployment(t, ns, "web")
	if v, set := env(d, "app", appVar); set {
		t.Errorf("the rollback left marker %q, want none: the template from before the pause", v)
	}
	if d.Spec.Paused {
		t.Error("web is still paused after its rollback")
	}
}

// A workload without a marker of db is reloaded for db's deletion, and the reload is rolled
// back: the pods put back ran db's content, not its absence. Its recreation with another
// content (no --reload-on-create) reloads them (seed 1795100000000000118@5).
func TestARolledBackDeletionReloadOfAWorkloadWithoutAMarkerReloadsItsRecreation(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	dbVar := policy.EnvVarName(policy.ConfigRef{Kind: policy.KindConfigMap, Name: "db"})
	followedWeb(t, ns)
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.ReloadOnDelete = true }})
	settle(t)
	lift := noSurge(t, ns)
	deleteConfigMap(t, ns, "db")
	waitRolledBack(t, ns, "the deletion's rollout")
	if v, set := env(getDeployment(t, ns, "web"), "app", dbVar); set {
		t.Fatalf("web carries marker %q after the rollback, want none", v)
	}
	lift()
	createConfigMap(t, ns, "db", map[string]string{"a": "2"})
	waitEnv(t, ns, "web", dbVar, hashOfData(map[string]string{"a": "2"}))
}

// A reload patched into a paused Deployment whose resume comes past the pause period plus the
// timeout is timed from the resume: it rolls out and succeeds, where timing it from the reload
// rolled it back at once (soak seed 1795789687619408493@6: a reloader restart delayed the
// resume, and the rollback came 1.2 s after it). The resume is held by the minimum interval, or
// comes late because no reloader ran at the pause's end.
func TestAReloadWhoseResumeComesLateIsTimedFromTheResume(t *testing.T) {
	t.Parallel()
	base := map[string]string{"configmap.reloader.stakater.com/reload": "app", policy.RollbackAnnotation: "true",
		policy.TimeoutAnnotation: "3s", "deployment.reloader.stakater.com/pause-period": "1s"}
	t.Run("held by the minimum interval", func(t *testing.T) {
		t.Parallel()
		ns := cluster.NewNamespace(t)
		followedDeployment(t, ns, withAnnotations(base, map[string]string{policy.MinIntervalAnnotation: "10s"}))
		startController(t, ns, controllerOpts{})
		settle(t)
		patchAnnotation(t, ns, "web", policy.LastReloadAnnotation, time.Now().UTC().Format(time.RFC3339Nano))
		reloadedPaused(t, ns)
		succeedsFromTheResume(t, ns)
	})
	t.Run("no reloader at the pause's end", func(t *testing.T) {
		t.Parallel()
		ns := cluster.NewNamespace(t)
		followedDeployment(t, ns, base)
		first := startController(t, ns, controllerOpts{})
		settle(t)
		reloaded := time.Now()
		reloadedPaused(t, ns)
		first.stop(t)
		waitFor(t, 30*time.Second, "the pause period and the timeout past", func() (bool, error) {
			return time.Since(reloaded) > 6*time.Second, nil
		})
		startController(t, ns, controllerOpts{})
		succeedsFromTheResume(t, ns)
	})
}

// reloadedPaused changes app to fixedConfig and waits until web's reload of it is patched into
// the paused Deployment.
func reloadedPaused(t *testing.T, ns string) {
	t.Helper()
	updateConfigMap(t, ns, "app", fixedConfig)
	waitEnv(t, ns, "web", appVar, hashOfData(fixedConfig))
	if d := getDeployment(t, ns, "web"); !d.Spec.Paused {
		t.Fatal("web is not paused after its reload")
	}
}

// succeedsFromTheResume waits for web's reload to end and fails unless it succeeded, resumed
// and not rolled back.
func succeedsFromTheResume(t *testing.T, ns string) {
	t.Helper()
	var e policy.Entry
	waitFor(t, 60*time.Second, "the reload's outcome", func() (bool, error) {
		var ok bool
		e, ok = newestEntry(t, ns)
		return ok && e.Outcome != policy.OutcomeProgressing, nil
	})
	if e.Outcome != policy.OutcomeSucceeded {
		t.Fatalf("outcome %q, want %q: the resume came late, its rollout did not fail", e.Outcome, policy.OutcomeSucceeded)
	}
	d := getDeployment(t, ns, "web")
	if d.Spec.Paused {
		t.Error("web is still paused after its rollout")
	}
	if v, _ := env(d, "app", appVar); v != hashOfData(fixedConfig) || e.RolledBack {
		t.Errorf("marker %q, rolled back %t after the rollout; want %q, not rolled back", v, e.RolledBack, hashOfData(fixedConfig))
	}
}

// A deletion's reload patched into a paused Deployment rolls out at the resume and is rolled
// back to the template from before the pause: the pods put back ran db's content, not its
// absence, and db's recreation with another content reloads them, as it does without a pause
// (soak seed 1795782049105262354@6: the restart memory put back the paused reload, whose pods
// waited for db, and took the recreation for what they run).
func TestARollbackAtTheResumeOfAPausedDeletionReloadReloadsTheRecreation(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	dbVar := policy.EnvVarName(policy.ConfigRef{Kind: policy.KindConfigMap, Name: "db"})
	followedWeb(t, ns)
	patchAnnotation(t, ns, "web", "deployment.reloader.stakater.com/pause-period", "1s")
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.ReloadOnDelete = true }})
	settle(t)
	lift := noSurge(t, ns)
	deleteConfigMap(t, ns, "db")
	waitEnv(t, ns, "web", dbVar, policy.DeletedMarker)
	if d := getDeployment(t, ns, "web"); !d.Spec.Paused {
		t.Fatal("web is not paused after the deletion's reload")
	}
	waitRolledBack(t, ns, "the deletion's rollout")
	if d := getDeployment(t, ns, "web"); d.Spec.Paused {
		t.Fatal("web is still paused after its rollback")
	}
	if v, set := env(getDeployment(t, ns, "web"), "app", dbVar); set {
		t.Fatalf("web carries marker %q after the rollback, want none", v)
	}
	lift()
	createConfigMap(t, ns, "db", map[string]string{"a": "2"})
	waitEnv(t, ns, "web", dbVar, hashOfData(map[string]string{"a": "2"}))
}

// A reload for app patched into a paused Deployment while db is absent leaves its pods to take
// db's recreation, written just before the patch; the resume's rollout is rolled back to the
// pods from before the pause, which ran db's content before its deletion, and they are reloaded
// for the recreation (soak seed 1795782049105262354@6: the recreation taken by the paused
// restart was recorded as run, and the rollback left the pods on the old content). Without the
// pause (the control) the rollback puts the same back.
func TestARollbackAtTheResumePutsBackPodsThatDidNotTakeARecreation(t *testing.T) {
	t.Parallel()
	for _, pause := range []string{"", "1s"} {
		t.Run("pause "+pause, func(t *testing.T) {
			t.Parallel()
			ns := cluster.NewNamespace(t)
			followedWeb(t, ns, "app")
			if pause != "" {
				patchAnnotation(t, ns, "web", "deployment.reloader.stakater.com/pause-period", pause)
			}
			var armed atomic.Bool
			recreate := func(rt http.RoundTripper) http.RoundTripper {
				return roundTripper(func(req *http.Request) (*http.Response, error) {
					if req.Method == http.MethodPatch && strings.HasSuffix(req.URL.Path, "/deployments/web") && armed.CompareAndSwap(true, false) {
						createConfigMap(t, ns, "db", map[string]string{"a": "2"})
					}
					return rt.RoundTrip(req)
				})
			}
			startController(t, ns, controllerOpts{wrap: recreate})
			settle(t)
			deleteConfigMap(t, ns, "db")
			settle(t)
			lift := noSurge(t, ns)
			armed.Store(true)
			updateConfigMap(t, ns, "app", map[string]string{"v": "1"})
			waitRolledBack(t, ns, "app's rollout")
			if armed.Load() {
				t.Fatal("db was not recreated during the reload's patch")
			}
			lift()
			waitReloadedFor(t, ns, map[string]string{"a": "2"})
		})
	}
}
