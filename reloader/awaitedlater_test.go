package reloader_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Checker seed 408@9: web, without a marker of Secret db, is restarted (a reload for app-config)
// while db is absent, so the state notes that its pods wait for db. With no reloader running, db
// reappears with X, another actor restarts web (its pods read X), and db changes to Y. Which
// content the pods run is unknown to the next process: it reloads web once, for Y.
func TestAWaitNoteLeftByAnEarlierProcessDoesNotVouchForAChangeMadeWhileNoneRan(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createSecret(t, ns, "db", map[string]string{"a": "0"})
	createDeployment(t, ns, "web", 0, map[string]string{"reloader.stakater.com/auto": "true"}, func(s *corev1.PodSpec) {
		envFromCM("app-config")(s)
		envFromSecret("db")(s)
	})
	first := startController(t, ns, controllerOpts{})
	settle(t)
	deleteSecret(t, ns, "db")
	settle(t)
	waitEnv(t, ns, "web", cmVar, updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"}))
	first.settle()
	if got := stateEntry(t, ns, "strip.Secret.Deployment_web_db"); got != "0000000000000000000000000000000000000001" {
		t.Fatalf("the state's note for web and db is %q, want the wait note", got)
	}
	first.stop(t)

	createSecret(t, ns, "db", map[string]string{"a": "X"})
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "other:2" })
	hashY := updateSecret(t, ns, "db", map[string]string{"a": "Y"})
	web := templateChanges(t, ns, "web")
	startController(t, ns, controllerOpts{})
	waitFor(t, 20*time.Second, "web reloaded for db's change to Y", func() (bool, error) { return web() >= 1, nil })
	settle(t)
	if n := web(); n != 1 {
		t.Fatalf("web's template changed %d times, want 1", n)
	}
	if got, _ := env(getDeployment(t, ns, "web"), "app", dbVar); got != hashY {
		t.Fatalf("web's marker for db is %q, want Y's %q", got, hashY)
	}
}
