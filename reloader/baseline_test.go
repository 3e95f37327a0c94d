package reloader_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/reloader/reloader/confighash"
)

// A workload switched from stakater Reloader whose variable lags is due for the config at the
// first start; a closed window holds it, so the config's state entry is never recorded (the
// entry would hide that catch-up). A workload without a marker created while no reloader runs
// (between two leaders: the next one lists it, it does not see it created) is judged by that
// missing entry; it must still restart for the config's next change (soak seed
// 1795657828041649806@4: w-0 created while w-1 and w-2 were held, never restarted for cm-1).
func TestAWorkloadWithoutAMarkerRestartsForAChangeWhileALaggingStakaterDependentIsHeld(t *testing.T) {
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	now := time.Now().UTC().Add(12 * time.Hour)
	closed := fmt.Sprintf("%02d:%02d-%02d:%02d", now.Hour(), now.Minute(), now.Add(time.Minute).Hour(), now.Add(time.Minute).Minute())
	held := named("configmap", "app-config")
	held["reloader/window"] = closed
	createDeployment(t, ns, "lagging", 0, held, func(s *corev1.PodSpec) {
		old := confighash.StakaterConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "old"}})
		s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "STAKATER_APP_CONFIG_CONFIGMAP", Value: old})
	})
	first := startController(t, ns, controllerOpts{grace: 5 * time.Second})
	settle()
	first.stop(t)
	if g := getDeployment(t, ns, "lagging").Generation; g != 1 {
		t.Fatalf("lagging: generation %d, want 1: its window is closed", g)
	}

	// Created between two leaders: the next one lists it, it does not see it created.
	before := createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil).Generation
	startController(t, ns, controllerOpts{})
	settle()
	if g := getDeployment(t, ns, "web").Generation; g != before {
		t.Fatalf("web: generation %d, want %d: nothing changed since its creation", g, before)
	}
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitEnv(t, ns, "web", cmVar, hash)
	wantReloads(t, ns, "web", before, 1)
}
