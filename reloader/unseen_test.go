package reloader_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/reloader/reloader/policy"
)

// A reload for a Secret, 3 s behind a change of a ConfigMap the workload also reads (its watch
// lags), restarts the pods with the ConfigMap's new content while the marker says the old one.
// That change is then reverted: the marker matches the content again, yet the pods run the
// reverted-away content, so the workload must restart once more (checker seed 4@3). A minimum
// interval holds the reload until both the change and its revert are seen, as a coalescing
// period would.
func TestARestartThatGaveThePodsAnUnseenChangeRestartsThemAgainAfterItsRevert(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	const secretVar = "_RELOADER_-secret-db"
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createSecret(t, ns, "db", map[string]string{"p": "0"})
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"), named("secret", "db")), nil)
	startControllerAs(t, laggingWatch(cluster.Config, "configmaps", 3*time.Second), ns, controllerOpts{})
	settle(t)
	hashA := updateConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	waitEnv(t, ns, "web", cmVar, hashA)
	settle(t)
	// Set only now, so that it holds no reload before the Secret's.
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Annotations[policy.MinIntervalAnnotation] = "8s" })
	settle(t)
	before := getDeployment(t, ns, "web").Generation

	updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	hashS := updateSecret(t, ns, "db", map[string]string{"p": "1"})
	waitEnv(t, ns, "web", secretVar, hashS)
	if got, _ := env(getDeployment(t, ns, "web"), "app", cmVar); got != hashA {
		t.Fatalf("the Secret's reload saw the ConfigMap's change (marker %q): the lag did not hold it back", got)
	}
	if back := updateConfigMap(t, ns, "app-config", map[string]string{"v": "A"}); back != hashA {
		t.Fatalf("revert gave hash %q, want A's %q", back, hashA)
	}

	waitFor(t, 30*time.Second, "web restarted for the ConfigMap content its pods read unseen", func() (bool, error) {
		return getDeployment(t, ns, "web").Generation == before+2, nil
	})
	wantReloads(t, ns, "web", before, 2)
	d := getDeployment(t, ns, "web")
	if got, _ := env(d, "app", cmVar); got != hashA {
		t.Fatalf("web carries %q for the ConfigMap, want A's %q", got, hashA)
	}
	if d.Spec.Template.Annotations[policy.RestartedAt] == "" {
		t.Fatalf("the forced restart wrote no %s", policy.RestartedAt)
	}

	// The next change restarts once, not twice: the forced restart ended the doubt.
	hashC := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	waitEnv(t, ns, "web", cmVar, hashC)
	wantReloads(t, ns, "web", before, 3)
}

// A scale changes a Deployment's generation, not its pod template: no pod restarts. The first
// one after a start is not to be taken for another actor's restart (soak seed
// 1795691391691440059@4: a watch-list start passed each cached workload through the cache's
// transform twice, and its whole-template hash changed). Here a reload is held by a closed
// window when the reloader restarts; after a scale the config returns to the content the
// marker holds, and opening the window restarts nothing.
func TestAScaleAfterAStartIsNotTakenForAnotherActorsRestart(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	first := startController(t, ns, controllerOpts{})
	settle(t)
	marked := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitEnv(t, ns, "web", cmVar, marked)
	patchAnnotation(t, ns, "web", policy.WindowAnnotation, closedWindow())
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"}) // held by the window
	first.settle()
	first.stop(t)

	r := startController(t, ns, controllerOpts{})
	r.settle()
	changes := templateChanges(t, ns, "web")
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(2)) })
	r.settle()
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"}) // the content web's pods run
	r.settle()
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { delete(d.Annotations, policy.WindowAnnotation) })
	r.settle()
	if n := changes(); n != 0 {
		t.Fatalf("web's template changed %d times after the window opened; its pods run the content\n%s", n, r.log.String())
	}
	// Positive control: a change restarts it, once.
	waitEnv(t, ns, "web", cmVar, updateConfigMap(t, ns, "app-config", map[string]string{"v": "3"}))
	r.settle()
	if n := changes(); n != 1 {
		t.Fatalf("web's template changed %d times for a change, want 1", n)
	}
}

// A workload restarted for one config notes what its pods run of the others: here a Secret it
// has no marker of, of which it reads one key. Its annotations then switch between auto (it
// reloads on that key) and naming the Secret (on all of it). The Secret did not change: nothing
// restarts (soak seed 1795737404676896416@4: the key's content, compared with the whole
// Secret's, restarted a CronJob once for no change). A change the new annotations reload on
// then reloads it once.
func TestSwitchingBetweenAutoAndNamedRestartsNothingWithoutAChange(t *testing.T) {
	t.Parallel()
	auto := map[string]string{"reloader.stakater.com/auto": "true"}
	namedBoth := map[string]string{"configmap.reloader.stakater.com/reload": "app-config", "secret.reloader.stakater.com/reload": "db"}
	for _, tc := range []struct {
		name       string
		from, to   map[string]string
		thenSecret map[string]string
	}{
		{"auto to named", auto, namedBoth, map[string]string{"a": "0", "b": "1"}},
		{"named to auto", namedBoth, auto, map[string]string{"a": "1", "b": "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := cluster.NewNamespace(t)
			createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
			createSecret(t, ns, "db", map[string]string{"a": "0", "b": "0"})
			createDeployment(t, ns, "web", 0, tc.from, both(envFromCM("app-config"), secretKeyRef("db", "a")))
			startController(t, ns, controllerOpts{})
			settle(t)
			waitEnv(t, ns, "web", cmVar, updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"}))
			settle(t)
			tmpl := getDeployment(t, ns, "web").Spec.Template

			// A Deployment's generation counts changes of its annotations too.
			before := updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Annotations = tc.to }).Generation
			wantReloads(t, ns, "web", before, 0)
			if after := getDeployment(t, ns, "web").Spec.Template; !equality.Semantic.DeepEqual(after, tmpl) {
				t.Fatalf("the switch of annotations changed the template:\n%+v\nwas\n%+v", after, tmpl)
			}

			updateSecret(t, ns, "db", tc.thenSecret)
			waitFor(t, 30*time.Second, "web reloaded for the Secret", func() (bool, error) {
				_, ok := env(getDeployment(t, ns, "web"), "app", "_RELOADER_-secret-db")
				return ok, nil
			})
			wantReloads(t, ns, "web", before, 1)
		})
	}
}
