package reloader_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/internal/dev/testcluster"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// brokenSecretReader creates Deployment web, one replica whose pods never become Ready (a
// progress deadline of 3 s), with --rollback's annotation, reloading on Secret db.
func brokenSecretReader(t *testing.T, ns string) {
	t.Helper()
	createSecret(t, ns, "db", map[string]string{"password": "a"})
	createDeploymentFrom(t, ns, "web", func(d *appsv1.Deployment) {
		d.Annotations = map[string]string{"secret.reloader.stakater.com/reload": "db", policy.RollbackAnnotation: "true"}
		d.Spec.Replicas = new(int32(1))
		d.Spec.ProgressDeadlineSeconds = new(int32(3))
		c := &d.Spec.Template.Spec.Containers[0]
		c.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}}
		c.Env = append(c.Env, corev1.EnvVar{Name: testcluster.NotReadyWhen, Value: "broken"}, corev1.EnvVar{Name: "BROKEN", Value: "broken"})
	})
}

// waitHoldOf waits until web's hold on db names want.
func waitHoldOf(t *testing.T, ns, what, want string) {
	t.Helper()
	waitFor(t, 60*time.Second, what, func() (bool, error) {
		return stateValues(t, ns, "hold.")["hold.Secret.Deployment_web_db"] == want, nil
	})
}

// A reload for a Secret's change is made under one hash key, and the reloader stops before its
// rollout fails; the key is deleted meanwhile. The next start rolls the reload back and holds
// the content it applied, named under the lost key: which content that is, it cannot tell, and
// it takes it as the current one, as it takes a state entry under the lost key (seed 6@10
// reloaded the held content again, and rolled it back again). The hold is re-recorded under the
// new key, and the next content ends it.
func TestARollbackOfAReloadMadeUnderALostHashKeyHoldsTheContent(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	brokenSecretReader(t, ns)
	r := startController(t, ns, controllerOpts{})
	settle(t)
	gen := getDeployment(t, ns, "web").Generation
	underLost := updateSecret(t, ns, "db", map[string]string{"password": "b"})
	waitEnv(t, ns, "web", "_RELOADER_-secret-db", underLost)
	// Stopped once the patch's answer is read: stopped while reading it, the reloader takes the
	// patch for failed, and what it noted the pods run stays "another content".
	waitFor(t, 10*time.Second, "the reload logged", func() (bool, error) {
		return strings.Contains(r.log.String(), "reloaded workload"), nil
	})
	r.stop(t) // grace 0: the rollout is left to the next start
	deleteHashKey(t, ns)

	r = startController(t, ns, controllerOpts{})
	waitFor(t, 60*time.Second, "the reload rolled back", func() (bool, error) {
		e, ok := newestEntry(t, ns)
		return ok && e.RolledBack, nil
	})
	wantReloads(t, ns, "web", gen, 2) // the reload and its rollback, no more
	s, err := cluster.Client().CoreV1().Secrets(ns).Get(context.Background(), "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	current := keyedHash(t, ns, s)
	if id, _ := confighash.KeyIDOf(current); id == "" || current == underLost {
		t.Fatalf("the test needs db's hash under a new key, got %s (before: %s)", current, underLost)
	}
	waitHoldOf(t, ns, "the hold re-recorded under the new key", current)

	// Positive control: the next content ends the hold, is reloaded, rolled back and held.
	next := updateSecret(t, ns, "db", map[string]string{"password": "c"})
	waitHoldOf(t, ns, "the reload for c rolled back and held", next)
	wantReloads(t, ns, "web", gen, 4)
}

// A Secret's reload is rolled back, and its content held: a hash under the hash key. The
// Secret's deletion is no content under any key, so that hold does not keep it: with
// --reload-on-delete the deletion is reloaded (seed 1796277877599293987@10 left a workload
// running a deleted Secret's old content, the deletion held as if under another key).
func TestADeletedSecretIsReloadedThoughItsContentWasHeld(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	brokenSecretReader(t, ns)
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.ReloadOnDelete = true }})
	settle(t)
	gen := getDeployment(t, ns, "web").Generation
	held := updateSecret(t, ns, "db", map[string]string{"password": "b"})
	waitHoldOf(t, ns, "the reload for b rolled back and held", held)
	wantReloads(t, ns, "web", gen, 2)

	deleteSecret(t, ns, "db")
	waitEnv(t, ns, "web", "_RELOADER_-secret-db", policy.DeletedMarker)
	wantReloads(t, ns, "web", gen, 3)
}
