package reloader_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/reloader/reloader/confighash"
)

// stakater names its variable from the config's name folded, so app-config and app.config share
// STAKATER_APP_CONFIG_CONFIGMAP. At the switch, a value equal to app-config's hash vouches for
// app-config and says nothing of app.config, which is judged as never seen: web is not restarted.
// The positive control: api's value equals neither hash (stakater missed a change of app-config),
// and api is restarted once.
func TestAFoldedStakaterVariableVouchesForTheConfigWhoseHashItHolds(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	createConfigMap(t, ns, "app.config", map[string]string{"v": "2"})
	withVar := func(data map[string]string) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "STAKATER_APP_CONFIG_CONFIGMAP",
				Value: confighash.StakaterConfigMap(&corev1.ConfigMap{Data: data})})
		}
	}
	both := named("configmap", "app-config,app.config")
	web := createDeployment(t, ns, "web", 0, both, withVar(map[string]string{"v": "1"})).Generation
	api := createDeployment(t, ns, "api", 0, both, withVar(map[string]string{"v": "0"})).Generation
	startController(t, ns, controllerOpts{})
	waitEnv(t, ns, "api", cmVar, confighash.ConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "1"}}))
	wantReloads(t, ns, "api", api, 1)
	wantReloads(t, ns, "web", web, 0)
}
