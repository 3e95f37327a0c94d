package reloader

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/reloader/reloader/coalesce"
	"github.com/reloader/reloader/policy"
)

// A due reload passes a gate (policy.Gate: maintenance windows, minimum interval, pause period)
// before its patch. A closed gate is a time: the workload is queued again then, on the injected
// clock, and its sync patches with whatever content is current at that moment, so everything
// that arrived meanwhile is coalesced into one reload. The gate's inputs are durable (the clock,
// the workload's annotations), and the state records that the reload is pending, so a restart
// keeps the gate, and neither repeats the Event nor loses the reload.

// deferrals holds one timer per workload whose reload waits.
type deferrals struct {
	clock coalesce.Clock
	fire  func(key)

	mu   sync.Mutex
	held map[key]heldReload
}

type heldReload struct {
	until  time.Time // zero: until the workload's annotations change
	reason string
	timer  coalesce.Timer
}

func newDeferrals(clock coalesce.Clock, fire func(key)) *deferrals {
	return &deferrals{clock: clock, fire: fire, held: map[key]heldReload{}}
}

// hold (re)arms k's timer for until; it reports whether k was not held before.
func (d *deferrals) hold(k key, until time.Time, reason string) (fresh bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h, ok := d.held[k]
	if ok && h.until.Equal(until) && h.reason == reason {
		return false
	}
	if ok && h.timer != nil {
		h.timer.Stop()
	}
	h = heldReload{until: until, reason: reason}
	if !until.IsZero() {
		h.timer = d.clock.AfterFunc(until.Sub(d.clock.Now()), func() { d.fire(k) })
	}
	d.held[k] = h
	return !ok
}

// release forgets k's hold, if any, and reports whether there was one.
func (d *deferrals) release(k key) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	h, ok := d.held[k]
	if ok && h.timer != nil {
		h.timer.Stop()
	}
	delete(d.held, k)
	return ok
}

// byReason counts the holds per reason, every reason present.
func (d *deferrals) byReason() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]int{policy.ReasonWindow: 0, policy.ReasonMinInterval: 0, policy.ReasonPause: 0, policy.ReasonInvalid: 0,
		policy.ReasonInvalidConfig: 0}
	for _, h := range d.held {
		out[h.reason]++
	}
	return out
}

// isHeld reports whether k's reload is held.
func (d *deferrals) isHeld(k key) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.held[k]
	return ok
}

// heldFor returns the workloads of namespace ns held for reason.
func (d *deferrals) heldFor(ns, reason string) []key {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []key
	for k, h := range d.held {
		if k.namespace == ns && h.reason == reason {
			out = append(out, k)
		}
	}
	return out
}

// stopAll stops every timer, at shutdown.
func (d *deferrals) stopAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, h := range d.held {
		if h.timer != nil {
			h.timer.Stop()
		}
	}
}

// wakeHeld syncs the held dependents that no longer need this config's reload (it was
// reverted), so that their hold and pending entry go now rather than when the gate opens.
func (c *Controller) wakeHeld(deps []dependent) {
	for _, d := range deps {
		if !d.reload && c.deferrals.isHeld(d.workload) {
			c.queue.Add(d.workload)
		}
	}
}

// gateOf reads the workload's gate.
func (c *Controller) gateOf(w workloadView) policy.Gate {
	return c.opts.Annotations.GateOf(w.meta.GetAnnotations(), w.tmpl.Annotations, c.opts.Gate)
}

// gated applies the gate to a due reload. It returns true when the reload must not happen now:
// it is then held (or a pause period begins), and err is that of the pause's patch.
func (c *Controller) gated(ctx context.Context, w workloadView, g policy.Gate, changes []policy.Change) (bool, error) {
	now := c.opts.Clock.Now()
	v := g.Decide(now)
	switch v.Action {
	case policy.ReloadNow:
		return false, nil
	case policy.StartPause:
		ops := append([]policy.JSONOp{rvGuard(w)}, c.opts.Annotations.StartPauseOps(w.meta.GetAnnotations(), now)...)
		if err := c.patchMeta(ctx, w, ops, "start the pause period of"); err != nil {
			return true, err
		}
	}
	c.holdReload(w, changes, g, v)
	return true, nil
}

// holdReload records a held reload: its timer, the pending entry in the state, the gauge, and
// an Event the first time it is held (not again after a restart: the state says it was told).
func (c *Controller) holdReload(w workloadView, changes []policy.Change, g policy.Gate, v policy.Verdict) {
	fresh := c.deferrals.hold(w.key, v.Until, v.Reason)
	c.reportDeferred()
	pk := c.names.pending(w.key)
	_, told := c.state.Get(pk)
	if !told {
		c.state.SetPending(pk, c.opts.Clock.Now())
	}
	if v.Reason == policy.ReasonInvalid {
		// Said once per problem, not per change: the message names no content.
		problems := strings.Join(g.Problems, "; ")
		if c.reports.warn(w.obj, string(w.meta.GetUID()), "ReloadScheduleInvalid", "Reloads are held until the schedule is fixed: "+problems) {
			c.log.Warn("reloads held: the reload schedule does not parse", "kind", w.kind.name, "namespace", w.key.namespace,
				"name", w.key.name, "problem", problems)
		}
		return
	}
	// The schedule parses again: should it break later, that is news.
	c.reports.clear(string(w.meta.GetUID()), "ReloadScheduleInvalid")
	what := describe(changes)
	if !fresh || told {
		return
	}
	until := v.Until.UTC().Format(time.RFC3339)
	c.reports.event(w.obj, corev1.EventTypeNormal, "ReloadDeferred",
		fmt.Sprintf("Reload for %s deferred until %s: %s", what, until, v.Explain(g)))
	c.log.Info("reload deferred", "kind", w.kind.name, "namespace", w.key.namespace, "name", w.key.name,
		"configs", what, "until", until, "reason", v.Reason)
}

// releaseHold forgets a workload's held reload: it happened, or is no longer due.
func (c *Controller) releaseHold(w workloadView) {
	c.state.DeleteEntry(c.names.pending(w.key))
	if c.deferrals.release(w.key) {
		c.reports.clear(string(w.meta.GetUID()), "ReloadScheduleInvalid", reasonHeldInvalid)
		c.reportDeferred()
	}
}

// forgetHold drops the hold of a deleted workload.
func (c *Controller) forgetHold(k key) {
	c.state.DeleteEntry(c.names.pending(k))
	if c.deferrals.release(k) {
		c.reportDeferred()
	}
}

// settleGate is the sync of a workload with no reload due: a hold is dropped, and a pause period
// that has run out is ended (one that has not is woken at its end).
func (c *Controller) settleGate(ctx context.Context, w workloadView) error {
	c.releaseHold(w)
	if _, paused := w.meta.GetAnnotations()[c.opts.Annotations.PausedAt]; !paused {
		return nil
	}
	// A paused-at that does not parse ends at once: it holds nothing.
	g := c.gateOf(w)
	if !g.PausedAt.IsZero() && !g.PauseExpired(c.opts.Clock.Now()) {
		c.deferrals.hold(w.key, g.PausedAt.Add(g.PausePeriod), policy.ReasonPause)
		return nil
	}
	ops := append([]policy.JSONOp{rvGuard(w)}, c.opts.Annotations.EndPauseOps(w.meta.GetAnnotations())...)
	return c.patchMeta(ctx, w, append(ops, c.resumeStakater(w)...), "end the pause period of")
}

// resumeStakater unpauses a Deployment that stakater paused (spec.paused with the paused-at
// annotation) when its pause ends, as stakater's own timer would have had it not been lost with
// stakater's process. A Deployment paused by someone else carries no paused-at and is left alone.
func (c *Controller) resumeStakater(w workloadView) []policy.JSONOp {
	d, ok := w.obj.(*appsv1.Deployment)
	if !ok || !d.Spec.Paused || d.Annotations[c.opts.Annotations.PausedAt] == "" {
		return nil
	}
	return []policy.JSONOp{{Op: "replace", Path: "/spec/paused", Value: false}}
}

// gateOps are the metadata ops that go with a reload. An Argo restart's ops have just created
// the annotations map if there was none.
func (c *Controller) gateOps(w workloadView, g policy.Gate) []policy.JSONOp {
	meta := w.meta.GetAnnotations()
	if meta == nil && w.target.RestartAt {
		meta = map[string]string{}
	}
	return append(c.opts.Annotations.GateOps(meta, g, c.opts.Clock.Now()), c.resumeStakater(w)...)
}

// patchMeta applies a patch of the workload's metadata only, through the kind's writeMeta: it
// restarts nothing, and runs or recreates no Job.
func (c *Controller) patchMeta(ctx context.Context, w workloadView, ops []policy.JSONOp, doing string) error {
	body, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encode patch of %s: %w", w.key, err)
	}
	_, err = w.kind.writeMeta(ctx, w.key.namespace, w.key.name, body)
	if isStale(err) {
		return errStale
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", doing, w.key, err)
	}
	return nil
}

// rvGuard makes a patch apply only to the version of the workload it was computed from.
func rvGuard(w workloadView) policy.JSONOp {
	return policy.JSONOp{Op: "test", Path: "/metadata/resourceVersion", Value: w.meta.GetResourceVersion()}
}

func (c *Controller) reportDeferred() {
	for reason, n := range c.deferrals.byReason() {
		c.metrics.Deferred.WithLabelValues(reason).Set(float64(n))
	}
}

// forgetPendingOfGone drops, at start, the pending entries of workloads that no longer exist.
func (c *Controller) forgetPendingOfGone() {
	live := map[string]bool{}
	for _, kind := range c.kinds {
		for _, obj := range kind.informer.GetStore().List() {
			meta, _ := kind.template(obj)
			live[c.names.pending(key{kind.name, meta.GetNamespace(), meta.GetName()})] = true
		}
	}
	for pk := range c.state.PendingKeys() {
		if !live[pk] {
			c.state.DeleteEntry(pk)
		}
	}
}
