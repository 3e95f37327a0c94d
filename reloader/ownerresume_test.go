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
	readersOfADeletedConfig(t, ns, 0, "resumed", "rolled")
	pause(t, ns, true, "resumed", "rolled")
	changeImage(t, ns, "rolled")
	gens := pause(t, ns, false, "resumed", "rolled")
	settle(t)
	recreatedReloadsOnly(t, ns, "resumed", gens)
}

// A reloader started while an owner's pause holds a Deployment did not see the pause begin: the
// template it first sees it paused on is the one it paused on, as far as it can tell, and a
// resume that finds it rolls out nothing. Its pods still run the content from before the
// config's deletion, so the recreation with other content reloads it. The control's template
// changes after that reloader's start, and its pods take the recreation.
func TestAResumeOfAPauseBegunBeforeTheStartRestartsNothing(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	readersOfADeletedConfig(t, ns, 0, "resumed", "rolled").stop(t)
	pause(t, ns, true, "resumed", "rolled")
	startController(t, ns, controllerOpts{})
	changeImage(t, ns, "rolled")
	gens := pause(t, ns, false, "resumed", "rolled")
	settle(t)
	recreatedReloadsOnly(t, ns, "resumed", gens)
}

// A template changed while an owner's pause holds a Deployment, before the reloader started,
// has not rolled out (the Deployment's status says so): the resume rolls it out, and the pods
// it starts wait for the config deleted before and start on its recreation, which reloads
// nothing. The positive control, whose template rolled out before the pause, is reloaded for
// the recreation (its pods run the content from before the deletion).
func TestAResumeOfAPauseFoundAtStartOverATemplateNotRolledOutIsARollout(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	readersOfADeletedConfig(t, ns, 1, "pending", "rolled").stop(t)
	pause(t, ns, true, "pending", "rolled")
	pending := changeImage(t, ns, "pending")
	waitFor(t, 30*time.Second, "the paused template change observed, not rolled out", func() (bool, error) {
		d := getDeployment(t, ns, "pending")
		return d.Status.ObservedGeneration >= pending.Generation && d.Status.UpdatedReplicas == 0, nil
	})
	waitFor(t, 30*time.Second, "rolled's pause observed", func() (bool, error) {
		d := getDeployment(t, ns, "rolled")
		return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == 1, nil
	})
	startController(t, ns, controllerOpts{})
	gens := pause(t, ns, false, "pending", "rolled")
	waitFor(t, 30*time.Second, "pending's rollout at the resume", func() (bool, error) {
		d := getDeployment(t, ns, "pending")
		return d.Status.ObservedGeneration >= gens["pending"] && d.Status.UpdatedReplicas == 1 && d.Status.Replicas == 1, nil
	})
	settle(t)
	recreatedReloadsOnly(t, ns, "rolled", gens)
}

// readersOfADeletedConfig starts a reloader and creates Deployments (auto, replicas each) that
// read app-config; once its content is recorded, it deletes app-config. It returns the reloader.
func readersOfADeletedConfig(t *testing.T, ns string, replicas int32, names ...string) *running {
	t.Helper()
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	r := startController(t, ns, controllerOpts{})
	for _, name := range names {
		createDeployment(t, ns, name, replicas, map[string]string{"reloader.stakater.com/auto": "true"}, envFromCM("app-config"))
	}
	waitFor(t, 10*time.Second, "app-config recorded", func() (bool, error) {
		return stateEntry(t, ns, "v1.ConfigMap_app-config") != "", nil
	})
	settle(t)
	deleteConfigMap(t, ns, "app-config")
	settle(t)
	return r
}

// pause sets or clears spec.paused on each Deployment and returns the generations written.
func pause(t *testing.T, ns string, paused bool, names ...string) map[string]int64 {
	t.Helper()
	gens := map[string]int64{}
	for _, name := range names {
		gens[name] = updateDeployment(t, ns, name, func(d *appsv1.Deployment) { d.Spec.Paused = paused }).Generation
	}
	return gens
}

// changeImage changes a Deployment's pod template, as another actor would.
func changeImage(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	return updateDeployment(t, ns, name, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "fake:2" })
}

// recreatedReloadsOnly recreates app-config with other content and checks that it reloads the
// Deployment reloaded once and none of the others of gens (generations since which to count).
func recreatedReloadsOnly(t *testing.T, ns, reloaded string, gens map[string]int64) {
	t.Helper()
	createConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitEnv(t, ns, reloaded, cmVar, confighash.ConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "B"}}))
	for name, gen := range gens {
		want := int64(0)
		if name == reloaded {
			want = 1
		}
		wantReloads(t, ns, name, gen, want)
	}
}
