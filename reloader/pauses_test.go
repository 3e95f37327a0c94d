package reloader_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/reloader/reloader/internal/dev/clocktest"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// A pause period of ours on a Deployment ends at its time though the namespace left
// --namespace-selector during it, while the reloader runs and across its restart. A Deployment
// created there since, paused by its owner with a paused-at annotation written by hand, is left
// paused: outside the selection, only a pause the reloader remembers starting is ended.
func aPauseOfOursEndsOnTimeAfterItsNamespaceLeavesTheSelection(t *testing.T) {
	const pausedAt = "deployment.reloader.stakater.com/paused-at"
	for _, restart := range []bool{false, true} {
		name := "while running"
		if restart {
			name = "across a restart"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			stateNS, ns := cluster.NewNamespace(t), cluster.NewNamespace(t)
			labelNamespace(t, ns, map[string]string{"reloader-test": ns})
			createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
			pause := withAnnotations(named("configmap", "app-config"), map[string]string{"deployment.reloader.stakater.com/pause-period": "5s"})
			createDeployment(t, ns, "web", 0, pause, nil)
			opts := controllerOpts{period: 100 * time.Millisecond, tweak: func(o *reloader.Options) {
				o.Namespace = ""
				o.NamespaceSelector = labels.SelectorFromSet(labels.Set{"reloader-test": ns})
			}}
			r := startController(t, stateNS, opts)
			settle(t)

			hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
			start := time.Now()
			waitEnv(t, ns, "web", cmVar, hash)
			if d := getDeployment(t, ns, "web"); !d.Spec.Paused || d.Annotations[pausedAt] == "" {
				t.Fatalf("web reloaded without its pause: paused %t, paused-at %q", d.Spec.Paused, d.Annotations[pausedAt])
			}
			if restart {
				waitFor(t, 10*time.Second, "the pause remembered in the state", func() (bool, error) {
					return stateEntry(t, stateNS, "pause.Deployment_"+ns+"_web") != "", nil
				})
				r.stop(t)
			}
			labelNamespace(t, ns, nil)
			// Outside the selection (inside it, such a pause is taken for stakater's, and ended).
			createDeploymentFrom(t, ns, "manual", func(d *appsv1.Deployment) {
				d.Annotations = withAnnotations(pause, map[string]string{pausedAt: time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)})
				d.Spec.Paused = true
			})
			if restart {
				startController(t, stateNS, opts)
			}
			waitFor(t, 20*time.Second, "web resumed", func() (bool, error) {
				d := getDeployment(t, ns, "web")
				return !d.Spec.Paused && d.Annotations[pausedAt] == "", nil
			})
			if gap := time.Since(start); gap < 4*time.Second {
				t.Fatalf("resumed %s after the reload, inside the 5 s pause", gap)
			}
			if v, _ := env(getDeployment(t, ns, "web"), "app", cmVar); v != hash {
				t.Errorf("marker %q after the resume, want %q", v, hash)
			}
			settle(t)
			if d := getDeployment(t, ns, "manual"); !d.Spec.Paused || d.Annotations[pausedAt] == "" {
				t.Errorf("a Deployment its owner paused, with a paused-at of nobody's, was resumed outside the selection")
			}
		})
	}
}

// The resume at the end of a pause of ours restarts pods, so outside the selection too a closed
// window holds it until it opens, as it does inside. The pause's own patch restarts nothing, so
// the closed window lets it through. On the injected clock: the pause ends on a Friday, the
// window opens on Saturday.
func aClosedWindowHoldsTheResumeOfAPauseOfOursAfterItsNamespaceLeavesTheSelection(t *testing.T) {
	const pausedAt = "deployment.reloader.stakater.com/paused-at"
	stateNS, ns := cluster.NewNamespace(t), cluster.NewNamespace(t)
	labelNamespace(t, ns, map[string]string{"reloader-test": ns})
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"), map[string]string{
		"deployment.reloader.stakater.com/pause-period": "5s",
		policy.WindowAnnotation:                         "Sat 02:00-04:00 Europe/Berlin",
	}), nil)
	clock := clocktest.New(time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)) // a Friday
	r := startController(t, stateNS, controllerOpts{tweak: func(o *reloader.Options) {
		o.Namespace, o.Clock = "", clock
		o.NamespaceSelector = labels.SelectorFromSet(labels.Set{"reloader-test": ns})
	}})
	settle(t)

	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitEnv(t, ns, "web", cmVar, hash)
	if d := getDeployment(t, ns, "web"); !d.Spec.Paused || d.Annotations[pausedAt] == "" {
		t.Fatalf("web reloaded without its pause: paused %t, paused-at %q", d.Spec.Paused, d.Annotations[pausedAt])
	}
	waitFor(t, 10*time.Second, "the pause remembered in the state", func() (bool, error) {
		return stateEntry(t, stateNS, "pause.Deployment_"+ns+"_web") != "", nil
	})
	settle(t)
	changes := templateChanges(t, ns, "web")
	labelNamespace(t, ns, nil)
	waitFor(t, 10*time.Second, "the namespace out of the selection", func() (bool, error) {
		e, err := r.ctrl.Explainer().Explain(context.Background(), reloader.Query{Kind: "Deployment", Namespace: ns, Name: "web"})
		return err == nil && !e.Watched, err
	})

	clock.Advance(time.Minute) // the pause is over, the window still closed
	settle(t)
	if d := getDeployment(t, ns, "web"); !d.Spec.Paused || d.Annotations[pausedAt] == "" {
		t.Fatalf("resumed outside the selection through a closed window: paused %t, paused-at %q", d.Spec.Paused, d.Annotations[pausedAt])
	}
	clock.Advance(13 * time.Hour) // Saturday 01:00 UTC, 02:00 in Berlin: the window opens
	waitFor(t, 20*time.Second, "web resumed in its window", func() (bool, error) {
		d := getDeployment(t, ns, "web")
		return !d.Spec.Paused && d.Annotations[pausedAt] == "", nil
	})
	if v, _ := env(getDeployment(t, ns, "web"), "app", cmVar); v != hash {
		t.Errorf("marker %q after the resume, want %q", v, hash)
	}
	if n := changes(); n != 0 {
		t.Errorf("the template changed %d times at the resume, want 0: the resume rolls out the template as the pause left it", n)
	}
}

// The resume at the end of a pause of ours restarts pods on the configs as they are, so outside
// the selection too it waits while a config the pods read does not validate, as it does inside,
// with the same Warning; the fix resumes it. On the injected clock: the content turns invalid
// during the pause, the namespace leaves the selection, the pause ends.
func aResumeOfAPauseOfOursOutsideTheSelectionWaitsForTheContentToValidate(t *testing.T) {
	const pausedAt = "deployment.reloader.stakater.com/paused-at"
	stateNS, ns := cluster.NewNamespace(t), cluster.NewNamespace(t)
	labelNamespace(t, ns, map[string]string{"reloader-test": ns})
	validatedConfig(t, ns, `{"v":0}`)
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"),
		map[string]string{"deployment.reloader.stakater.com/pause-period": "5s"}), envFromCM("app-config"))
	clock := clocktest.New(time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC))
	r := startController(t, stateNS, controllerOpts{tweak: func(o *reloader.Options) {
		o.Namespace, o.Clock = "", clock
		o.NamespaceSelector = labels.SelectorFromSet(labels.Set{"reloader-test": ns})
	}})
	settle(t)

	hash := setJSON(t, ns, `{"v":1}`)
	waitEnv(t, ns, "web", cmVar, hash)
	if d := getDeployment(t, ns, "web"); !d.Spec.Paused || d.Annotations[pausedAt] == "" {
		t.Fatalf("web reloaded without its pause: paused %t, paused-at %q", d.Spec.Paused, d.Annotations[pausedAt])
	}
	waitFor(t, 10*time.Second, "the pause remembered in the state", func() (bool, error) {
		return stateEntry(t, stateNS, "pause.Deployment_"+ns+"_web") != "", nil
	})
	setJSON(t, ns, `{"v":`)
	invalidWarning(t, ns, 1)
	settle(t)
	labelNamespace(t, ns, nil)
	waitFor(t, 10*time.Second, "the namespace out of the selection", func() (bool, error) {
		e, err := r.ctrl.Explainer().Explain(context.Background(), reloader.Query{Kind: "Deployment", Namespace: ns, Name: "web"})
		return err == nil && !e.Watched, err
	})

	clock.Advance(time.Minute) // the pause is over
	settle(t)
	if d := getDeployment(t, ns, "web"); !d.Spec.Paused || d.Annotations[pausedAt] == "" {
		t.Fatalf("resumed outside the selection onto content that does not validate: paused %t, paused-at %q", d.Spec.Paused, d.Annotations[pausedAt])
	}
	if n := countEvents(t, ns, "web", "ReloadHeldInvalidConfig"); n != 1 {
		t.Errorf("%d ReloadHeldInvalidConfig warnings on web, want 1", n)
	}
	setJSON(t, ns, `{"v":2}`)
	waitFor(t, 20*time.Second, "web resumed once its content validates", func() (bool, error) {
		d := getDeployment(t, ns, "web")
		return !d.Spec.Paused && d.Annotations[pausedAt] == "", nil
	})
	if v, _ := env(getDeployment(t, ns, "web"), "app", cmVar); v != hash {
		t.Errorf("marker %q after the resume, want %q: nothing reloads outside the selection", v, hash)
	}
}

// A pause of ours ends when the Deployment loses every reload annotation during it, the pause
// period's included (which ends it at once, as a shorter period would): the reloader no longer
// reloads it, but ends what it began. This held before pauses were remembered; it guards the
// sync of a workload that reloads on nothing.
func TestAPauseOfOursEndsWhenTheDeploymentLosesItsReloadAnnotations(t *testing.T) {
	t.Parallel()
	const pausedAt = "deployment.reloader.stakater.com/paused-at"
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"),
		map[string]string{"deployment.reloader.stakater.com/pause-period": "1h"}), nil)
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitEnv(t, ns, "web", cmVar, hash)
	if d := getDeployment(t, ns, "web"); !d.Spec.Paused || d.Annotations[pausedAt] == "" {
		t.Fatalf("web reloaded without its pause: paused %t, paused-at %q", d.Spec.Paused, d.Annotations[pausedAt])
	}
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) {
		delete(d.Annotations, "configmap.reloader.stakater.com/reload")
		delete(d.Annotations, "deployment.reloader.stakater.com/pause-period")
	})
	waitFor(t, 20*time.Second, "web resumed", func() (bool, error) {
		d := getDeployment(t, ns, "web")
		return !d.Spec.Paused && d.Annotations[pausedAt] == "", nil
	})
}
