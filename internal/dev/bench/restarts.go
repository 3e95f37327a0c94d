package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/state"
)

// restartSettle is how long after /readyz a restarted reloader gets to act on what changed
// while it was down, and to show a spurious or double reload if it makes one.
const restartSettle = 3 * time.Second

// stateName is the reloader's default state ConfigMap; further shards are <name>-1, <name>-2, ...
const stateName = "reloader-state"

// restartsScenario checks restarts and crashes of the reloader on a population.
type restartsScenario struct{ *kit }

func (rsc *restartsScenario) params(e *env) map[string]any {
	return map[string]any{"population": e.pop, "kill_trials": rsc.cfg.killTrials,
		"max_kill_delay": rsc.cfg.maxKillDelay.String(), "settle_after_restart": restartSettle.String(), "coalesce_period": "0s"}
}

// restartRun is the sequence of reloader processes of the restarts scenario.
type restartRun struct {
	k     *kit
	e     *env
	r     *result
	cur   *reloaderProc
	procs []*reloaderProc
	// badExits counts SIGTERMs after which the reloader exited with a non-zero code.
	badExits int
}

// run checks that restarting the reloader restarts nothing that did not change, and that a
// change is applied exactly once when the reloader crashes right after it or misses it while
// stopped.
func (rsc *restartsScenario) run(ctx context.Context, e *env, r *result) error {
	rs := &restartRun{k: rsc.kit, e: e, r: r}
	defer rs.stopAll()
	steps := []func(context.Context) error{rs.start, rs.gracefulNoChange, rs.crashes, rs.changeWhileStopped, rs.terminate}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	r.add(exactly("SIGTERMs with a non-zero exit code", float64(rs.badExits), 0, unitCount))
	return logIssues(r, rs.procs...)
}

// start runs the next reloader process and waits for /readyz.
func (rs *restartRun) start(ctx context.Context) error {
	p, err := rs.k.procs.start(rs.e, fmt.Sprintf("%s-%d", scRestarts, len(rs.procs)+1), 0)
	if err != nil {
		return err
	}
	rs.procs = append(rs.procs, p)
	rs.cur = p
	_, err = rs.k.procs.ready(ctx, p)
	return err
}

func (rs *restartRun) terminate(context.Context) error {
	code, err := rs.cur.terminate()
	if code != 0 {
		rs.badExits++
	}
	return err
}

func (rs *restartRun) stopAll() {
	for _, p := range rs.procs {
		p.stop()
	}
}

// restartAndSettle starts the next process and gives it restartSettle to act.
func (rs *restartRun) restartAndSettle(ctx context.Context) error {
	if err := rs.start(ctx); err != nil {
		return err
	}
	return sleep(ctx, restartSettle)
}

// gracefulNoChange: SIGTERM, restart with nothing changed, no template may change.
func (rs *restartRun) gracefulNoChange(ctx context.Context) error {
	if err := sleep(ctx, restartSettle); err != nil {
		return err
	}
	before, err := rs.e.deployments(ctx)
	if err != nil {
		return err
	}
	if err := rs.terminate(ctx); err != nil {
		return err
	}
	if err := rs.restartAndSettle(ctx); err != nil {
		return err
	}
	after, err := rs.e.deployments(ctx)
	if err != nil {
		return err
	}
	changed := changedGenerations(before, after)
	rs.r.detail("graceful_restart_changed", changed)
	rs.r.add(exactly(fmt.Sprintf("(a) SIGTERM + restart, no change: of %d Deployments changed", len(after)), float64(len(changed)), 0, unitCount))
	return nil
}

// trial is the outcome of one change whose reloader was stopped or killed around it.
type trial struct {
	DelayMs           float64          `json:"kill_delay_ms,omitempty"`
	PatchedBeforeKill bool             `json:"patched_before_kill"`
	StateBeforeKill   bool             `json:"state_written_before_kill"`
	Revisions         int64            `json:"revisions"` // generation delta of the dependent
	Applied           bool             `json:"applied"`   // its env var holds the new hash
	Others            map[string]int64 `json:"others_changed,omitempty"`
}

// crashes: update, kill -9 within maxKillDelay, restart; the dependent must be reloaded once.
func (rs *restartRun) crashes(ctx context.Context) error {
	var trials []trial
	var lost, double, others int
	for range rs.k.cfg.killTrials {
		t, err := rs.crashTrial(ctx)
		if err != nil {
			return err
		}
		trials = append(trials, t)
		lost, double, others = lost+boolInt(!t.Applied || t.Revisions == 0), double+boolInt(t.Revisions > 1), others+len(t.Others)
	}
	rs.r.detail("kill_trials", trials)
	n := len(trials)
	rs.r.add(exactly(fmt.Sprintf("(b) kill -9 x%d: lost reloads", n), float64(lost), 0, unitCount),
		exactly(fmt.Sprintf("(b) kill -9 x%d: double reloads", n), float64(double), 0, unitCount),
		exactly(fmt.Sprintf("(b) kill -9 x%d: other Deployments changed", n), float64(others), 0, unitCount))
	return nil
}

func (rs *restartRun) crashTrial(ctx context.Context) (trial, error) {
	var t trial
	err := rs.aroundChange(ctx, &t, func(rl reload) error {
		delay := rand.N(rs.k.cfg.maxKillDelay + 1)
		if err := sleep(ctx, time.Until(rl.updated.Add(delay))); err != nil {
			return err
		}
		if err := rs.cur.kill(); err != nil {
			return err
		}
		at, seen := rs.e.tracker.seenAt(rl.key())
		t.DelayMs, t.PatchedBeforeKill = ms(delay), seen && at.Before(time.Now())
		written, err := rs.e.stateHolds(ctx, rl)
		t.StateBeforeKill = written
		return err
	})
	rs.k.logf("restarts: kill -9 %.0f ms after the update (patch seen before: %t, state written before: %t): revisions %d, applied %t",
		t.DelayMs, t.PatchedBeforeKill, t.StateBeforeKill, t.Revisions, t.Applied)
	return t, err
}

// changeWhileStopped: SIGTERM, update, start; the change must be caught up once.
func (rs *restartRun) changeWhileStopped(ctx context.Context) error {
	var t trial
	if err := rs.terminate(ctx); err != nil {
		return err
	}
	err := rs.aroundChange(ctx, &t, func(reload) error { return nil })
	if err != nil {
		return err
	}
	rs.r.detail("change_while_stopped", t)
	rs.r.add(exactly("(c) change while stopped: template revisions", float64(t.Revisions), 1, unitCount),
		exactly("(c) change while stopped: applied", float64(boolInt(t.Applied)), 1, unitCount),
		exactly("(c) change while stopped: other Deployments changed", float64(len(t.Others)), 0, unitCount))
	return nil
}

// aroundChange updates one ConfigMap, calls between (which stops or kills the reloader), starts
// a new reloader, waits for the reload and fills t from the Deployments before and after.
func (rs *restartRun) aroundChange(ctx context.Context, t *trial, between func(reload) error) error {
	before, err := rs.e.deployments(ctx)
	if err != nil {
		return err
	}
	rl, err := rs.e.updateConfigMap(ctx, rs.e.pickConfigMap())
	if err != nil {
		return err
	}
	if err := between(rl); err != nil {
		return err
	}
	if err := rs.start(ctx); err != nil {
		return err
	}
	rs.e.tracker.wait(ctx, rl.key(), time.Now().Add(rs.k.cfg.timeout))
	if err := sleep(ctx, restartSettle); err != nil {
		return err
	}
	after, err := rs.e.deployments(ctx)
	if err != nil {
		return err
	}
	changed := changedGenerations(before, after)
	t.Revisions, t.Applied = changed[rl.deployment], after[rl.deployment].env[rl.envVar] == rl.hash
	delete(changed, rl.deployment)
	if len(changed) > 0 {
		t.Others = changed
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// stateHolds reports whether the reloader's state already records the reload's hash: the
// reloader writes it only after patching every dependent.
func (e *env) stateHolds(ctx context.Context, rl reload) (bool, error) {
	key := state.Key("ConfigMap", "", rl.config)
	for i := range state.MaxShards {
		name := stateName
		if i > 0 {
			name = fmt.Sprintf("%s-%d", stateName, i)
		}
		cm, err := e.client.CoreV1().ConfigMaps(e.ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("read state ConfigMap %s: %w", name, err)
		}
		if v, ok := cm.Data[key]; ok {
			return v == rl.hash, nil
		}
	}
	return false, nil
}
