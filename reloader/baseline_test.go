package reloader_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/reloader/reloader/confighash"
)

// Workloads switched from stakater Reloader whose variable lags are due for the config at the
// first start; a closed window holds them. The config's state entry is recorded all the same, so
// that a workload without a marker created while no reloader runs (between two leaders: the next
// one lists it, it does not see it created) restarts for the config's next change; the lagging
// ones keep their catch-up, after a restart too (soak seed 1795657828041649806@4: w-0, created
// between two leaders while w-1 and w-2 were held, was never restarted for cm-1).
func TestAWorkloadWithoutAMarkerRestartsForAChangeWhileALaggingStakaterDependentIsHeld(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	closed := closedWindow()
	for _, name := range []string{"lagging-a", "lagging-b"} {
		held := named("configmap", "app-config")
		held["reloader/window"] = closed
		createDeployment(t, ns, name, 0, held, func(s *corev1.PodSpec) {
			old := confighash.StakaterConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "old"}})
			s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "STAKATER_APP_CONFIG_CONFIGMAP", Value: old})
		})
	}
	first := startController(t, ns, controllerOpts{grace: 5 * time.Second})
	settle(t)
	first.stop(t)
	wantReloads(t, ns, "lagging-a", 1, 0)

	before := createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil).Generation
	second := startController(t, ns, controllerOpts{grace: 5 * time.Second})
	wantReloads(t, ns, "web", before, 0)

	// The entry recorded hides not the catch-up of a lagging one, after a restart: its window
	// opens, it reloads once, for the content it was held on.
	second.stop(t)
	startController(t, ns, controllerOpts{})
	opened := updateDeployment(t, ns, "lagging-a", func(d *appsv1.Deployment) { delete(d.Annotations, "reloader/window") })
	waitEnv(t, ns, "lagging-a", cmVar, confighash.ConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "0"}}))
	wantReloads(t, ns, "lagging-a", opened.Generation, 1)

	// While lagging-b is held, the config's next change restarts web and lagging-a once each.
	caught := getDeployment(t, ns, "lagging-a").Generation
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitEnv(t, ns, "web", cmVar, hash)
	waitEnv(t, ns, "lagging-a", cmVar, hash)
	wantReloads(t, ns, "web", before, 1)
	wantReloads(t, ns, "lagging-a", caught, 1)
}
