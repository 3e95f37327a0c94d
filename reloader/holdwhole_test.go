package reloader_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/internal/dev/testcluster"
	"github.com/reloader/reloader/policy"
)

// A Deployment reads key a of ConfigMap app and names app in its reload annotation, so a reload
// carries app's whole content; the reload rolls back, holding that content. Its annotations
// then switch to auto, which reloads on key a only: the hold still holds the content it runs
// (seed 4936@9 reloaded it again, and rolled it back again). The next content is reloaded.
func TestAHoldOfTheWholeContentHoldsAfterASwitchToAuto(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app", map[string]string{"a": "1", "b": "1"})
	createDeploymentFrom(t, ns, "web", func(d *appsv1.Deployment) {
		d.Annotations = map[string]string{"configmap.reloader.stakater.com/reload": "app", policy.RollbackAnnotation: "true"}
		d.Spec.Replicas = new(int32(1))
		d.Spec.ProgressDeadlineSeconds = new(int32(3))
		c := &d.Spec.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "a"}}},
			corev1.EnvVar{Name: testcluster.NotReadyWhen, Value: "broken"}, corev1.EnvVar{Name: "BROKEN", Value: "broken"})
	})
	startController(t, ns, controllerOpts{})
	settle(t)
	gen := getDeployment(t, ns, "web").Generation
	waitAppHeld := func(what, want string) {
		t.Helper()
		waitFor(t, 60*time.Second, what, func() (bool, error) {
			return stateValues(t, ns, "hold.")["hold.ConfigMap.Deployment_web_app"] == want, nil
		})
	}
	whole := updateConfigMap(t, ns, "app", map[string]string{"a": "2", "b": "1"})
	waitAppHeld("the reload of the whole content rolled back and held", whole)
	wantReloads(t, ns, "web", gen, 2)

	switched := updateDeployment(t, ns, "web", func(d *appsv1.Deployment) {
		delete(d.Annotations, "configmap.reloader.stakater.com/reload")
		d.Annotations["reloader.stakater.com/auto"] = "true"
	}).Generation
	waitFor(t, 60*time.Second, "the hold re-recorded as key a's content", func() (bool, error) {
		v := stateValues(t, ns, "hold.")["hold.ConfigMap.Deployment_web_app"]
		return v != "" && v != whole, nil
	})
	wantReloads(t, ns, "web", switched, 0)

	// Positive control: key a's next content ends the hold, is reloaded and rolled back.
	updateConfigMap(t, ns, "app", map[string]string{"a": "3", "b": "1"})
	waitFor(t, 60*time.Second, "the reload for a=3 rolled back", func() (bool, error) {
		return getDeployment(t, ns, "web").Generation-switched >= 2, nil
	})
	wantReloads(t, ns, "web", switched, 2)
}

// The reverse switch: a Deployment in auto mode reads key a of ConfigMap app, so a reload
// carries key a's content; the reload rolls back, holding it, and puts back the marker of key
// a's content before. Its annotations then switch to naming app, which reloads on the whole
// content: that marker is stale, and the hold still holds the content, re-recorded as the whole
// content; before, the hold was taken as ended and the held content reloaded once. The next
// content is reloaded.
func TestAHoldOfTheKeysHoldsAfterASwitchToNamingTheConfig(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	first := map[string]string{"a": "1", "b": "1"}
	createConfigMap(t, ns, "app", first)
	createDeploymentFrom(t, ns, "web", func(d *appsv1.Deployment) {
		d.Annotations = map[string]string{"reloader.stakater.com/auto": "true", policy.RollbackAnnotation: "true"}
		// A marker of key a's content, which the rollback restores.
		d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: appVar,
			Value: confighash.Subset(confighash.ConfigMapKeys(&corev1.ConfigMap{Data: first}), []string{"a"})})
		d.Spec.Replicas = new(int32(1))
		d.Spec.ProgressDeadlineSeconds = new(int32(3))
		c := &d.Spec.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "a"}}},
			corev1.EnvVar{Name: testcluster.NotReadyWhen, Value: "broken"}, corev1.EnvVar{Name: "BROKEN", Value: "broken"})
	})
	startController(t, ns, controllerOpts{})
	settle(t)
	gen := getDeployment(t, ns, "web").Generation
	hold := func() string { return stateValues(t, ns, "hold.")["hold.ConfigMap.Deployment_web_app"] }
	whole := updateConfigMap(t, ns, "app", map[string]string{"a": "2", "b": "1"})
	waitFor(t, 60*time.Second, "the reload of key a rolled back and held", func() (bool, error) {
		v := hold()
		return v != "" && v != whole, nil
	})
	wantReloads(t, ns, "web", gen, 2)

	switched := updateDeployment(t, ns, "web", func(d *appsv1.Deployment) {
		delete(d.Annotations, "reloader.stakater.com/auto")
		d.Annotations["configmap.reloader.stakater.com/reload"] = "app"
	}).Generation
	waitFor(t, 60*time.Second, "the hold re-recorded as the whole content", func() (bool, error) { return hold() == whole, nil })
	touchConfigMap(t, ns, "app") // app's dependents judged again: the hold still holds
	wantReloads(t, ns, "web", switched, 0)

	// Positive control: the next content ends the hold, is reloaded and rolled back.
	updateConfigMap(t, ns, "app", map[string]string{"a": "2", "b": "2"})
	waitFor(t, 60*time.Second, "the reload for b=2 rolled back", func() (bool, error) {
		return getDeployment(t, ns, "web").Generation-switched >= 2, nil
	})
	wantReloads(t, ns, "web", switched, 2)
}
