package reloader_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/reloader/reloader/confighash"
)

// Checker seed 326@9: a Deployment whose owner paused and resumed it while its config was absent
// was noted as restarted then, its pods waiting for the config and running whatever it came back
// with; so the recreation with other content did not reload it. A resume that finds the template
// it paused on rolls out nothing: the pods still run the content from before the deletion. The
// same pause with a template change in between (the control) does restart the pods, which then
// take the recreation, and are not reloaded for it.
func TestAnOwnersPauseAndResumeWhileItsConfigIsAbsentRestartsNothing(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	startController(t, ns, controllerOpts{})
	auto := map[string]string{"reloader.stakater.com/auto": "true"}
	gens := map[string]int64{}
	for _, name := range []string{"resumed", "rolled"} {
		createDeployment(t, ns, name, 0, auto, envFromCM("app-config"))
	}
	waitFor(t, 10*time.Second, "app-config recorded", func() (bool, error) {
		return stateEntry(t, ns, "v1.ConfigMap_app-config") != "", nil
	})
	settle(t)
	deleteConfigMap(t, ns, "app-config")
	settle(t)
	for _, name := range []string{"resumed", "rolled"} {
		updateDeployment(t, ns, name, func(d *appsv1.Deployment) { d.Spec.Paused = true })
	}
	updateDeployment(t, ns, "rolled", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "fake:2" })
	for _, name := range []string{"resumed", "rolled"} {
		gens[name] = updateDeployment(t, ns, name, func(d *appsv1.Deployment) { d.Spec.Paused = false }).Generation
	}
	settle(t)

	createConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	hash := confighash.ConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "B"}})
	waitEnv(t, ns, "resumed", cmVar, hash)
	wantReloads(t, ns, "resumed", gens["resumed"], 1)
	wantReloads(t, ns, "rolled", gens["rolled"], 0)
}

// A reloader started while an owner's pause holds a Deployment did not see the pause begin: the
// template it first sees it paused on is the one it paused on, as far as it can tell, and a
// resume that finds it rolls out nothing. Its pods still run the content from before the
// config's deletion, so the recreation with other content reloads it. The control's template
// changes after that reloader's start, and its pods take the recreation.
func TestAResumeOfAPauseBegunBeforeTheStartRestartsNothing(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	first := startController(t, ns, controllerOpts{})
	auto := map[string]string{"reloader.stakater.com/auto": "true"}
	gens := map[string]int64{}
	for _, name := range []string{"resumed", "rolled"} {
		createDeployment(t, ns, name, 0, auto, envFromCM("app-config"))
	}
	waitFor(t, 10*time.Second, "app-config recorded", func() (bool, error) {
		return stateEntry(t, ns, "v1.ConfigMap_app-config") != "", nil
	})
	settle(t)
	deleteConfigMap(t, ns, "app-config")
	settle(t)
	first.stop(t)
	for _, name := range []string{"resumed", "rolled"} {
		updateDeployment(t, ns, name, func(d *appsv1.Deployment) { d.Spec.Paused = true })
	}
	startController(t, ns, controllerOpts{})
	updateDeployment(t, ns, "rolled", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "fake:2" })
	for _, name := range []string{"resumed", "rolled"} {
		gens[name] = updateDeployment(t, ns, name, func(d *appsv1.Deployment) { d.Spec.Paused = false }).Generation
	}
	settle(t)

	createConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	hash := confighash.ConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "B"}})
	waitEnv(t, ns, "resumed", cmVar, hash)
	wantReloads(t, ns, "resumed", gens["resumed"], 1)
	wantReloads(t, ns, "rolled", gens["rolled"], 0)
}

// A template changed while an owner's pause holds a Deployment, before the reloader started,
// has not rolled out (the Deployment's status says so): the resume rolls it out, and the pods
// it starts wait for the config deleted before and start on its recreation, which reloads
// nothing. The positive control, whose template rolled out before the pause, is reloaded for
// the recreation (its pods run the content from before the deletion).
func TestAResumeOfAPauseFoundAtStartOverATemplateNotRolledOutIsARollout(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	first := startController(t, ns, controllerOpts{})
	auto := map[string]string{"reloader.stakater.com/auto": "true"}
	for _, name := range []string{"pending", "rolled"} {
		createDeployment(t, ns, name, 1, auto, envFromCM("app-config"))
	}
	waitFor(t, 10*time.Second, "app-config recorded", func() (bool, error) {
		return stateEntry(t, ns, "v1.ConfigMap_app-config") != "", nil
	})
	settle(t)
	deleteConfigMap(t, ns, "app-config")
	settle(t)
	first.stop(t)
	for _, name := range []string{"pending", "rolled"} {
		updateDeployment(t, ns, name, func(d *appsv1.Deployment) { d.Spec.Paused = true })
	}
	pending := updateDeployment(t, ns, "pending", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "fake:2" })
	waitFor(t, 30*time.Second, "the paused template change observed, not rolled out", func() (bool, error) {
		d := getDeployment(t, ns, "pending")
		return d.Status.ObservedGeneration >= pending.Generation && d.Status.UpdatedReplicas == 0, nil
	})
	waitFor(t, 30*time.Second, "rolled's pause observed", func() (bool, error) {
		d := getDeployment(t, ns, "rolled")
		return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == 1, nil
	})
	startController(t, ns, controllerOpts{})
	gens := map[string]int64{}
	for _, name := range []string{"pending", "rolled"} {
		gens[name] = updateDeployment(t, ns, name, func(d *appsv1.Deployment) { d.Spec.Paused = false }).Generation
	}
	waitFor(t, 30*time.Second, "pending's rollout at the resume", func() (bool, error) {
		d := getDeployment(t, ns, "pending")
		return d.Status.ObservedGeneration >= gens["pending"] && d.Status.UpdatedReplicas == 1 && d.Status.Replicas == 1, nil
	})
	settle(t)

	createConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	hash := confighash.ConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "B"}})
	waitEnv(t, ns, "rolled", cmVar, hash)
	wantReloads(t, ns, "rolled", gens["rolled"], 1)
	wantReloads(t, ns, "pending", gens["pending"], 0)
}
