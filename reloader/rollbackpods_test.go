package reloader_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/reloader/reloader/policy"
)

// The pods a rollback starts read the configs as they are then (issue 53). Web (2 replicas,
// reloads on app, rollback on) is reloaded onto fixedConfig, then onto brokenConfig, whose pods
// never become Ready: the rollout is rolled back to fixedConfig's marker and brokenConfig held.
// With one pod unavailable at a time, the failed rollout took an old pod down, and the rollback
// starts one on brokenConfig. The revert of app to fixedConfig, the marker's content, restarts
// web once, and no pod that started while brokenConfig was current is left; also when the
// reloader restarted between the rollback and the revert, and knows only the state; and when
// the broken reload was web's first, whose rollback restores a template without a marker.
func TestARevertAfterARollbackRestartsThePodsTheRollbackStartedOnTheBrokenContent(t *testing.T) {
	t.Parallel()
	for _, first := range []bool{false, true} {
		for _, restart := range []bool{false, true} {
			name := map[bool]string{false: "marker", true: "first reload"}[first] + ", " +
				map[bool]string{false: "same process", true: "a reloader started since"}[restart]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ns := cluster.NewNamespace(t)
				broken := brokenRolledBack(t, ns, rollbackCase{first: first, restart: restart})
				if broken.empty(t) {
					t.Fatalf("no pod started while the broken content was current: the setup does not show the bug")
				}
				if msgs := strings.Join(eventMessages(t, ns, "web"), "\n"); !strings.Contains(msgs,
					"1 pod starts while ConfigMap/app holds the content rolled back for; revert or fix it to restart them") {
					t.Errorf("the RolledBack Event does not say that a pod starts on the held content:\n%s", msgs)
				}
				before := len(webHistory(t, ns))
				broken.revert(t)
				waitFor(t, 45*time.Second, "no live pod that started on the broken content", func() (bool, error) {
					return len(broken.live(t)) == 0, nil
				})
				waitOutcome(t, ns, policy.OutcomeSucceeded)
				settle(t)
				if h := webHistory(t, ns); len(h) != before+1 {
					t.Errorf("web was reloaded %d times for the revert, want 1: %+v", len(h)-before, h)
				}
				if _, ok := stateValues(t, ns, "rbread.")["rbread.ConfigMap.Deployment_web_app"]; ok {
					t.Errorf("the rollback's read outlived the reload for the revert")
				}
			})
		}
	}
}

// The positive control: with a surge pod and none unavailable, the failed rollout took no old
// pod down, so the rollback starts none and every pod still runs fixedConfig. The revert to it
// restarts nothing, and the Event says nothing of started pods; another content then reloads
// web (the reloader is live).
func TestARevertAfterARollbackThatStartedNoPodRestartsNothing(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	broken := brokenRolledBack(t, ns, rollbackCase{surge: true})
	if !broken.empty(t) {
		t.Fatalf("pods started while the broken content was current: %v", broken.live(t))
	}
	if msgs := strings.Join(eventMessages(t, ns, "web"), "\n"); strings.Contains(msgs, "start while") {
		t.Errorf("the RolledBack Event says pods start on the held content, though none did:\n%s", msgs)
	}
	gen := getDeployment(t, ns, "web").Generation
	broken.revert(t)
	waitHoldLifted(t, ns, "the revert")
	wantReloads(t, ns, "web", gen, 0)

	updateConfigMap(t, ns, "app", goodConfig)
	waitEnv(t, ns, "web", appVar, hashOfData(goodConfig))
}

// brokenPeriod is when ConfigMap app of a namespace held brokenConfig, to the second: a pod
// created in it read that content. From is the second of the change to it, until the second
// of the revert (zero until then); no pod of web was created in either second before the change
// (secondAfterEveryPod).
type brokenPeriod struct {
	ns          string
	from, until time.Time
	revertTo    map[string]string // what web runs since the rollback
}

// live lists the live pods of web created while app held the broken content. Pods are created
// to the second; the period's ends are taken so that a pod created in the same second as the
// revert is not counted (rollbackStartedPods starts the revert in a later second than any pod).
func (b *brokenPeriod) live(t *testing.T) []string {
	t.Helper()
	pods, err := cluster.Client().CoreV1().Pods(b.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		created := p.CreationTimestamp.Time
		if p.DeletionTimestamp == nil && !created.Before(b.from) && (b.until.IsZero() || created.Before(b.until)) {
			out = append(out, fmt.Sprintf("%s (created %s)", p.Name, created.Format(time.RFC3339)))
		}
	}
	return out
}

// empty reports whether no live pod of web started while app held the broken content.
func (b *brokenPeriod) empty(t *testing.T) bool { return len(b.live(t)) == 0 }

// revert sets app back to the content before the broken one, and ends the period.
func (b *brokenPeriod) revert(t *testing.T) {
	t.Helper()
	now := time.Now()
	updateConfigMap(t, b.ns, "app", b.revertTo)
	b.until = now.Truncate(time.Second)
}

// rollbackCase is how brokenRolledBack sets web up: whether its rollouts surge a pod and take
// none down (else one old pod goes before a new one is available), whether the broken reload is
// its first (else one onto fixedConfig comes before), and whether the reloader is replaced
// after the rollback.
type rollbackCase struct{ surge, first, restart bool }

// brokenRolledBack creates web (followedDeployment) as c says, reloads it onto brokenConfig, which is rolled back, and
// returns once web is back at full availability, in a later second than every pod's creation.
func brokenRolledBack(t *testing.T, ns string, c rollbackCase) *brokenPeriod {
	t.Helper()
	followedDeployment(t, ns, map[string]string{"configmap.reloader.stakater.com/reload": "app", policy.RollbackAnnotation: "true"})
	if c.surge {
		d := updateDeployment(t, ns, "web", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr(intstr.FromInt32(0)), MaxSurge: ptr(intstr.FromInt32(1))}
		})
		waitFor(t, 30*time.Second, "the surge strategy observed", func() (bool, error) {
			return getDeployment(t, ns, "web").Status.ObservedGeneration >= d.Generation, nil
		})
	}
	r := startController(t, ns, controllerOpts{})
	restored := goodConfig
	if !c.first {
		restored = fixedConfig
		updateConfigMap(t, ns, "app", fixedConfig) // web carries a marker of it: the rollback restores it
		waitOutcome(t, ns, policy.OutcomeSucceeded)
		waitFor(t, 30*time.Second, "the fixed rollout's old pods gone", func() (bool, error) {
			d := getDeployment(t, ns, "web")
			return d.Status.Replicas == 2 && d.Status.UpdatedReplicas == 2, nil
		})
	}
	settle(t)
	secondAfterEveryPod(t, ns)

	b := &brokenPeriod{ns: ns, from: time.Now().Truncate(time.Second), revertTo: restored}
	updateConfigMap(t, ns, "app", brokenConfig)
	waitEnv(t, ns, "web", appVar, hashOfData(brokenConfig))
	waitRolledBack(t, ns, "the reload onto the broken content")
	if c.first {
		waitFor(t, 10*time.Second, "the marker removed again", func() (bool, error) {
			_, set := env(getDeployment(t, ns, "web"), "app", appVar)
			return !set, nil
		})
	} else {
		waitEnv(t, ns, "web", appVar, hashOfData(fixedConfig))
	}
	wantHeld(t, ns)
	waitFor(t, 30*time.Second, "web back at full availability on the rollback", func() (bool, error) {
		d := getDeployment(t, ns, "web")
		return d.Status.ObservedGeneration == d.Generation && d.Status.Replicas == 2 && d.Status.UpdatedReplicas == 2 &&
			d.Status.AvailableReplicas == 2, nil
	})
	if c.restart {
		settle(t)
		r.stop(t)
		startController(t, ns, controllerOpts{})
	}
	settle(t)
	secondAfterEveryPod(t, ns)
	return b
}

// secondAfterEveryPod waits until the clock is in a later second than every pod of web was
// created in, so that pods are told apart from what the test does next, to the second.
func secondAfterEveryPod(t *testing.T, ns string) {
	t.Helper()
	waitFor(t, 5*time.Second, "a second after every pod's creation", func() (bool, error) {
		pods, err := cluster.Client().CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		now := time.Now().Truncate(time.Second)
		for _, p := range pods.Items {
			if !p.CreationTimestamp.Time.Before(now) {
				return false, nil
			}
		}
		return true, nil
	})
}

// A rollback read in the state counts only with a rollback of that content in the workload's
// history: a forged entry, for a workload whose history names no rollback, restarts nothing
// when a reloader starts and reads it. Another content then reloads web (the positive control).
func TestAForgedRollbackReadRestartsNothing(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	followedDeployment(t, ns, map[string]string{"configmap.reloader.stakater.com/reload": "app", policy.RollbackAnnotation: "true"})
	r := startController(t, ns, controllerOpts{})
	updateConfigMap(t, ns, "app", fixedConfig)
	waitOutcome(t, ns, policy.OutcomeSucceeded)
	settle(t)
	r.stop(t)
	setStateEntry(t, ns, "rbread.ConfigMap.Deployment_web_app", hashOfData(brokenConfig))
	before := len(webHistory(t, ns))
	startController(t, ns, controllerOpts{})
	settle(t)
	if h := webHistory(t, ns); len(h) != before {
		t.Fatalf("the forged rollback read reloaded web %d times: %+v", len(h)-before, h)
	}

	updateConfigMap(t, ns, "app", goodConfig)
	waitEnv(t, ns, "web", appVar, hashOfData(goodConfig))
}
