package reloader

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/jobs"
	"github.com/reloader/reloader/reloader/runs"
	"github.com/reloader/reloader/reloader/workload"
)

// A refused or reverted patch is tried again after refusedRetryMin, doubling up to
// refusedRetryMax: a policy lifted is noticed within seconds, one that stays costs a request
// every half minute.
const (
	refusedRetryMin = 2 * time.Second
	refusedRetryMax = 30 * time.Second
)

// syncWorkload patches, in one patch, every config marker of the workload that differs from
// what the rule wants.
func (c *Controller) syncWorkload(ctx context.Context, kind *workload.Kind, k workload.Key) error {
	if kind.Unfinished != nil && !c.opts.DryRun {
		if err := kind.Unfinished(ctx, k.Namespace, k.Name); err != nil {
			return err
		}
	}
	obj, exists, err := kind.Cached(k.CacheKey())
	if err != nil || !exists {
		return err
	}
	if kind.Resume != nil && !c.opts.DryRun {
		var dropped jobs.DroppedRun
		if err := kind.Resume(ctx, obj, c.caches.allowed(k.Namespace)); errors.As(err, &dropped) {
			dropped.Tell(obj, c.reports, c.log)
		} else if err != nil {
			return err
		}
	}
	w, ok := c.rule.View(kind, obj)
	if !ok {
		if w, ok := c.rule.viewInAnyNamespace(kind, obj); ok && !c.opts.DryRun {
			return c.gates.EndRememberedPause(ctx, w, c.tracker.Resumed, c.validation.HoldsInvalid) // safe/pauses.go
		}
		return nil
	}
	p := c.planner.plan(w)
	c.tracker.LiftStale(p.staleHolds)
	c.records.Needed(w.Key.Namespace, p.unmarked)
	changes := p.changes
	if c.suspensions.Holds(w, len(changes) > 0) {
		return nil // reloader/jobs/cronjobsuspend.go
	}
	if c.opts.DryRun {
		return c.rehearsal.rehearse(w, changes) // dryrun.go: the one place a dry run parts from acting
	}
	if p.validated && c.validation.HoldsInvalid(w) {
		return nil // safe/validate.go
	}
	if len(changes) == 0 {
		return c.gates.Settle(ctx, w, c.tracker.Resumed) // safe/gates.go
	}
	// Safe reloads (safe/gates.go): a closed gate holds the reload until it opens.
	v, held, err := c.gates.Apply(ctx, w, p.gate, changes)
	if held {
		return err
	}
	if err := c.lag.Confirm(ctx, w, changes); err != nil {
		return err // safe/lag.go
	}
	ops, err := w.Target.Ops(w.Meta, w.Tmpl, changes, c.opts.Clock.Now())
	if err != nil || len(ops) == 0 {
		return err
	}
	ops = append(ops, c.gates.Ops(w, p.gate, v)...)
	return c.patch(ctx, w, p.due, ops, v.HoldsRollout())
}

// step is what the sync of a workload does next (plan).
type step int

const (
	stepUpToDate  step = iota // nothing due: a hold is dropped, a pause ended (safe.Gates.Settle)
	stepSuspended             // due, for a CronJob that is suspended (reloader/jobs)
	stepInvalid               // due, or a resume, while the pods read content that does not validate (safe/validate.go)
	stepGated                 // due, and the gate is closed or starts a pause (safe/gates.go)
	stepReload                // due, and the gate lets it through
)

// plan is what the rule and the holds say of a workload now, read only: syncWorkload acts on
// it and Explain tells it, so the two cannot part.
type plan struct {
	due
	next step
	// validated: invalid was looked up (a due reload, or the resume of a pause that ended).
	validated bool
	invalid   []string       // the configs the pods read whose content does not validate
	gate      policy.Gate    // with a reload due: the workload's gate
	verdict   policy.Verdict // with a reload due: the gate's verdict now
}

// due is what the rule asks of a workload: the changes, in the order of its candidates; what
// each existing config it reloads on was judged against (reloader/runs); the holds on it that have
// ended (Tracker.LiftStale); and the configs whose content a hold keeps from it, which its
// restarted pods read all the same (Tracker.WarnHeld).
type due struct {
	changes    []policy.Change
	reads      map[policy.ConfigRef]*runs.Read
	staleHolds []workload.Dependent
	held       []policy.ConfigRef
	unmarked   []policy.ConfigRef // existing configs no marker of the workload decides for
	pairs      []pair             // every config it reloads on, as judged (Explain tells them)
}

// pair is one config a workload reloads on, as dueChanges judged it; rec is nil when the
// config does not exist, and nothing is judged of a kind not watched.
type pair struct {
	ref      policy.ConfigRef
	watched  bool
	rec      *configs.Record
	j        workload.Judgement
	triggers bool
}

func (c *Controller) patch(ctx context.Context, w workload.View, d due, ops []policy.JSONOp, intoPause bool) error {
	changes, reads := d.changes, d.reads
	ops, superseded, err := c.tracker.Ops(ctx, w, changes, ops, intoPause)
	if err != nil {
		return err
	}
	// Read before the patch: its own update event may come back, and let the state advance and
	// forget the change, before the call returns.
	since, known := c.changes.oldest(w.Key.Namespace, changes)
	c.restarts.Begin(w.Key, reads, c.rule.CachedVersion(w.Key.Namespace))
	undo := c.strips.RunNothing(w.Key, runs.UnmarkedNone(w, reads, changes))
	undoAwaits := c.strips.Awaits(w.Key, runs.Waiting(reads))
	out, err := workload.Send(ctx, w, ops, w.Kind.Reload)
	paused := err == nil && w.Kind.Paused != nil && w.Kind.Paused(out)
	for _, k := range c.restarts.Finished(w.Key, workload.WrittenVersion(out, err), paused) {
		c.queue.Add(k)
	}
	if err != nil {
		undoAwaits()
		undo()
	}
	if errors.Is(err, workload.ErrStale) {
		return workload.ErrStale
	}
	what := describe(changes)
	if err != nil {
		return c.outcomes.failed(w, "ReloadFailed", fmt.Sprintf("Reload for %s failed: %v", what, err), err)
	}
	if c.outcomes.reverted(w, out, changes) {
		err := fmt.Errorf("patch of %s %s/%s was accepted, but the template does not hold the new values: an admission webhook or policy may be reverting it", w.Kind.Name, w.Key.Namespace, w.Key.Name)
		return c.outcomes.failed(w, "ReloadReverted", fmt.Sprintf("Reload for %s was reverted by the API server; it is retried at least every %s", what, refusedRetryMax), err)
	}
	c.gates.Release(w)
	c.outcomes.reloaded(w, changes, what, why(d.pairs), since, known)
	c.tracker.Reloaded(w, changes, superseded)
	c.tracker.WarnHeld(w, d.held, what)
	return nil
}

// why says, for each config a reload is for, the fact that decided it (policy.Reason): what a
// user reads to see why a workload restarted, and what Explain would have said.
func why(pairs []pair) string {
	var parts []string
	for _, p := range pairs {
		if p.triggers && p.j.Reload {
			parts = append(parts, fmt.Sprintf("%s/%s: %s", p.ref.Kind, p.ref.Name, p.j.Reason))
		}
	}
	return strings.Join(parts, "; ")
}

// describe names the configs of a reload with their short hashes, in a stable order.
func describe(changes []policy.Change) string {
	parts := make([]string, 0, len(changes))
	for _, ch := range changes {
		v := workload.Short(ch.Value)
		if v == "" {
			v = policy.DeletedMarker
		}
		parts = append(parts, fmt.Sprintf("%s/%s (%s)", ch.Ref.Kind, ch.Ref.Name, v))
	}
	return strings.Join(parts, ", ")
}
