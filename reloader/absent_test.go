package reloader_test

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

const dbVar = "_RELOADER_-secret-db"

// restartWhileAbsent sets up the start of checker seed 1795657828041649782@4: web reads Secret db
// (envFrom) and ConfigMap app-config, its marker for db holds M = {a:2,b:1}; db is deleted (no
// --reload-on-delete: no restart), then a change of app-config restarts web while db is absent,
// so its new pods wait for db. A minimum interval, if given, is set before that restart, which
// starts it. It returns M's hash and web's generation after that restart.
func restartWhileAbsent(t *testing.T, ns, interval string) (hashM string, gen int64) {
	t.Helper()
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createSecret(t, ns, "db", map[string]string{"a": "0"})
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"), named("secret", "db")), func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}},
		}
	})
	startController(t, ns, controllerOpts{})
	settle(t)
	hashM = updateSecret(t, ns, "db", map[string]string{"a": "2", "b": "1"})
	waitEnv(t, ns, "web", dbVar, hashM)
	if interval != "" {
		updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Annotations[policy.MinIntervalAnnotation] = interval })
	}
	settle(t)
	before := getDeployment(t, ns, "web").Generation

	deleteSecret(t, ns, "db")
	settle(t)
	hashC := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitEnv(t, ns, "web", cmVar, hashC)
	wantReloads(t, ns, "web", before, 1)
	if got, _ := env(getDeployment(t, ns, "web"), "app", dbVar); got != hashM {
		t.Fatalf("web's marker for db is %q after a restart while db was absent, want M's %q", got, hashM)
	}
	return hashM, before + 1
}

// recreateSecret creates Secret name again with data and returns its content hash.
func recreateSecret(t *testing.T, ns, name string, data map[string]string) string {
	t.Helper()
	createSecret(t, ns, name, data)
	s, err := cluster.Client().CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return keyedHash(t, ns, s)
}

// Pods restarted while a Secret they read was absent waited for it and started on the content
// it reappeared with: that reappearance restarts nothing (it would be a restart for no change),
// though the marker still names the content before the deletion. Setting the Secret back to
// that content is a change for the pods: it restarts them exactly once.
func TestAConfigReappearingAfterARestartWhileAbsentRestartsNothingAndItsRevertRestartsOnce(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	hashM, gen := restartWhileAbsent(t, ns, "")

	if hashX := recreateSecret(t, ns, "db", map[string]string{"a": "1", "b": "1"}); hashX == hashM {
		t.Fatalf("X has M's hash %q", hashX)
	}
	wantReloads(t, ns, "web", gen, 0)

	if back := updateSecret(t, ns, "db", map[string]string{"a": "2", "b": "1"}); back != hashM {
		t.Fatalf("the revert gave hash %q, want M's %q", back, hashM)
	}
	waitFor(t, 30*time.Second, "web restarted for M, which its pods do not run", func() (bool, error) {
		return getDeployment(t, ns, "web").Generation == gen+1, nil
	})
	wantReloads(t, ns, "web", gen, 1)
	if d := getDeployment(t, ns, "web"); d.Spec.Template.Annotations[policy.RestartedAt] == "" {
		t.Fatalf("the forced restart wrote no %s", policy.RestartedAt)
	}

	// The restart ended the record: the next change restarts once.
	hashY := updateSecret(t, ns, "db", map[string]string{"a": "3"})
	waitEnv(t, ns, "web", dbVar, hashY)
	wantReloads(t, ns, "web", gen, 2)
}

// The lost change of checker seed 1795657828041649782@4: the reloader does not act on the
// content db reappears with (here a minimum interval holds the reload, in the seed it was down),
// and db is set back to the content its marker names before it does. The pods run the
// reappeared content, so web must still restart exactly once.
func TestARevertToTheMarkerAfterAConfigReappearedUnactedRestartsThePodsThatWaitedForIt(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	hashM, gen := restartWhileAbsent(t, ns, "10s")

	recreateSecret(t, ns, "db", map[string]string{"a": "1", "b": "1"})
	if back := updateSecret(t, ns, "db", map[string]string{"a": "2", "b": "1"}); back != hashM {
		t.Fatalf("the revert gave hash %q, want M's %q", back, hashM)
	}
	if got := getDeployment(t, ns, "web").Generation; got != gen {
		t.Fatalf("web restarted before the revert (generation %d, want %d): the interval did not hold it", got, gen)
	}
	waitFor(t, 30*time.Second, "web restarted for M, which its pods do not run", func() (bool, error) {
		return getDeployment(t, ns, "web").Generation >= gen+1, nil
	})
	wantReloads(t, ns, "web", gen, 1)
}

// Negative control: db reappearing with the very content its marker names restarts nothing, and
// a later change of it restarts once (positive control).
func TestAConfigReappearingWithItsMarkersContentAfterARestartWhileAbsentRestartsNothing(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	hashM, gen := restartWhileAbsent(t, ns, "")

	if got := recreateSecret(t, ns, "db", map[string]string{"a": "2", "b": "1"}); got != hashM {
		t.Fatalf("recreated with hash %q, want M's %q", got, hashM)
	}
	wantReloads(t, ns, "web", gen, 0)

	hashY := updateSecret(t, ns, "db", map[string]string{"a": "3"})
	waitEnv(t, ns, "web", dbVar, hashY)
	wantReloads(t, ns, "web", gen, 1)
}

// The lost change of soak seed 1795664411625522849@4: with --reload-on-delete, a deletion of db
// restarts web, whose new pods wait for db and start on the content it reappears with (no
// restart for that). A second deletion takes that content away from the pods, whatever web's
// marker says (it still names the first deletion): web must restart once for it. Checked
// under both strategies, since env-vars removes the variable on a deletion and annotations keep
// a marker of it.
func TestASecondDeletionRestartsPodsThatStartedOnTheContentAConfigReappearedWith(t *testing.T) {
	t.Parallel()
	for _, strategy := range []string{policy.StrategyEnvVars, policy.StrategyAnnotations} {
		t.Run(strategy, func(t *testing.T) {
			ns := cluster.NewNamespace(t)
			createSecret(t, ns, "db", map[string]string{"a": "0"})
			createDeployment(t, ns, "web", 0, named("secret", "db"), func(s *corev1.PodSpec) {
				s.Containers[0].EnvFrom = []corev1.EnvFromSource{
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}},
				}
			})
			startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) {
				o.ReloadOnDelete, o.Strategy = true, strategy
			}})
			settle(t)
			// A first change gives web a marker: a deletion restarts only workloads carrying one.
			updateSecret(t, ns, "db", map[string]string{"a": "5"})
			waitFor(t, 30*time.Second, "web restarted for a first change of db", func() (bool, error) {
				return getDeployment(t, ns, "web").Generation == 2, nil
			})
			settle(t)
			gen := getDeployment(t, ns, "web").Generation

			deleteSecret(t, ns, "db")
			waitFor(t, 30*time.Second, "web restarted for db's deletion", func() (bool, error) {
				return getDeployment(t, ns, "web").Generation == gen+1, nil
			})
			recreateSecret(t, ns, "db", map[string]string{"a": "1"})
			wantReloads(t, ns, "web", gen, 1) // the pods waited for db and run this content

			deleteSecret(t, ns, "db")
			waitFor(t, 30*time.Second, "web restarted for the second deletion of db", func() (bool, error) {
				return getDeployment(t, ns, "web").Generation == gen+2, nil
			})
			wantReloads(t, ns, "web", gen, 2)

			// The restart ended the record: db reappearing again restarts nothing (the pods wait
			// for it), and a change of it after that restarts once.
			recreateSecret(t, ns, "db", map[string]string{"a": "2"})
			wantReloads(t, ns, "web", gen, 2)
			updateSecret(t, ns, "db", map[string]string{"a": "3"})
			waitFor(t, 30*time.Second, "web restarted for a change of db", func() (bool, error) {
				return getDeployment(t, ns, "web").Generation == gen+3, nil
			})
			wantReloads(t, ns, "web", gen, 3)
		})
	}
}

func deleteSecret(t *testing.T, ns, name string) {
	t.Helper()
	if err := cluster.Client().CoreV1().Secrets(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A config read only through an optional key ref, absent when another config's change restarts
// the workload: the new pods start without it. Its reappearance, even with the content it had
// before its deletion (what the state's tombstone and any marker say), is a change for them and
// restarts them once, with no marker of it (judged by the state, after a restart of the
// reloader too) or with one (soak seed 1795721381820273670@4, a CronJob without a marker, lost
// the reappearance).
func TestAnOptionalConfigBackAfterARestartWithoutItRestartsOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		marked     bool // web carries a marker of opt before its deletion
		restartsIn bool // the reloader is restarted between the restart without opt and its return
	}{
		{name: "without a marker, the reloader restarted in between", restartsIn: true},
		{name: "without a marker", restartsIn: false},
		{name: "with a marker", marked: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := cluster.NewNamespace(t)
			createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
			createConfigMap(t, ns, "opt", map[string]string{"a": "1"})
			optional := true
			createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config,opt"), nil), func(s *corev1.PodSpec) {
				s.Containers[0].Env = append(s.Containers[0].Env,
					corev1.EnvVar{Name: "V", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: "v"}}},
					corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "opt"}, Key: "a", Optional: &optional}}})
			})
			r := startController(t, ns, controllerOpts{})
			settle(t)
			const optVar = "_RELOADER_-configmap-opt"
			if tc.marked {
				updateConfigMap(t, ns, "opt", map[string]string{"a": "2"})
				waitFor(t, 30*time.Second, "web marked for opt", func() (bool, error) {
					_, ok := env(getDeployment(t, ns, "web"), "app", optVar)
					return ok, nil
				})
			}
			settle(t)
			content := map[string]string{"a": "1"}
			if tc.marked {
				content = map[string]string{"a": "2"}
			}
			deleteConfigMap(t, ns, "opt")
			settle(t)
			before := getDeployment(t, ns, "web").Generation
			hashC := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
			waitEnv(t, ns, "web", cmVar, hashC)
			wantReloads(t, ns, "web", before, 1) // its pods run without opt now
			if tc.restartsIn {
				r.stop(t)
				startController(t, ns, controllerOpts{})
				settle(t)
				wantReloads(t, ns, "web", before, 1)
			}

			createConfigMap(t, ns, "opt", content) // back as it was before its deletion
			waitFor(t, 30*time.Second, "web restarted for opt, which its pods run without", func() (bool, error) {
				return getDeployment(t, ns, "web").Generation == before+2, nil
			})
			wantReloads(t, ns, "web", before, 2)
		})
	}
}

// Seed 5@7 of the checker (generator version 7): a workload reads a config whole, through an
// envFrom its pods wait for; the config is deleted and the workload reloaded for it
// (--reload-on-delete), its new pods waiting. A helm upgrade then has it read one key of the
// config, optionally, and strips the marker: its new pods start without the config, as the
// deletion's marker said. Nothing is owed, but only a stripped marker of an existing config was
// noted, and the deletion restarted the workload a second time. Its pods do run without the
// config: its return reloads it once.
func TestAWorkloadThatStopsWaitingForADeletedConfigInAStripIsNotReloadedForTheDeletionAgain(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"a": "1"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}
	})
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.ReloadOnDelete = true }})
	settle(t)
	upgraded := reloadedForDeletionThenOptional(t, ns)
	wantReloads(t, ns, "web", upgraded, 0)

	createConfigMap(t, ns, "app-config", map[string]string{"a": "1"})
	waitFor(t, 30*time.Second, "web reloaded for the config's return", func() (bool, error) {
		return getDeployment(t, ns, "web").Generation == upgraded+1, nil
	})
	wantReloads(t, ns, "web", upgraded, 1)
}

// Soak seed 1795828528856311681@7: a workload created before a config's deletion is rolled out
// by another actor, afterwards, to read it whole, its marker of another config stripped. Its new
// pods wait for the config; they never ran its content, but a workload without a marker was
// judged to have run it by its creation time, and the deletion reloaded it. The rollout is a
// restart by others whose pods wait for the config (notes.strippedOnly, restarts.Awaiting).
// Positive control: once the config is back, its next change reloads the workload once.
func TestAWorkloadRolledOutToReadAConfigDeletedBeforeIsNotReloadedForTheDeletion(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createConfigMap(t, ns, "other", map[string]string{"v": "x"})
	createDeployment(t, ns, "web", 0, named("configmap", "other"), nil)
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.ReloadOnDelete = true }})
	settle(t)
	const otherVar = "_RELOADER_-configmap-other"
	hashOther := updateConfigMap(t, ns, "other", map[string]string{"v": "y"})
	waitEnv(t, ns, "web", otherVar, hashOther)
	deleteConfigMap(t, ns, "app-config")
	settle(t)

	upgraded := updateDeployment(t, ns, "web", func(d *appsv1.Deployment) {
		d.Annotations = named("configmap", "app-config,other")
		c := &d.Spec.Template.Spec.Containers[0]
		c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == otherVar })
		c.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}
	}).Generation
	wantReloads(t, ns, "web", upgraded, 0)

	createConfigMap(t, ns, "app-config", map[string]string{"v": "1"}) // the waiting pods start with it
	settle(t)
	back := getDeployment(t, ns, "web").Generation
	hashC := updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	waitEnv(t, ns, "web", cmVar, hashC)
	wantReloads(t, ns, "web", back, 1)
}

// As above, with the reloader restarted after the helm upgrade, while another dependent whose
// reloads are held keeps the state's tombstone at the content from before the deletion. The
// next process knows of the restart without the config only by the state's note of it, and
// must not take the workload, created before the deletion and without a marker, to run that
// content. Its return still reloads the workload once.
func TestAWorkloadThatStopsWaitingForADeletedConfigIsNotReloadedForTheDeletionByTheNextProcess(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"a": "1"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}
	})
	createDeployment(t, ns, "held", 0, withAnnotations(named("configmap", "app-config"),
		map[string]string{"deployment.reloader.stakater.com/pause-period": "soon"}), envFromCM("app-config"))
	onDelete := controllerOpts{tweak: func(o *reloader.Options) { o.ReloadOnDelete = true }}
	first := startController(t, ns, onDelete)
	settle(t)
	upgraded := reloadedForDeletionThenOptional(t, ns)
	first.settle()
	first.stop(t)

	startController(t, ns, onDelete)
	settle(t)
	wantReloads(t, ns, "web", upgraded, 0)

	createConfigMap(t, ns, "app-config", map[string]string{"a": "1"})
	waitFor(t, 30*time.Second, "web reloaded for the config's return", func() (bool, error) {
		return getDeployment(t, ns, "web").Generation == upgraded+1, nil
	})
	wantReloads(t, ns, "web", upgraded, 1)
}

// reloadedForDeletionThenOptional deletes app-config, waits for web's reload for it, then
// changes web (as a helm upgrade would) to read app-config only through an optional key ref and
// drop its marker; it returns web's generation after that change.
func reloadedForDeletionThenOptional(t *testing.T, ns string) int64 {
	t.Helper()
	before := getDeployment(t, ns, "web").Generation
	deleteConfigMap(t, ns, "app-config")
	waitFor(t, 30*time.Second, "web reloaded for the deletion", func() (bool, error) {
		_, marked := env(getDeployment(t, ns, "web"), "app", cmVar)
		return marked, nil
	})
	wantReloads(t, ns, "web", before, 1)

	optional := true
	upgraded := updateDeployment(t, ns, "web", func(d *appsv1.Deployment) {
		c := &d.Spec.Template.Spec.Containers[0]
		c.EnvFrom = nil
		c.Env = append(slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == cmVar }), corev1.EnvVar{Name: "A",
			ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: "a", Optional: &optional}}})
	}).Generation
	return upgraded
}
