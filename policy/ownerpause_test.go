package policy

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const testPausedAt = "deployment.reloader.stakater.com/paused-at"

func TestOwnerPausedTellsAPauseNotOursFromOneThatCanMove(t *testing.T) {
	pausedDeployment := func(annotations map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}, Spec: appsv1.DeploymentSpec{Paused: true}}
	}
	rollout := func(gen int64, paused bool, status map[string]any) any {
		u := custom("Rollout", gen, status)
		u.Object["spec"] = map[string]any{"paused": paused}
		return u
	}
	step := []any{map[string]any{"reason": "CanaryPauseStep", "startTime": "2026-11-23T16:00:00Z"}}
	for _, c := range []struct {
		name   string
		obj    any
		paused bool
		how    string
	}{
		{"a Deployment paused by its owner", pausedDeployment(nil), true, "kubectl rollout pause"},
		{"a Deployment our pause period paused", pausedDeployment(map[string]string{testPausedAt: "2026-11-23T16:00:00Z"}), false, ""},
		{"a Deployment that is not paused", &appsv1.Deployment{}, false, ""},
		{"a Rollout paused by a person", rollout(3, true, map[string]any{"observedGeneration": "2"}), true, "kubectl argo rollouts pause"},
		{"a Rollout at a canary pause step", rollout(3, false, map[string]any{"observedGeneration": "3", "phase": "Paused",
			"controllerPause": true, "pauseConditions": step}), true, "paused at CanaryPauseStep"},
		{"a Rollout whose phase alone says Paused", rollout(3, false, map[string]any{"observedGeneration": int64(3), "phase": "Paused"}), true, "phase Paused"},
		{"a Rollout its controller is unpausing", rollout(3, false, map[string]any{"observedGeneration": "3", "phase": "Paused",
			"controllerPause": true}), false, ""},
		{"a Rollout whose pause its controller has not observed", rollout(4, false, map[string]any{"observedGeneration": "3",
			"phase": "Paused", "pauseConditions": step}), false, ""},
		{"a Rollout progressing", rollout(3, false, map[string]any{"observedGeneration": "3", "phase": "Progressing"}), false, ""},
		{"a Rollout without status", rollout(1, false, nil), false, ""},
		{"a DeploymentConfig", custom("DeploymentConfig", 1, map[string]any{"phase": "Paused"}), false, ""},
		{"a StatefulSet", &appsv1.StatefulSet{}, false, ""},
	} {
		paused, how := OwnerPaused(c.obj, testPausedAt)
		if paused != c.paused || !strings.Contains(how, c.how) {
			t.Errorf("%s: paused %t (%q), want %t (%q)", c.name, paused, how, c.paused, c.how)
		}
	}
}

func TestTheTimeoutClockRunsOnlyWhileTheRolloutCanMove(t *testing.T) {
	const timeout = 10 * time.Second
	reload := time.Date(2026, 11, 25, 22, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return reload.Add(time.Duration(s * float64(time.Second))) }
	for _, c := range []struct {
		name string
		// stop and start are the seconds after the reload at which the owner paused and resumed
		// it, each pause written out and read back as the annotation holds it.
		pauses [][2]float64
		// earliest is the least deadline (seconds after the reload): the timeout of running time.
		earliest float64
	}{
		{"never paused", nil, 10},
		{"paused at once for a minute", [][2]float64{{0, 60}}, 70},
		{"paused within a second, for a fraction", [][2]float64{{2.7, 5.2}}, 12.5},
		{"paused twice", [][2]float64{{1, 4}, {6.5, 30.25}}, 36.75},
		{"a stop after the resume (a clock set back) stops nothing", [][2]float64{{8, 3}}, 10},
	} {
		e := Entry{At: reload, Outcome: OutcomeProgressing, Generation: 2, Configs: []string{"ConfigMap/app@1a2b3c4d"}}
		for _, p := range c.pauses {
			var ok bool
			if e, ok = parseReload(e.StopClock(at(p[0])).String()); !ok || e.Stopped.IsZero() {
				t.Fatalf("%s: a stopped entry does not read back stopped: %+v", c.name, e)
			}
			if again := e.StopClock(at(p[0] + 5)); !again.Stopped.Equal(e.Stopped) {
				t.Errorf("%s: a second stop moved the clock's stop to %s", c.name, again.Stopped)
			}
			if e, ok = parseReload(e.StartClock(at(p[1])).String()); !ok || !e.Stopped.IsZero() {
				t.Fatalf("%s: a restarted entry does not read back running: %+v", c.name, e)
			}
		}
		deadline := e.Deadline(timeout)
		if deadline.Before(at(c.earliest)) {
			t.Errorf("%s: deadline %s, before %s: the clock ran while paused", c.name, deadline.Format(time.TimeOnly), at(c.earliest).Format(time.TimeOnly))
		}
		if deadline.After(at(c.earliest + 3)) {
			t.Errorf("%s: deadline %s, over 3 s past %s", c.name, deadline.Format(time.TimeOnly), at(c.earliest).Format(time.TimeOnly))
		}
	}
}

// Lines written before the clock could stop still read; a stopped line keeps every field.
func TestAStoppedEntryRoundTripsAndOlderLinesStillRead(t *testing.T) {
	stopped := time.Date(2026, 11, 25, 22, 0, 5, 0, time.UTC)
	e := Entry{At: stopped.Add(-5 * time.Second), Outcome: OutcomeProgressing, Generation: 4, Template: "0123456789ab",
		Stopped: stopped, Configs: []string{"ConfigMap/app@1a2b3c4d"}}
	want := "2026-11-25T22:00:00Z progressing g4 t0123456789ab s2026-11-25T22:00:05Z ConfigMap/app@1a2b3c4d"
	if e.String() != want {
		t.Fatalf("line %q, want %q", e.String(), want)
	}
	got := ParseHistory(want + "\n2026-11-25T21:00:00Z succeeded g3 t0123456789ab ConfigMap/app@9e8f7a6b\n" +
		"2026-11-25T20:00:00Z timed-out+rolled-back g2 ConfigMap/app@5e6f7a8b\n" +
		"2026-11-25T19:00:00Z progressing g1 x1 ConfigMap/app@5e6f7a8b\n" +
		"2026-11-25T19:00:00Z progressing g1 snot-a-time ConfigMap/app@5e6f7a8b")
	if len(got) != 3 {
		t.Fatalf("read %d lines, want 3 (a line with an unknown or malformed field is skipped): %+v", len(got), got)
	}
	if !got[0].Stopped.Equal(stopped) || got[0].Template != e.Template || got[0].Generation != 4 {
		t.Errorf("stopped line read as %+v", got[0])
	}
	if !got[1].Stopped.IsZero() || got[1].Template != "0123456789ab" || !got[2].Stopped.IsZero() || !got[2].RolledBack {
		t.Errorf("older lines read as %+v, %+v", got[1], got[2])
	}
}
