package reloader_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// A reload into a Deployment its owner paused (kubectl rollout pause) cannot roll out: its
// timeout clock stops, said by one Event, across a restart of the reloader, and nothing is rolled
// back however long the pause lasts. The owner's resume rolls the content out. (A Deployment
// that is not paused is rolled back once past its timeout:
// TestRollbackRestoresThePreviousReplicaSetAndHoldsTheBrokenContent and
// TestADaemonSetRolloutPastItsTimeoutIsTimedOutAndRolledBack.)
func TestAReloadIntoADeploymentItsOwnerPausedIsNotTimedOutAndArrivesWhenResumed(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	followedDeployment(t, ns, map[string]string{"configmap.reloader.stakater.com/reload": "app",
		policy.RollbackAnnotation: "true", policy.TimeoutAnnotation: "6s"})
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Spec.Paused = true })
	first := startController(t, ns, controllerOpts{})
	reloaded := time.Now()
	updateConfigMap(t, ns, "app", fixedConfig)
	waitEnv(t, ns, "web", appVar, hashOfData(fixedConfig))
	waitEvent(t, ns, "RolloutPaused")
	first.stop(t)

	waitFor(t, 30*time.Second, "the timeout past", func() (bool, error) { return time.Since(reloaded) > 9*time.Second, nil })
	// A restart judges every followed rollout at once, long past its timeout.
	startController(t, ns, controllerOpts{})
	settle(t)
	e, _ := newestEntry(t, ns)
	if e.Outcome != policy.OutcomeProgressing || e.RolledBack || e.Stopped.IsZero() {
		t.Fatalf("the paused reload's entry is %+v; want it progressing with its clock stopped", e)
	}
	if v, _ := env(getDeployment(t, ns, "web"), "app", appVar); v != hashOfData(fixedConfig) {
		t.Fatalf("marker %q while paused, want the reload's %q", v, hashOfData(fixedConfig))
	}

	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Spec.Paused = false })
	succeedsFromTheResume(t, ns)
	if n := countEvents(t, ns, "web", "RolloutPaused"); n != 1 {
		t.Errorf("%d RolloutPaused Events, want 1: %q", n, eventMessages(t, ns, "web"))
	}
}

// An Argo Rollout waiting at a canary pause step is not timed out nor rolled back while it waits;
// once promoted, its rollout ends as its status says.
func TestAnArgoRolloutAtAPauseStepIsNotTimedOutNorRolledBack(t *testing.T) {
	t.Parallel()
	ensureCRDs(t)
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	ann := withAnnotations(named("configmap", "app-config"), map[string]string{policy.RollbackAnnotation: "true", policy.TimeoutAnnotation: "3s"})
	createCustom(t, rolloutsGVR, "Rollout", ns, "rollout", ann)
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.ArgoRollouts = true }})
	reloaded := time.Now()
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitFor(t, 10*time.Second, "the Rollout reloaded and followed", func() (bool, error) {
		v, _ := templateEnv(t, rolloutsGVR, ns, "rollout", cmVar)
		h := customHistory(t, rolloutsGVR, ns, "rollout")
		return v == hash && len(h) == 1 && h[0].Outcome == policy.OutcomeProgressing, nil
	})
	atPauseStep := func() map[string]any {
		return map[string]any{"phase": "Paused", "message": "CanaryPauseStep", "controllerPause": true,
			"pauseConditions": []any{map[string]any{"reason": "CanaryPauseStep", "startTime": time.Now().UTC().Format(time.RFC3339)}}}
	}
	setCustomStatus(t, rolloutsGVR, ns, "rollout", atPauseStep())
	waitFor(t, 10*time.Second, "the RolloutPaused Event", func() (bool, error) {
		return countEvents(t, ns, "rollout", "RolloutPaused") > 0, nil
	})

	waitFor(t, 30*time.Second, "the timeout past", func() (bool, error) { return time.Since(reloaded) > 6*time.Second, nil })
	setCustomStatus(t, rolloutsGVR, ns, "rollout", atPauseStep()) // its controller's next status write: judged again
	settle(t)
	v, _ := templateEnv(t, rolloutsGVR, ns, "rollout", cmVar)
	if h := customHistory(t, rolloutsGVR, ns, "rollout"); v != hash || h[0].Outcome != policy.OutcomeProgressing || h[0].RolledBack {
		t.Fatalf("marker %q, newest entry %+v at the pause step past the timeout; want %q, progressing", v, h[0], hash)
	}

	setCustomStatus(t, rolloutsGVR, ns, "rollout", map[string]any{"phase": "Healthy"}) // promoted
	waitFor(t, 10*time.Second, "the promoted Rollout succeeded", func() (bool, error) {
		v, _ := templateEnv(t, rolloutsGVR, ns, "rollout", cmVar)
		h := customHistory(t, rolloutsGVR, ns, "rollout")
		return v == hash && h[0].Outcome == policy.OutcomeSucceeded, nil
	})
	if n := countEvents(t, ns, "rollout", "RolloutPaused"); n != 1 {
		t.Errorf("%d RolloutPaused Events, want 1: %q", n, eventMessages(t, ns, "rollout"))
	}
}
