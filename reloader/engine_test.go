package reloader_test

// Regression tests for Engine v2: each sequence below lost a reload, or caused one without a
// change, on the engine that compared a config with its last completed state entry instead of
// each workload with what it runs.

import (
	"cmp"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1api "k8s.io/api/admission/v1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	dto "github.com/prometheus/client_model/go"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// refusePatches makes the API server refuse every update of Deployment name in ns, through a
// ValidatingAdmissionPolicy, until the returned function lifts it. It returns once the refusal
// is in force.
func refusePatches(t *testing.T, ns, name string) (lift func()) {
	t.Helper()
	return refusePatchesUnless(t, ns, name, "false")
}

// refusePatchesUnless is refusePatches, but for the updates after which the CEL expression
// unless holds of the Deployment.
func refusePatchesUnless(t *testing.T, ns, name, unless string) (lift func()) {
	t.Helper()
	ctx := context.Background()
	policyName := "refuse-" + ns + "-" + name
	remove, err := cluster.DenyDeploymentUpdates(ctx, policyName,
		fmt.Sprintf("object.metadata.namespace != %q || object.metadata.name != %q || %s", ns, name, unless), "refused by the test's admission policy")
	if err != nil {
		t.Fatal(err)
	}
	probe := []byte(`{"metadata":{"annotations":{"probe":"x"}}}`)
	waitFor(t, 30*time.Second, "the admission policy in force", func() (bool, error) {
		_, err := cluster.Client().AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, probe, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, nil
	})
	lift = func() {
		_ = remove(ctx)
		waitFor(t, 30*time.Second, "the admission policy lifted", func() (bool, error) {
			_, err := cluster.Client().AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, probe, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil, nil
		})
	}
	t.Cleanup(lift)
	return lift
}

// Finding 1: a revert after a partial rollout, with one dependent's patches refused.
func TestRevertAfterPartialRolloutReturnsEveryWorkloadToTheCurrentContent(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "w1", 0, named("configmap", "app-config"), nil)
	createDeployment(t, ns, "w2", 0, named("configmap", "app-config"), nil)
	r := startController(t, ns, controllerOpts{})
	settle(t)
	before := generations(t, ns)
	lift := refusePatches(t, ns, "w2")

	hashB := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitEnv(t, ns, "w1", cmVar, hashB)
	hashA := updateConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	waitEnv(t, ns, "w1", cmVar, hashA) // the old engine left w1 on B forever
	refusedFor := time.Now()
	time.Sleep(5 * time.Second) // the refusal persists while retries go on
	var failed dto.Metric
	if err := r.metrics.Reloads.WithLabelValues("Deployment", metrics.ResultFailure).Write(&failed); err != nil {
		t.Fatal(err)
	}
	failures := failed.GetCounter().GetValue()
	lift()
	hashC := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	waitEnv(t, ns, "w1", cmVar, hashC)
	waitEnv(t, ns, "w2", cmVar, hashC) // the refused one reloads once allowed
	settle(t)
	want := map[string]int64{"w1": 3, "w2": 1}
	if moved := changed(before, generations(t, ns)); fmt.Sprint(moved) != fmt.Sprint(want) {
		t.Fatalf("template changes %v, want %v", moved, want)
	}
	// Retried from 2 s, doubling: a handful of attempts in the refusal's seconds, not a storm.
	if failures < 1 || failures > 6 {
		t.Fatalf("reloader_reloads_total{result=failure} is %v after %s of refusal; want at least 1 and a capped retry", failures, time.Since(refusedFor).Round(time.Second))
	}
	if n := countEvents(t, ns, "w2", "ReloadFailed"); n != 1 {
		t.Fatalf("%d ReloadFailed Events on w2, want exactly 1 for a refusal that persisted: %v\n%s", n, eventMessages(t, ns, "w2"), r.log.String())
	}
}

// Finding 2: kubectl replace --force, or a GitOps replace: the config is deleted and created
// again with new content.
func TestDeleteAndRecreateWithNewContentReloadsOnce(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	startController(t, ns, controllerOpts{})
	settle(t)
	before := getDeployment(t, ns, "web").Generation

	replaceConfigMap(t, ns, "app-config", map[string]string{"v": "A"}) // same content: nothing to do
	settle(t)
	hash := replaceConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitEnv(t, ns, "web", cmVar, hash)
	wantReloads(t, ns, "web", before, 1) // only the new content reloads
}

// replaceConfigMap deletes the ConfigMap and creates it again with data; it returns the hash.
func replaceConfigMap(t *testing.T, ns, name string, data map[string]string) string {
	t.Helper()
	if err := cluster.Client().CoreV1().ConfigMaps(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	createConfigMap(t, ns, name, data)
	return confighash.ConfigMap(&corev1.ConfigMap{Data: data})
}

// Finding 3: --reload-on-delete, with the deletion made while the reloader was down: the next
// start marks it, in the workload that took a change and in one that never did.
func TestDeletionWhileDownIsMarkedAtTheNextStart(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	onDelete := func(o *reloader.Options) { o.ReloadOnDelete = true }
	first := startController(t, ns, controllerOpts{tweak: onDelete})
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitEnv(t, ns, "web", cmVar, hash)
	createDeployment(t, ns, "idle", 0, named("configmap", "app-config"), nil)
	first.settle()
	first.stop(t)

	if err := cluster.Client().CoreV1().ConfigMaps(ns).Delete(context.Background(), "app-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	before := generations(t, ns)
	startController(t, ns, controllerOpts{tweak: onDelete})
	waitEnv(t, ns, "web", cmVar, policy.DeletedMarker)
	waitEnv(t, ns, "idle", cmVar, policy.DeletedMarker)
	settle(t)
	if moved := changed(before, generations(t, ns)); fmt.Sprint(moved) != fmt.Sprint(map[string]int64{"idle": 1, "web": 1}) {
		t.Fatalf("the start restarted %v; want web and idle once each", moved)
	}
}

// Finding 4: --reload-on-create fired for configs that merely lacked a state entry.
func TestReloadOnCreateFiresOnlyForConfigsThatDidNotExist(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config, later"), nil)
	onCreate := func(o *reloader.Options) { o.ReloadOnCreate = true }
	first := startController(t, ns, controllerOpts{tweak: onCreate})
	settle(t)
	first.stop(t)
	setStateEntry(t, ns, "v1.ConfigMap_app-config", "corrupt")
	before := getDeployment(t, ns, "web").Generation

	startController(t, ns, controllerOpts{tweak: onCreate})
	waitFor(t, 10*time.Second, "the corrupt entry re-recorded", func() (bool, error) {
		return stateEntry(t, ns, "v1.ConfigMap_app-config") == confighash.ConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "A"}}), nil
	})
	wantReloads(t, ns, "web", before, 0) // a corrupt state entry is no change
	// Positive control: a config the workload names, which did not exist, appears.
	createConfigMap(t, ns, "later", map[string]string{"v": "1"})
	waitFor(t, 10*time.Second, "web reloaded for the new config", func() (bool, error) {
		return getDeployment(t, ns, "web").Generation == before+1, nil
	})
	wantReloads(t, ns, "web", before, 1)
}

// Finding 5: a workload reading an absent optional key reloaded when any other key changed.
func TestAbsentOptionalKeyDoesNotReloadOnOtherKeys(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"a": "1", "b": "1"})
	optional := true
	keyRef := func(name, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: key, Optional: &optional}}}
	}
	createDeployment(t, ns, "web", 0, map[string]string{"reloader.stakater.com/auto": "true"}, func(s *corev1.PodSpec) {
		s.Containers[0].Env = append(s.Containers[0].Env, keyRef("A", "a"), keyRef("MISSING", "missing"))
	})
	startController(t, ns, controllerOpts{})
	settle(t)
	before := getDeployment(t, ns, "web").Generation

	updateConfigMap(t, ns, "app-config", map[string]string{"a": "1", "b": "2"})
	wantReloads(t, ns, "web", before, 0) // web does not read key b
	// Positive control: a key it reads.
	updateConfigMap(t, ns, "app-config", map[string]string{"a": "2", "b": "2"})
	waitFor(t, 10*time.Second, "web reloaded for key a", func() (bool, error) {
		return getDeployment(t, ns, "web").Generation == before+1, nil
	})
}

// Found by the randomized checker (seed 4): a workload reading one key, reloaded on the whole
// config while a reload annotation named it, then switched to auto (which reloads on the key
// only), was restarted for the key's hash although it ran the current content.
func TestSwitchingFromANamedReloadToAutoRestartsNothing(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"a": "1", "b": "1"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), func(s *corev1.PodSpec) {
		s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: "a"}}})
	})
	startController(t, ns, controllerOpts{})
	settle(t)
	whole := updateConfigMap(t, ns, "app-config", map[string]string{"a": "1", "b": "2"})
	waitEnv(t, ns, "web", cmVar, whole) // named: the whole config
	switched := updateDeployment(t, ns, "web", func(d *appsv1.Deployment) {
		d.Annotations = map[string]string{"reloader.stakater.com/auto": "true"}
	}).Generation
	wantReloads(t, ns, "web", switched, 0)
	updateConfigMap(t, ns, "app-config", map[string]string{"a": "1", "b": "3"}) // a key it does not read
	wantReloads(t, ns, "web", switched, 0)

	// Positive control: a change of the key it reads reloads it, once.
	updateConfigMap(t, ns, "app-config", map[string]string{"a": "2", "b": "3"})
	waitFor(t, 10*time.Second, "web reloaded for key a", func() (bool, error) {
		return getDeployment(t, ns, "web").Generation == switched+1, nil
	})
	wantReloads(t, ns, "web", switched, 1)
}

// The reverse switch (the tenth soak, seed 1795476458054184899@2): a workload that reads one key
// of a Secret, reloaded on that key under auto, then annotated to reload on the whole Secret,
// runs its current content: its marker holds only the key's value, so the state decides.
func TestSwitchingFromAutoToANamedReloadRestartsNothing(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	const secretVar = "_RELOADER_-secret-db"
	createSecret(t, ns, "db", map[string]string{"a": "1", "b": "1"})
	createDeployment(t, ns, "web", 0, map[string]string{"reloader.stakater.com/auto": "true"}, func(s *corev1.PodSpec) {
		s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "a"}}})
	})
	startController(t, ns, controllerOpts{})
	settle(t)
	before := getDeployment(t, ns, "web").Generation
	updateSecret(t, ns, "db", map[string]string{"a": "2", "b": "1"})
	waitFor(t, 10*time.Second, "web reloaded on key a", func() (bool, error) {
		return getDeployment(t, ns, "web").Generation == before+1, nil
	})
	whole := updateSecret(t, ns, "db", map[string]string{"a": "2", "b": "2"}) // a key web does not read
	waitFor(t, 10*time.Second, "the state to record the whole Secret", func() (bool, error) {
		return stateEntry(t, ns, "v1.Secret_db") == whole, nil
	})
	wantReloads(t, ns, "web", before, 1)
	if v, _ := env(getDeployment(t, ns, "web"), "app", secretVar); v == "" || v == whole {
		t.Fatalf("web's marker is %q: want the value of key a alone, for this test to mean anything", v)
	}

	switched := updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Annotations = named("secret", "db") }).Generation
	wantReloads(t, ns, "web", switched, 0)

	// Positive control: under the named reload, a change of the key it does not read reloads it, once.
	whole = updateSecret(t, ns, "db", map[string]string{"a": "2", "b": "3"})
	waitEnv(t, ns, "web", secretVar, whole)
	wantReloads(t, ns, "web", switched, 1)
}

// Finding 6: stakater's variable name for a config name with a run of symbols.
func TestStakaterChangeIsCaughtUpForNamesWithRunsOfSymbols(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app--config", map[string]string{"v": "new"})
	createDeployment(t, ns, "web", 0, named("configmap", "app--config"), func(s *corev1.PodSpec) {
		old := confighash.StakaterConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "old"}})
		s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "STAKATER_APP_CONFIG_CONFIGMAP", Value: old})
	})
	before := getDeployment(t, ns, "web").Generation
	startController(t, ns, controllerOpts{})
	waitEnv(t, ns, "web", "_RELOADER_-configmap-app--config", confighash.ConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "new"}}))
	wantReloads(t, ns, "web", before, 1)
}

// stakater's variable is compared once, at the first start: a config entry the state loses
// later (here corrupted, then a restart) is a config never seen, not a change stakater missed,
// though the variable lags by a change of a key the workload does not read (soak seed
// 1795725183900764066@4). A change the first start had not compared yet is still caught up at
// the next one (the positive control: the same loss before the first start noted its comparison).
func TestStakatersVariableIsComparedOnlyAtTheFirstStart(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	r, before := switchedFromStakater(t, ns)

	r.stop(t)
	cms := cluster.Client().CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(context.Background(), "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["v1.ConfigMap_app-config"] = "corrupt"
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = startController(t, ns, controllerOpts{})
	settle(t)
	wantReloads(t, ns, "web", before, 0)
	r.stop(t)

	// Positive control: the same loss in a state whose first comparison was never noted (a first
	// start killed early) compares again, and the lag reloads web once.
	cm, err = cms.Get(context.Background(), "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(cm.Data, "reloader.stakater-compared")
	cm.Data["v1.ConfigMap_app-config"] = "corrupt"
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	startController(t, ns, controllerOpts{})
	waitFor(t, 30*time.Second, "web reloaded for the lag", func() (bool, error) {
		_, ok := env(getDeployment(t, ns, "web"), "app", cmVar)
		return ok, nil
	})
	wantReloads(t, ns, "web", before, 1)
}

// A marker stripped by a re-apply while the config is unchanged restarts nothing; one put back
// at an old value by a re-apply of an old manifest is corrected, once.
func TestReappliedOldMarkerIsCorrectedOnce(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	startController(t, ns, controllerOpts{})
	hashB := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitEnv(t, ns, "web", cmVar, hashB)
	settle(t)
	d := updateDeployment(t, ns, "web", func(d *appsv1.Deployment) {
		for i, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == cmVar {
				d.Spec.Template.Spec.Containers[0].Env[i].Value = "0000000000000000000000000000000000000000"
			}
		}
	})
	waitEnv(t, ns, "web", cmVar, hashB)
	wantReloads(t, ns, "web", d.Generation, 1)
}

func countEvents(t *testing.T, ns, object, reason string) int {
	t.Helper()
	list, err := cluster.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.InvolvedObject.Name == object && e.Reason == reason {
			n += int(max(e.Count, 1))
		}
	}
	return n
}

func eventMessages(t *testing.T, ns, object string) []string {
	t.Helper()
	list, err := cluster.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == object {
			out = append(out, fmt.Sprintf("%s x%d: %s", e.Reason, e.Count, e.Message))
		}
	}
	return out
}

// The API server drops the detail of a JSON patch that does not apply; the reloader must still
// tell "computed from a stale version" (recompute soon) from a refusal (say so, retry later).
func TestStalePatchIsToldFromAValidationError(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createDeployment(t, ns, "web", 0, nil, nil)
	deployments := cluster.Client().AppsV1().Deployments(ns)
	stale := []byte(`[{"op":"test","path":"/metadata/resourceVersion","value":"1"},{"op":"add","path":"/metadata/labels","value":{"x":"y"}}]`)
	_, err := deployments.Patch(context.Background(), "web", types.JSONPatchType, stale, metav1.PatchOptions{})
	if err == nil || !reloader.IsStale(err) {
		t.Fatalf("a failed resourceVersion test gave %v; want an error recognised as stale", err)
	}
	invalid := []byte(`[{"op":"replace","path":"/spec/replicas","value":-1}]`)
	_, err = deployments.Patch(context.Background(), "web", types.JSONPatchType, invalid, metav1.PatchOptions{})
	if err == nil || reloader.IsStale(err) {
		t.Fatalf("an invalid patch gave %v; want an error not taken for stale", err)
	}
}

// revertingWebhook serves a mutating admission webhook that puts back the old pod template's
// env of Deployment name on every update, as a policy engine enforcing a template would.
func revertingWebhook(t *testing.T, ns, name string) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1api.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var old appsv1.Deployment
		_ = json.Unmarshal(review.Request.OldObject.Raw, &old)
		patch, _ := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec/template/spec/containers/0/env", "value": old.Spec.Template.Spec.Containers[0].Env}})
		pt := admissionv1api.PatchTypeJSONPatch
		review.Response = &admissionv1api.AdmissionResponse{UID: review.Request.UID, Allowed: true, Patch: patch, PatchType: &pt}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(srv.Close)
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	url := srv.URL + "/mutate"
	none := admissionv1.SideEffectClassNone
	fail := admissionv1.Fail
	hooks := cluster.Client().AdmissionregistrationV1().MutatingWebhookConfigurations()
	_, err := hooks.Create(context.Background(), &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "revert-" + ns},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:                    "revert.reloader.test",
			ClientConfig:            admissionv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules:                   []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Update}, Rule: admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			MatchConditions:         []admissionv1.MatchCondition{{Name: "only-" + name, Expression: fmt.Sprintf("object.metadata.name == %q", name)}},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hooks.Delete(context.Background(), "revert-"+ns, metav1.DeleteOptions{}) })
}

// Suspected finding: a webhook that reverts our patch left the config stuck, logged at debug.
func TestPatchRevertedByAWebhookIsReportedOnce(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	createDeployment(t, ns, "control", 0, named("configmap", "app-config"), nil)
	revertingWebhook(t, ns, "web")
	r := startController(t, ns, controllerOpts{})
	r.settle()
	before := getDeployment(t, ns, "web").Generation

	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitEnv(t, ns, "control", cmVar, hash) // positive control: the other dependent reloads
	waitFor(t, 30*time.Second, "a ReloadReverted Event on web", func() (bool, error) {
		return countEvents(t, ns, "web", "ReloadReverted") > 0, nil
	})
	wantReloads(t, ns, "web", before, 0) // the webhook reverts every change
	if n := countEvents(t, ns, "web", "ReloadReverted"); n != 1 {
		t.Fatalf("%d ReloadReverted Events, want 1: %v", n, eventMessages(t, ns, "web"))
	}
}

// Removing ignore from a config catches up, once, a workload whose marker shows content that
// changed while it was ignored; a workload without a marker is left alone.
func TestRemovingIgnoreCatchesUpMarkedWorkloadsOnce(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "marked", 0, named("configmap", "app-config"), nil)
	r := startController(t, ns, controllerOpts{})
	waitEnv(t, ns, "marked", cmVar, updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"}))
	createDeployment(t, ns, "unmarked", 0, named("configmap", "app-config"), nil)
	r.settle()
	before := generations(t, ns)
	hashC := changedWhileIgnored(t, r, ns, before)
	waitEnv(t, ns, "marked", cmVar, hashC)
	r.settle()
	if moved := changed(before, generations(t, ns)); fmt.Sprint(moved) != fmt.Sprint(map[string]int64{"marked": 1}) {
		t.Fatalf("after ignore was removed: %v, want only the marked workload, once", moved)
	}
}

// A workload created while another dependent held the config's entry back runs the content
// without a marker (a strip). Once the entry caught up, a change made while the config was
// ignored restarts it no more than one created after (CI: TestRemovingIgnoreCatchesUp… under
// load, its unmarked workload created before the entry caught up, was restarted).
func TestRemovingIgnoreLeavesAWorkloadCreatedWhileTheStateLaggedAlone(t *testing.T) {
	t.Parallel()
	ns, lift, hashB, r := stateHeldBehind(t)
	createDeployment(t, ns, "w3", 0, named("configmap", "app-config"), nil) // runs B, no marker
	r.settle()
	lift()
	waitEnv(t, ns, "w2", cmVar, hashB)
	r.settle()
	before := generations(t, ns)
	hashC := changedWhileIgnored(t, r, ns, before)
	waitEnv(t, ns, "w1", cmVar, hashC) // positive control: the marked ones catch up
	waitEnv(t, ns, "w2", cmVar, hashC)
	r.settle()
	if moved := changed(before, generations(t, ns)); fmt.Sprint(moved) != fmt.Sprint(map[string]int64{"w1": 1, "w2": 1}) {
		t.Fatalf("after ignore was removed: %v, want w1 and w2 once, w3 left alone", moved)
	}
}

// changedWhileIgnored sets ignore on app-config, changes it to C, fails if that reloaded
// anything since generations before, and lifts the ignore; it returns C's hash. Each step is
// judged on its own: one sync of both would see C not ignored.
func changedWhileIgnored(t *testing.T, r *running, ns string, before map[string]int64) string {
	t.Helper()
	done := configSyncs(t, r)
	setConfigMapAnnotation(t, ns, "app-config", "reloader.stakater.com/ignore", `"true"`)
	judgedAfter(t, r, done, "the ignore annotation")
	done = configSyncs(t, r)
	hashC := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	judgedAfter(t, r, done, "the ignored change")
	if moved := changed(before, generations(t, ns)); len(moved) != 0 {
		t.Fatalf("an ignored config's change reloaded %v", moved)
	}
	setConfigMapAnnotation(t, ns, "app-config", "reloader.stakater.com/ignore", "null")
	return hashC
}

// setConfigMapAnnotation merge-patches one annotation; value is JSON ("null" removes it).
func setConfigMapAnnotation(t *testing.T, ns, name, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, key, value)
	if _, err := cluster.Client().CoreV1().ConfigMaps(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A config that flaps A→B→A within one window ends where it started: nothing to restart.
func TestFlapWithinAWindowRestartsNothing(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	r := startController(t, ns, controllerOpts{period: 2 * time.Second})
	r.settle()
	before := getDeployment(t, ns, "web").Generation

	updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	wantReloads(t, ns, "web", before, 0)
	// Positive control: a change that stays reloads once.
	waitEnv(t, ns, "web", cmVar, updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"}))
	wantReloads(t, ns, "web", before, 1)
}

// A GitOps replace while the reloader is down, without --reload-on-create: caught up on start.
func TestReplaceWhileDownReloadsOnceOnStart(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	first := startController(t, ns, controllerOpts{})
	first.settle()
	first.stop(t)
	before := getDeployment(t, ns, "web").Generation

	hash := replaceConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	startController(t, ns, controllerOpts{})
	waitEnv(t, ns, "web", cmVar, hash)
	wantReloads(t, ns, "web", before, 1)
}

// A deleted config's tombstone outlives it by the retention period, and longer while a workload
// still references it; a deleted workload references nothing. A config nothing reads has no
// entry, so its deletion leaves no tombstone.
func TestTombstonesArePrunedAfterRetentionOnceUnreferenced(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "lonely", map[string]string{"v": "A"})
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	createConfigMap(t, ns, "left", map[string]string{"v": "A"})
	createDeployment(t, ns, "gone", 0, named("configmap", "left"), nil)
	r := startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.TombstoneRetention = 2 * time.Second }})
	r.settle()
	for _, name := range []string{"lonely", "app-config", "left"} {
		if err := cluster.Client().CoreV1().ConfigMaps(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tombstone := func(name string) bool { return strings.HasPrefix(stateEntry(t, ns, "v1.ConfigMap_"+name), "deleted@") }
	waitFor(t, 10*time.Second, "the tombstones", func() (bool, error) {
		return tombstone("app-config") && tombstone("left"), nil
	})
	deleteDeployment(t, ns, "gone") // its config is referenced no more
	waitFor(t, 10*time.Second, "the unreferenced tombstone pruned", func() (bool, error) {
		return stateEntry(t, ns, "v1.ConfigMap_left") == "", nil
	})
	if !tombstone("app-config") {
		t.Fatalf("the tombstone of a config web still names was pruned: %q", stateEntry(t, ns, "v1.ConfigMap_app-config"))
	}
	if e := stateEntry(t, ns, "v1.ConfigMap_lonely"); e != "" {
		t.Fatalf("lonely, which nothing read, has an entry %q", e)
	}
}

// A workload that starts reading another config, through its reload annotation or its pod
// template, reloads on that config's next change: the index of workloads by config follows
// their updates, not only their creation.
func TestAWorkloadChangedToReadAnotherConfigReloadsOnIt(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	for _, name := range []string{"a", "b", "c"} {
		createConfigMap(t, ns, name, map[string]string{"v": "A"})
	}
	createDeployment(t, ns, "named", 0, named("configmap", "a"), nil)
	createDeployment(t, ns, "auto", 0, map[string]string{"reloader.stakater.com/auto": "true"}, func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}}}}
	})
	r := startController(t, ns, controllerOpts{})
	r.settle()
	patchAnnotation(t, ns, "named", "configmap.reloader.stakater.com/reload", "b")
	addC := `[{"op":"add","path":"/spec/template/spec/containers/0/envFrom/-","value":{"configMapRef":{"name":"c"}}}]`
	if _, err := cluster.Client().AppsV1().Deployments(ns).Patch(context.Background(), "auto", types.JSONPatchType, []byte(addC), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	r.settle()
	waitEnv(t, ns, "named", "_RELOADER_-configmap-b", updateConfigMap(t, ns, "b", map[string]string{"v": "B"}))
	waitEnv(t, ns, "auto", "_RELOADER_-configmap-c", updateConfigMap(t, ns, "c", map[string]string{"v": "B"}))
}

// Switching --reload-strategy back and forth restarts nothing by itself: a workload whose env var
// is stale but whose annotation holds the current content (or the other way round) runs the
// current content.
func TestSwitchingStrategiesRestartsNothing(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	strategy := func(s string) controllerOpts {
		return controllerOpts{tweak: func(o *reloader.Options) { o.Strategy = s }}
	}
	envs := startController(t, ns, strategy(policy.StrategyEnvVars))
	waitEnv(t, ns, "web", cmVar, updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"}))
	envs.settle()
	envs.stop(t)

	annotations := startController(t, ns, strategy(policy.StrategyAnnotations))
	hashC := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	waitFor(t, 10*time.Second, "the annotation marker", func() (bool, error) {
		return strings.Contains(getDeployment(t, ns, "web").Spec.Template.Annotations["reloader/config-hashes"], hashC), nil
	})
	annotations.settle()
	annotations.stop(t)
	before := getDeployment(t, ns, "web").Generation

	back := startController(t, ns, strategy(policy.StrategyEnvVars))
	waitRecorded(t, back, "v1.ConfigMap_app-config", hashC)
	back.settle()
	wantReloads(t, ns, "web", before, 0) // the stale env var is no change: the pods run C
	// Positive control: the next change reloads once.
	waitEnv(t, ns, "web", cmVar, updateConfigMap(t, ns, "app-config", map[string]string{"v": "D"}))
	wantReloads(t, ns, "web", before, 1)
}

// Two replicas acting at once (leader election off by mistake) still reload each workload once
// per change: the second patch, computed from the same version, fails its resourceVersion test
// or finds the marker current.
func TestTwoControllersAtOnceReloadOnce(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	population(t, ns, 5)
	a := startController(t, ns, controllerOpts{})
	b := startController(t, ns, controllerOpts{})
	a.settle()
	b.settle()
	before := generations(t, ns)
	for i := range 5 {
		waitEnv(t, ns, fmt.Sprintf("app-%d", i), fmt.Sprintf("_RELOADER_-configmap-cfg-%d", i),
			updateConfigMap(t, ns, fmt.Sprintf("cfg-%d", i), map[string]string{"v": "1"}))
	}
	settle(t)
	want := map[string]int64{"app-0": 1, "app-1": 1, "app-2": 1, "app-3": 1, "app-4": 1}
	if moved := changed(before, generations(t, ns)); fmt.Sprint(moved) != fmt.Sprint(want) {
		t.Fatalf("template changes %v, want %v", moved, want)
	}
}

// A corrupt state entry restarts nothing: the workloads without a marker are taken to run the
// content found. That content must then be recorded, though another dependent stays due (here
// its empty window holds its reload): otherwise the next change finds no entry either, is a
// first content again, and is lost for them (checker seed 7@3).
func TestAChangeAfterACorruptEntryReloadsTheWorkloadsWithoutAMarkerWhileAnotherIsHeld(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "held", 0, withAnnotations(named("configmap", "app-config"), map[string]string{policy.WindowAnnotation: ""}),
		func(s *corev1.PodSpec) {
			s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: cmVar, Value: "stale"})
		})
	createDeployment(t, ns, "plain", 0, named("configmap", "app-config"), nil)
	first := startController(t, ns, controllerOpts{})
	settle(t)
	first.stop(t)
	setStateEntry(t, ns, "v1.ConfigMap_app-config", "corrupt")
	before := generations(t, ns)

	startController(t, ns, controllerOpts{})
	settle(t)
	if moved := changed(before, generations(t, ns)); len(moved) > 0 {
		t.Fatalf("a corrupt state entry restarted %v", moved)
	}
	hashB := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitEnv(t, ns, "plain", cmVar, hashB)
	settle(t)
	if moved := changed(before, generations(t, ns)); fmt.Sprint(moved) != fmt.Sprint(map[string]int64{"plain": 1}) {
		t.Fatalf("template changes %v, want plain's one (held is held)", moved)
	}
}

// Two replicas acting at once, the second's ConfigMap watch behind its Deployment watch (the
// cause of a rare failure of TestTwoControllersAtOnceReloadOnce): it sees the first replica's
// reload before the new content, and must not put the old content back.
func TestAReplicaWhoseConfigCacheLagsDoesNotUndoAnotherReplicasReload(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	startController(t, ns, controllerOpts{})
	slow := startControllerAs(t, laggingWatch(cluster.Config, "configmaps", time.Second), ns, controllerOpts{})
	settle(t)
	before := getDeployment(t, ns, "web").Generation
	updates := func() float64 {
		return value(t, slow.metrics.Stakater.EventsReceived.WithLabelValues("update", "configmaps"))
	}
	seen := updates()

	hashB := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitEnv(t, ns, "web", cmVar, hashB)
	// The lagging replica sees B a second late, with web holding it, and judges it.
	waitFor(t, 30*time.Second, "the lagging replica to see B", func() (bool, error) { return updates() > seen, nil })
	slow.settle()
	wantReloads(t, ns, "web", before, 1)
	if got, _ := env(getDeployment(t, ns, "web"), "app", cmVar); got != hashB {
		t.Fatalf("web runs %q, want B's %q", got, hashB)
	}
}

// laggingWatch is cfg with every watch of resource delivering its events delay late.
func laggingWatch(cfg *rest.Config, resource string, delay time.Duration) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && req.URL.Query().Get("watch") == "true" && strings.HasSuffix(req.URL.Path, "/"+resource) {
				resp.Body = lateBody(resp.Body, delay)
			}
			return resp, err
		})
	})
	return c
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// lateBody hands on each chunk of body delay after it arrived: a watch a constant time behind.
func lateBody(body io.ReadCloser, delay time.Duration) io.ReadCloser {
	type chunk struct {
		data []byte
		at   time.Time
		err  error
	}
	chunks := make(chan chunk, 1024)
	go func() { // read as the server sends
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := body.Read(buf)
			chunks <- chunk{buf[:n], time.Now().Add(delay), err}
			if err != nil {
				return
			}
		}
	}()
	r, w := io.Pipe()
	go func() { // hand on late
		for c := range chunks {
			time.Sleep(time.Until(c.at))
			if _, err := w.Write(c.data); err != nil || c.err != nil {
				w.CloseWithError(cmp.Or(c.err, err))
				return
			}
		}
	}()
	return struct {
		io.Reader
		io.Closer
	}{r, closers{r, body}}
}

type closers []io.Closer

func (cs closers) Close() error {
	for _, c := range cs {
		c.Close()
	}
	return nil
}

// stripMarker removes the reloader's variable from Deployment name's template, as a helm
// upgrade or kubectl apply of the manifest without it does; it returns the new generation.
func stripMarker(t *testing.T, ns, name string) int64 {
	t.Helper()
	return updateDeployment(t, ns, name, func(d *appsv1.Deployment) {
		c := &d.Spec.Template.Spec.Containers[0]
		c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == cmVar })
	}).Generation
}

// stateHeldBehind reloads w1 (of w1 and w2, both reading app-config by name) from A to B while
// w2's patches are refused (all but one that stops its annotation naming app-config), so the
// state still holds A; it returns the namespace, the function that lifts the refusal, B's hash
// and the running controller.
func stateHeldBehind(t *testing.T) (ns string, lift func(), hashB string, ctrl *running) {
	t.Helper()
	return stateHeldBehindWith(t, func(*reloader.Options) {})
}

// stateHeldBehindWith is stateHeldBehind with the reloader's options tweaked.
func stateHeldBehindWith(t *testing.T, tweak func(*reloader.Options)) (ns string, lift func(), hashB string, ctrl *running) {
	t.Helper()
	ns = cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "w1", 0, named("configmap", "app-config"), nil)
	createDeployment(t, ns, "w2", 0, named("configmap", "app-config"), nil)
	// w2's retries stay within 4 s of the lift, however long the refusal lasted.
	ctrl = startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) {
		reloader.SetRefusedRetryMax(o, 4*time.Second)
		tweak(o)
	}})
	settle(t)
	const a = "object.metadata.annotations"
	lift = refusePatchesUnless(t, ns, "w2", fmt.Sprintf("!has(%[1]s) || !(%[2]q in %[1]s) || %[1]s[%[2]q] != 'app-config'", a, "configmap.reloader.stakater.com/reload"))
	hashB = updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitEnv(t, ns, "w1", cmVar, hashB)
	return ns, lift, hashB, ctrl
}

// stripWhileTheStateIsBehind strips w1's marker once the state is held behind (stateHeldBehind);
// it returns the namespace, the function that lifts the refusal, w1's generation after the strip
// and the running controller.
func stripWhileTheStateIsBehind(t *testing.T) (ns string, lift func(), stripped int64, ctrl *running) {
	t.Helper()
	ns, lift, _, ctrl = stateHeldBehind(t)
	return ns, lift, stripMarker(t, ns, "w1"), ctrl
}

// Soak seed 1795446428096566055: a helm-style strip of a workload that already runs the new
// content, while another dependent's refusal holds the state back. The strip restarted its
// pods with that content; the state alone would restart them again.
func TestStripWhileTheStateIsBehindRestartsNothingMore(t *testing.T) {
	t.Parallel()
	ns, lift, stripped, _ := stripWhileTheStateIsBehind(t)
	wantReloads(t, ns, "w1", stripped, 0)

	// Positive control: a change after the strip reloads it, once.
	hashC := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	waitEnv(t, ns, "w1", cmVar, hashC)
	wantReloads(t, ns, "w1", stripped, 1)
	lift()
	waitEnv(t, ns, "w2", cmVar, hashC)
}

// Found by the randomized checker once it counted restarts per config (seed 4): the memory of
// the strip did not survive a restart, so a reloader started while the state was still behind
// restarted the stripped workload for the content it ran, and would have missed a revert.
func TestStripWhileTheStateIsBehindIsRememberedAcrossARestart(t *testing.T) {
	t.Parallel()
	ns, lift, stripped, first := stripWhileTheStateIsBehind(t)
	settle(t)
	first.stop(t)
	startController(t, ns, controllerOpts{})
	settle(t)
	wantReloads(t, ns, "w1", stripped, 0)

	// Positive control: a revert to the content the state holds reaches it, once.
	hashA := updateConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	waitEnv(t, ns, "w1", cmVar, hashA)
	wantReloads(t, ns, "w1", stripped, 1)
	lift()
}

// The limit docs/design.md states for a strip no reloader sees (soak seed 1795547694293124233@2, where
// the state was behind because a leader died before it saw its own patch land): a reloader that
// starts after the strip finds no marker and a state behind, cannot tell the strip's rollout
// from an older one, and restarts the workload once, and only once.
func TestStripWhileDownWhileTheStateIsBehindRestartsOnce(t *testing.T) {
	t.Parallel()
	ns, lift, hashB, first := stateHeldBehind(t)
	settle(t)
	first.stop(t)

	stripped := stripMarker(t, ns, "w1")
	second := startController(t, ns, controllerOpts{})
	waitEnv(t, ns, "w1", cmVar, hashB)
	wantReloads(t, ns, "w1", stripped, 1)
	// Only once: a third reloader, with the state still behind, finds the marker it wrote.
	second.stop(t)
	startController(t, ns, controllerOpts{})
	settle(t)
	wantReloads(t, ns, "w1", stripped, 1)
	lift()
	waitEnv(t, ns, "w2", cmVar, hashB)
	wantReloads(t, ns, "w1", stripped, 1)
}

// The strip entries of a deleted workload leave the state, whether the deletion is seen live or
// happens while no reloader runs; nothing else would remove them, and the state would grow with
// every workload churned while it was behind.
func TestStripsOfADeletedWorkloadLeaveTheState(t *testing.T) {
	t.Parallel()
	ns, lift, _, first := stateHeldBehind(t)
	createDeployment(t, ns, "w3", 0, named("configmap", "app-config"), nil) // runs B: a strip
	createDeployment(t, ns, "w4", 0, named("configmap", "app-config"), nil)
	createDeployment(t, ns, "w5", 0, named("configmap", "app-config"), envFromCM("app-config"))
	stripMarker(t, ns, "w1")
	stripOf := func(w string) string { return stateEntry(t, ns, "strip.ConfigMap.Deployment_"+w+"_app-config") }
	waitFor(t, 10*time.Second, "a strip entry of w1, w3, w4 and w5", func() (bool, error) {
		return stripOf("w1") != "" && stripOf("w3") != "" && stripOf("w4") != "" && stripOf("w5") != "", nil
	})

	deleteDeployment(t, ns, "w3")
	waitFor(t, 10*time.Second, "w3's strip entry to go with it", func() (bool, error) { return stripOf("w3") == "", nil })

	first.stop(t)
	deleteDeployment(t, ns, "w1")
	// w5 references the config and was created while the state was behind; while down, its
	// annotation stops naming the config. Its entry must survive the start for the switch back.
	updateDeployment(t, ns, "w5", func(d *appsv1.Deployment) { d.Annotations = named("configmap", "other") })
	startController(t, ns, controllerOpts{})
	waitFor(t, 10*time.Second, "w1's strip entry to go at the next start", func() (bool, error) { return stripOf("w1") == "", nil })
	// Live workloads' entries stay, and still vouch for what they run.
	for _, w := range []string{"w4", "w5"} {
		if stripOf(w) == "" {
			t.Errorf("the strip entry of %s, which still exists, was removed", w)
		}
	}
	updateDeployment(t, ns, "w5", func(d *appsv1.Deployment) { d.Annotations = named("configmap", "app-config") })
	wantReloads(t, ns, "w4", 1, 0)
	wantReloads(t, ns, "w5", 1, 2) // the two annotation changes: a Deployment's generation counts them
	if v, ok := env(getDeployment(t, ns, "w5"), "app", cmVar); ok {
		t.Errorf("w5 was restarted for the content it runs (marker %s)", v)
	}
	lift()
}

func deleteDeployment(t *testing.T, ns, name string) {
	t.Helper()
	if err := cluster.Client().AppsV1().Deployments(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Soak seed 1795461574958468038: a workload created while another dependent's refusal holds
// the state back runs the new content from its start; the state alone would restart it for it.
func TestWorkloadCreatedWhileTheStateIsBehindIsNotRestartedForWhatItRuns(t *testing.T) {
	t.Parallel()
	ns, lift, _, _ := stateHeldBehind(t)
	createDeployment(t, ns, "w3", 0, named("configmap", "app-config"), nil) // runs B
	wantReloads(t, ns, "w3", 1, 0)

	// Positive control: a change after its creation reloads it, once.
	hashC := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	waitEnv(t, ns, "w3", cmVar, hashC)
	wantReloads(t, ns, "w3", 1, 1)
	lift()
	waitEnv(t, ns, "w2", cmVar, hashC)
}

// Checker seed 1050@8: a workload created while another dependent holds the state back reads a
// config it does not reload on yet, and is then annotated to reload on it. Its pods run the
// content they started with, the new one; the state alone would restart them for it. Positive
// control: a change after the annotation reloads it, once.
func TestAWorkloadAnnotatedAfterItsCreationWhileTheStateIsBehindIsNotRestartedForWhatItRuns(t *testing.T) {
	t.Parallel()
	ns, lift, _, _ := stateHeldBehind(t)
	createDeployment(t, ns, "w3", 0, nil, func(s *corev1.PodSpec) { // runs B, reloads on nothing
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}
	})
	settle(t)
	annotated := updateDeployment(t, ns, "w3", func(d *appsv1.Deployment) {
		d.Annotations = map[string]string{"reloader.stakater.com/auto": "true"}
	}).Generation
	wantReloads(t, ns, "w3", annotated, 0)

	hashC := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	waitEnv(t, ns, "w3", cmVar, hashC)
	wantReloads(t, ns, "w3", annotated, 1)
	lift()
	waitEnv(t, ns, "w2", cmVar, hashC)
}

// Review: a workload that stops reloading on a config (its annotation now names another) was
// the one holding the config's state back; its update queued only the configs it names now, so
// the state stayed behind, and a workload found without a marker at a later start (a relist)
// was restarted for the content it already ran.
func TestADependentThatStopsDependingLetsTheStateAdvance(t *testing.T) {
	t.Parallel()
	ns, lift, hashB, first := stateHeldBehind(t)
	hashA := confighash.ConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "A"}})
	if got := stateEntry(t, ns, "v1.ConfigMap_app-config"); got != hashA {
		t.Fatalf("state entry %q before the switch, want A's %q", got, hashA)
	}
	updateDeployment(t, ns, "w2", func(d *appsv1.Deployment) { d.Annotations = named("configmap", "other") })
	settle(t)
	// w1's marker holds B: the entry went with the write at the stop.
	if got := stoppedEntry(t, first, ns, "v1.ConfigMap_app-config"); got != hashB {
		t.Fatalf("the state entry of app-config is %q after the stop, want B's %q", got, hashB)
	}

	// What a user sees: a workload created while no reloader runs runs B, and is found without a
	// marker by the next reloader's initial list.
	createDeployment(t, ns, "w3", 0, named("configmap", "app-config"), nil)
	startController(t, ns, controllerOpts{})
	wantReloads(t, ns, "w3", 1, 0)

	// Positive control: a change to C reloads it, once.
	hashC := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	waitEnv(t, ns, "w3", cmVar, hashC)
	wantReloads(t, ns, "w3", 1, 1)
	lift()
}

// Found by the randomized checker (seed 6): after a strip while the state was behind, a change
// of a key the stripped workload does not read made what it runs unknown, and it was restarted
// for the value it already ran.
func TestStripWhileTheStateIsBehindSurvivesAChangeOfAnotherKey(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"a": "1", "b": "1"})
	readA := func(s *corev1.PodSpec) {
		s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: "a"}}})
	}
	auto := map[string]string{"reloader.stakater.com/auto": "true"}
	createDeployment(t, ns, "w1", 0, auto, readA)
	createDeployment(t, ns, "w2", 0, auto, readA)
	startController(t, ns, controllerOpts{})
	settle(t)
	lift := refusePatches(t, ns, "w2")
	before := getDeployment(t, ns, "w1").Generation
	updateConfigMap(t, ns, "app-config", map[string]string{"a": "2", "b": "1"})
	waitFor(t, 10*time.Second, "w1 reloaded for key a", func() (bool, error) {
		return getDeployment(t, ns, "w1").Generation == before+1, nil
	})
	stripped := stripMarker(t, ns, "w1")
	updateConfigMap(t, ns, "app-config", map[string]string{"a": "2", "b": "2"})
	wantReloads(t, ns, "w1", stripped, 0)

	// Positive control: a change of key a reloads it, once.
	updateConfigMap(t, ns, "app-config", map[string]string{"a": "3", "b": "2"})
	waitFor(t, 10*time.Second, "w1 reloaded for key a again", func() (bool, error) {
		return getDeployment(t, ns, "w1").Generation == stripped+1, nil
	})
	wantReloads(t, ns, "w1", stripped, 1)
	lift()
}

// A per-key entry must describe the content its config's entry holds. Key a's entry, recorded
// while w reads a under auto, goes stale while w reloads on the whole config (named) for a change
// of a; it is recorded again once w reads a key-level again, so that a strip and a revert of a
// still reach w (a stale entry would say a holds what w runs).
func TestRevertOfAKeyAfterANamedReloadAndAStripReloadsTheKeyReader(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"a": "X", "b": "1"})
	auto := map[string]string{"reloader.stakater.com/auto": "true"}
	createDeployment(t, ns, "w", 0, auto, func(s *corev1.PodSpec) {
		s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: "a"}}})
	})
	startController(t, ns, controllerOpts{})
	const keyA = "v1.ConfigMap_app-config__a"
	waitFor(t, 10*time.Second, "key a's entry", func() (bool, error) { return stateEntry(t, ns, keyA) != "", nil })
	keyX := stateEntry(t, ns, keyA)
	updateDeployment(t, ns, "w", func(d *appsv1.Deployment) { d.Annotations = named("configmap", "app-config") })
	settle(t)
	wholeY := updateConfigMap(t, ns, "app-config", map[string]string{"a": "Y", "b": "1"})
	waitEnv(t, ns, "w", cmVar, wholeY)
	settle(t) // Y judged rolled out: w's marker holds it
	updateDeployment(t, ns, "w", func(d *appsv1.Deployment) { d.Annotations = auto })
	waitFor(t, 10*time.Second, "key a's entry to record Y", func() (bool, error) {
		return stateEntry(t, ns, keyA) != keyX, nil
	})
	stripped := stripMarker(t, ns, "w")
	wantReloads(t, ns, "w", stripped, 0)

	updateConfigMap(t, ns, "app-config", map[string]string{"a": "X", "b": "1"}) // w runs Y
	waitFor(t, 10*time.Second, "w reloaded for the revert of a", func() (bool, error) {
		return getDeployment(t, ns, "w").Generation == stripped+1, nil
	})
	wantReloads(t, ns, "w", stripped, 1)
}

// The same, with the switch back to auto and the revert of a made while the reloader is down:
// w carries the whole content the state records, which leaves w to the state's per-key entries.
// Key a's entry from before the named reload must be gone, or it would vouch for the revert.
func TestRevertOfAKeyWhileDownAfterANamedReloadReloadsTheKeyReader(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"a": "X", "b": "1"})
	auto := map[string]string{"reloader.stakater.com/auto": "true"}
	createDeployment(t, ns, "w", 0, auto, func(s *corev1.PodSpec) {
		s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: "a"}}})
	})
	first := startController(t, ns, controllerOpts{})
	waitFor(t, 10*time.Second, "key a's entry", func() (bool, error) {
		return stateEntry(t, ns, "v1.ConfigMap_app-config__a") != "", nil
	})
	updateDeployment(t, ns, "w", func(d *appsv1.Deployment) { d.Annotations = named("configmap", "app-config") })
	settle(t)
	wholeY := updateConfigMap(t, ns, "app-config", map[string]string{"a": "Y", "b": "1"})
	waitEnv(t, ns, "w", cmVar, wholeY)
	settle(t)
	if got := stoppedEntry(t, first, ns, "v1.ConfigMap_app-config"); got != wholeY {
		t.Fatalf("the state holds %q after the stop, want %q", got, wholeY)
	}

	switched := updateDeployment(t, ns, "w", func(d *appsv1.Deployment) { d.Annotations = auto }).Generation
	updateConfigMap(t, ns, "app-config", map[string]string{"a": "X", "b": "1"}) // w runs Y
	startController(t, ns, controllerOpts{})
	waitFor(t, 10*time.Second, "w reloaded for the revert of a", func() (bool, error) {
		return getDeployment(t, ns, "w").Generation == switched+1, nil
	})
	wantReloads(t, ns, "w", switched, 1)
}

// A limit docs/annotations.md states: a switch from a named reload to auto, then a change of a key the
// workload does not read, both while the reloader is down, restart the workload once: the state
// holds no per-key entry for its key. Once, not more; and a switch seen live restarts nothing.
func TestSwitchToAutoAndAChangeOfAnotherKeyWhileDownRestartOnce(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"a": "1", "b": "1"})
	createDeployment(t, ns, "w", 0, named("configmap", "app-config"), func(s *corev1.PodSpec) {
		s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: "a"}}})
	})
	first := startController(t, ns, controllerOpts{})
	settle(t)
	whole := updateConfigMap(t, ns, "app-config", map[string]string{"a": "1", "b": "2"})
	waitEnv(t, ns, "w", cmVar, whole)
	settle(t)
	if got := stoppedEntry(t, first, ns, "v1.ConfigMap_app-config"); got != whole {
		t.Fatalf("the state holds %q after the stop, want %q", got, whole)
	}

	switched := updateDeployment(t, ns, "w", func(d *appsv1.Deployment) {
		d.Annotations = map[string]string{"reloader.stakater.com/auto": "true"}
	}).Generation
	updateConfigMap(t, ns, "app-config", map[string]string{"a": "1", "b": "3"})
	startController(t, ns, controllerOpts{})
	waitFor(t, 10*time.Second, "w restarted once", func() (bool, error) {
		return getDeployment(t, ns, "w").Generation == switched+1, nil
	})
	wantReloads(t, ns, "w", switched, 1)

	// Now its key's entry is recorded: a change of another key restarts nothing more.
	updateConfigMap(t, ns, "app-config", map[string]string{"a": "1", "b": "4"})
	wantReloads(t, ns, "w", switched, 1)
}

// The same strip, then a revert to the content the state still holds: the stripped workload
// runs B, so the revert to A must reach it, though the state says A was rolled out.
func TestRevertAfterAStripWhileTheStateIsBehindReloadsTheStrippedWorkload(t *testing.T) {
	t.Parallel()
	ns, lift, stripped, _ := stripWhileTheStateIsBehind(t)
	settle(t)
	hashA := updateConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	waitEnv(t, ns, "w1", cmVar, hashA)
	wantReloads(t, ns, "w1", stripped, 1)
	lift()
	settle(t)
	if v, ok := env(getDeployment(t, ns, "w2"), "app", cmVar); ok {
		t.Fatalf("w2 carries %s=%s; it never left A and needs no reload", cmVar, v)
	}
}

// Soak seed 1795454986798299507: with --reload-on-delete, a dependent without a marker (it never
// took a change of the config) was not restarted by the deletion, and the deletion had to keep
// the content so that a recreation with other content reloaded it. Now the deletion reaches it
// too (its marker says deleted), and the recreation reloads both, also when a reloader started
// in between (soak seed 1795459093681678810: the judgement of the deletion's reach was once in
// memory only).
func TestADeletionReachesAnUnmarkedWorkloadAndItsRecreationReloadsEveryOne(t *testing.T) {
	t.Parallel()
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%t", restart), func(t *testing.T) {
			ns := cluster.NewNamespace(t)
			createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
			createDeployment(t, ns, "marked", 0, named("configmap", "app-config"), nil)
			onDelete := controllerOpts{tweak: func(o *reloader.Options) { o.ReloadOnDelete = true }}
			first := startController(t, ns, onDelete)
			waitEnv(t, ns, "marked", cmVar, updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"}))
			createDeployment(t, ns, "unmarked", 0, named("configmap", "app-config"), nil) // runs B, no marker
			settle(t)
			if err := cluster.Client().CoreV1().ConfigMaps(ns).Delete(context.Background(), "app-config", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitEnv(t, ns, "marked", cmVar, policy.DeletedMarker)
			waitEnv(t, ns, "unmarked", cmVar, policy.DeletedMarker)
			settle(t)
			if restart {
				first.stop(t)
				startController(t, ns, onDelete)
				settle(t)
			}
			createConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
			hashC := confighash.ConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "C"}})
			waitEnv(t, ns, "marked", cmVar, hashC)
			waitEnv(t, ns, "unmarked", cmVar, hashC)
		})
	}
}

// Soak seed 1795750246569125019@5: a deletion reload leaves pods waiting for the config; it
// reappears, and they start on it (no reload is due: the process saw them wait); that process
// stops, and the config is deleted again. The marker says the deletion, which the pods no longer
// run: the next process learns from the state that they took the reappearance, and reloads the
// workload once, and only once: that restart leaves them waiting again.
func TestPodsThatTookAReappearanceAreReloadedForTheNextDeletionByALaterProcess(t *testing.T) {
	t.Parallel()
	reappearanceTakenThenDeletedAgain(t, func(string) {})
}

// Soak seed 1795773593018830783@5: as above, but a change of the Deployment's spec that leaves
// its pod template alone (here minReadySeconds; a pause does too) came between the reappearance
// and the stop. Its update event was taken for a marker put back, and dropped the note that
// the pods run the reappearance: the later process left them on it.
func TestPodsThatTookAReappearanceKeepItsNoteThroughASpecChangeThatRestartsNothing(t *testing.T) {
	t.Parallel()
	reappearanceTakenThenDeletedAgain(t, func(ns string) {
		generation := getDeployment(t, ns, "web").Generation
		updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 1 })
		settle(t)
		if d := getDeployment(t, ns, "web"); d.Generation == generation {
			t.Fatal("the spec change made no new generation; the test needs one")
		}
	})
}

// Soak seed 1796182876957345445@10: as above, but the config is still there, with the content
// the pods took, when the later process starts. The marker says the deletion; the state notes
// that the pods started on the reappearance: that process restarts nothing (it restarted web
// for content its pods ran). A change after that restarts web once.
func TestPodsThatTookAReappearanceAreNotReloadedForItByALaterProcess(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), envFromCM("app-config")) // its pods wait for it
	onDelete := controllerOpts{tweak: func(o *reloader.Options) { o.ReloadOnDelete = true }}
	first := startController(t, ns, onDelete)
	settle(t)
	deleteConfigMap(t, ns, "app-config")
	waitEnv(t, ns, "web", cmVar, policy.DeletedMarker)
	first.settle()
	web := templateChanges(t, ns, "web")
	hashB := confighash.ConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "B"}})
	createConfigMap(t, ns, "app-config", map[string]string{"v": "B"}) // the waiting pods start on B
	waitFor(t, 10*time.Second, "the state notes that web runs B", func() (bool, error) {
		return stateEntry(t, ns, "strip.ConfigMap.Deployment_web_app-config") == hashB, nil
	})
	first.settle()
	first.stop(t)

	startController(t, ns, onDelete)
	settle(t)
	if n := web(); n != 0 {
		t.Fatalf("web's template changed %d times, want 0: its pods run B, as the state notes", n)
	}
	hashC := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	waitEnv(t, ns, "web", cmVar, hashC)
	settle(t)
	if n := web(); n != 1 {
		t.Fatalf("web's template changed %d times after a change to C, want 1", n)
	}
}

// As above, but the later process starts before the reappearance and sees it live: the
// state notes that web's pods wait for app-config, so they start on B; that restarts nothing
// (it restarted web once for B), and B is recorded as rolled out.
func TestPodsThatWaitedForAConfigAreNotReloadedForItsReappearanceByALaterProcess(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), envFromCM("app-config")) // its pods wait for it
	onDelete := controllerOpts{tweak: func(o *reloader.Options) { o.ReloadOnDelete = true }}
	first := startController(t, ns, onDelete)
	settle(t)
	deleteConfigMap(t, ns, "app-config")
	waitEnv(t, ns, "web", cmVar, policy.DeletedMarker)
	first.settle()
	first.stop(t)

	second := startController(t, ns, onDelete)
	settle(t)
	web := templateChanges(t, ns, "web")
	hashB := confighash.ConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "B"}})
	createConfigMap(t, ns, "app-config", map[string]string{"v": "B"}) // the waiting pods start on B
	waitRecorded(t, second, "v1.ConfigMap_app-config", hashB)
	settle(t)
	if n := web(); n != 0 {
		t.Fatalf("web's template changed %d times at the reappearance, want 0: its pods started on it", n)
	}
	hashC := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	waitEnv(t, ns, "web", cmVar, hashC)
	settle(t)
	if n := web(); n != 1 {
		t.Fatalf("web's template changed %d times after a change to C, want 1", n)
	}
}

// reappearanceTakenThenDeletedAgain runs web, whose pods wait for app-config, through its
// deletion (a reload), its reappearance (the pods start on it, no reload) and between, then stops
// the controller, deletes the config again and starts another one: web is reloaded once, for
// the deletion.
func reappearanceTakenThenDeletedAgain(t *testing.T, between func(ns string)) {
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), envFromCM("app-config")) // its pods wait for it
	onDelete := controllerOpts{tweak: func(o *reloader.Options) { o.ReloadOnDelete = true }}
	first := startController(t, ns, onDelete)
	settle(t)
	deleteConfigMap(t, ns, "app-config")
	waitEnv(t, ns, "web", cmVar, policy.DeletedMarker)
	first.settle()
	web := templateChanges(t, ns, "web")
	hashB := confighash.ConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "B"}})
	createConfigMap(t, ns, "app-config", map[string]string{"v": "B"}) // the waiting pods start on B
	waitFor(t, 10*time.Second, "the state notes that web runs B", func() (bool, error) {
		return stateEntry(t, ns, "strip.ConfigMap.Deployment_web_app-config") == hashB, nil
	})
	first.settle()
	if n := web(); n != 0 {
		t.Fatalf("web's template changed %d times at the reappearance, want 0: its pods started on it", n)
	}
	between(ns)
	first.stop(t)

	deleteConfigMap(t, ns, "app-config")
	startController(t, ns, onDelete)
	waitFor(t, 30*time.Second, "web reloaded for the deletion", func() (bool, error) { return web() == 1, nil })
	settle(t)
	if n := web(); n != 1 {
		t.Fatalf("web's template changed %d times, want 1", n)
	}
	if got, _ := env(getDeployment(t, ns, "web"), "app", cmVar); got != policy.DeletedMarker {
		t.Fatalf("web's marker is %q, want %q", got, policy.DeletedMarker)
	}
}

// Soak seed 1795743600418900614@5: the state lost what a workload without a marker ran; the
// config, absent at the next start, reappeared, the workload's reload for it held by its window,
// and was deleted again. The workload ran a content all along: the deletion reloads it once its
// window opens.
func TestAWorkloadWithoutAMarkerIsReloadedForTheDeletionOfAReappearedConfig(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"), map[string]string{policy.WindowAnnotation: closedWindow()}), envFromCM("app-config"))
	both := controllerOpts{tweak: func(o *reloader.Options) { o.ReloadOnDelete, o.ReloadOnCreate = true, true }}
	first := startController(t, ns, both)
	settle(t)
	deleteConfigMap(t, ns, "app-config") // web's reload for it is held
	waitFor(t, 10*time.Second, "web's reload held by the window", func() (bool, error) {
		return value(t, first.metrics.Deferred.WithLabelValues(policy.ReasonWindow)) == 1, nil
	})
	first.stop(t)
	if err := cluster.Client().CoreV1().ConfigMaps(ns).Delete(context.Background(), "reloader-state", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	second := startController(t, ns, both)
	settle(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitFor(t, 10*time.Second, "web's reload for the reappearance held", func() (bool, error) {
		return value(t, second.metrics.Deferred.WithLabelValues(policy.ReasonWindow)) == 1, nil
	})
	deleteConfigMap(t, ns, "app-config")
	settle(t)
	changes := templateChanges(t, ns, "web")
	patchAnnotation(t, ns, "web", policy.WindowAnnotation, "")
	waitEnv(t, ns, "web", cmVar, policy.DeletedMarker)
	if n := changes(); n != 1 {
		t.Fatalf("web's template changed %d times, want 1", n)
	}
}
