package reloader_test

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/reloader/reloader/policy"
)

// Checker seed 13@8: another actor made a workload read one key of a config whose entry holds
// its current content, while a dependent held by a closed window kept the entry from being
// recorded as rolled out again. The key's per-key entry was never written, and a change of
// another key restarted the workload for the value it ran (a key never recorded counts as
// changed). The same holds for a workload created reading the key.
func TestAWorkloadMadeToReadAKeyWhileAnotherDependentIsHeldIsNotRestartedForAnotherKey(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"a": "1", "b": "1"})
	held := withAnnotations(named("configmap", "app-config"), map[string]string{policy.WindowAnnotation: closedWindow()})
	createDeployment(t, ns, "held", 0, held, func(s *corev1.PodSpec) { // due, by a marker of another content
		s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: cmVar, Value: strings.Repeat("1", 40)})
	})
	auto := map[string]string{"reloader.stakater.com/auto": "true"}
	readA := func(s *corev1.PodSpec) {
		s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: "a"}}})
	}
	createDeployment(t, ns, "web", 0, auto, nil) // reads nothing yet
	startController(t, ns, controllerOpts{})
	waitFor(t, 10*time.Second, "app-config recorded", func() (bool, error) {
		return stateEntry(t, ns, "v1.ConfigMap_app-config") != "", nil
	})
	settle(t)
	reref := updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { readA(&d.Spec.Template.Spec) }).Generation
	created := createDeployment(t, ns, "new", 0, auto, readA).Generation
	settle(t)

	updateConfigMap(t, ns, "app-config", map[string]string{"a": "1", "b": "2"})
	wantReloads(t, ns, "web", reref, 0)
	wantReloads(t, ns, "new", created, 0)

	// Positive control: a change of key a restarts each once; held stays held.
	updateConfigMap(t, ns, "app-config", map[string]string{"a": "2", "b": "2"})
	for name, gen := range map[string]int64{"web": reref, "new": created} {
		waitFor(t, 10*time.Second, name+" reloaded for key a", func() (bool, error) {
			return getDeployment(t, ns, name).Generation == gen+1, nil
		})
		wantReloads(t, ns, name, gen, 1)
	}
	wantReloads(t, ns, "held", 1, 0)
}
