// Package safe keeps reloads from doing harm: a due reload waits for its gate (a deferral,
// gates.go), a pause period of ours ends even outside the selection (pauses.go), content that
// does not validate is not rolled out (validate.go), a followed reload whose rollout fails is
// rolled back and its content held (track.go), and a config cache behind the workload cache is
// read live before a patch (lag.go).
package safe

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/coalesce"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/internal/report"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// A due reload passes a gate (policy.Gate: maintenance windows, minimum interval, pause period)
// before its patch. A closed gate is a time: the workload is queued again then, on the injected
// clock, and its sync patches with whatever content is current at that moment, so everything
// that arrived meanwhile is coalesced into one reload. The gate's inputs are durable (the clock,
// the workload's annotations), and the state records that the reload is pending, so a restart
// keeps the gate, and neither repeats the Event nor loses the reload.

// Gates is the part that holds a due reload its gate does not let through yet (a deferral),
// remembers it in the state (a pending entry), reports it (an Event, the reloader_deferred
// gauge), and ends pause periods. The sync asks it Of, Apply, Ops and Release or Settle; nothing
// else writes a pending entry.
type Gates struct {
	annotations policy.Annotations
	defaults    policy.GateDefaults
	clock       coalesce.Clock
	store       *state.KindView
	names       entrykeys.Names
	reports     *report.Reporter
	log         *slog.Logger
	gauge       *prometheus.GaugeVec // reloader_deferred, by reason
	queue       Queue
	deferrals   *Deferrals
}

// Queue is the work queue a part hands workloads to, to be synced.
type Queue interface {
	Add(k workload.Key)
}

// GatesDeps is what Gates is built from. Store is the state's view of the pending and pause
// entries (PendingEntries, PauseEntries); Gauge is reloader_deferred; Queue syncs the held
// dependents a reverted config no longer needs reloaded; Deferrals holds the timers.
type GatesDeps struct {
	Annotations policy.Annotations
	Defaults    policy.GateDefaults
	Clock       coalesce.Clock
	Store       *state.KindView
	Names       entrykeys.Names
	Reports     *report.Reporter
	Log         *slog.Logger
	Gauge       *prometheus.GaugeVec
	Queue       Queue
	Deferrals   *Deferrals
}

// NewGates builds the gates part.
func NewGates(d GatesDeps) *Gates {
	return &Gates{annotations: d.Annotations, defaults: d.Defaults, clock: d.Clock, store: d.Store, names: d.Names,
		reports: d.Reports, log: d.Log, gauge: d.Gauge, queue: d.Queue, deferrals: d.Deferrals}
}

// Deferrals are the reloads the gates hold, one timer each.
func (g *Gates) Deferrals() *Deferrals { return g.deferrals }

// Of reads the workload's gate: its annotations, and whether its kind pauses rollouts.
func (g *Gates) Of(w workload.View) policy.Gate {
	gate := g.annotations.GateOf(w.Meta.GetAnnotations(), w.Tmpl.Annotations, g.defaults)
	if w.Kind.Paused != nil {
		gate.Pausable, gate.Paused = true, w.Kind.Paused(w.Obj)
	}
	return gate
}

// PauseOf says how a pause period of ours holds back the rollout of a reload patched into w:
// held while w is paused and carries our paused-at (its rollout starts at our resume, which
// restarts its clock: Tracker.Resumed); extra is the period, added to the timeout of a rollout
// that someone else resumed before the period ended.
func (g *Gates) PauseOf(w workload.View) (held bool, extra time.Duration) {
	gate := g.Of(w)
	if !gate.Pausable {
		return false, 0
	}
	if _, ours := w.Meta.GetAnnotations()[g.annotations.PausedAt]; !ours {
		return false, 0
	}
	return gate.Paused, gate.PausePeriod
}

// Apply applies the gate to a due reload. It returns held true when the reload must not happen
// now: it is then held (or a pause period begins), and err is that of the pause's patch. v says
// what goes with a reload that happens (ops).
func (g *Gates) Apply(ctx context.Context, w workload.View, gate policy.Gate, changes []policy.Change) (v policy.Verdict, held bool, err error) {
	now := g.clock.Now()
	v = gate.Decide(now)
	switch v.Action {
	case policy.ReloadNow, policy.PauseAndReload, policy.ReloadPaused:
		return v, false, nil
	case policy.StartPause:
		ops := append([]policy.JSONOp{rvGuard(w)}, g.annotations.StartPauseOps(w.Meta.GetAnnotations(), now)...)
		if err := WriteMeta(ctx, w, ops, "start the pause period of"); err != nil {
			return v, true, err
		}
	}
	g.hold(w, changes, gate, v)
	return v, true, nil
}

// hold records a held reload: its timer, the pending entry in the state, the gauge, and an
// Event naming the configs and the time it waits for, said again only when those change (a
// missed window, another config due), not after a restart: the pending entry keeps a digest of
// what was said.
func (g *Gates) hold(w workload.View, changes []policy.Change, gate policy.Gate, v policy.Verdict) {
	g.deferrals.Hold(w.Key, v.Until, v.Reason)
	g.report()
	pk := g.names.Pending(w.Key)
	stored, pending := g.store.Value(pk)
	since, said := decodePending(stored)
	if !pending {
		since = g.clock.Now()
	}
	if v.Reason == policy.ReasonInvalid {
		if !pending {
			// Its own digest: once the schedule parses, the deferral is news.
			g.store.SetValue(pk, encodePending(since, messageDigest("the schedule does not parse")))
		}
		// Said once per problem, not per change: the message names no content.
		WarnSchedule(g.reports, g.log, w.Kind.Name, w.Obj, w.Meta, gate.Problems)
		return
	}
	// The schedule parses again: should it break later, that is news.
	g.reports.Clear(string(w.Meta.GetUID()), "ReloadScheduleInvalid")
	names := make([]string, len(changes))
	for i, ch := range changes {
		names[i] = workload.RefName(ch.Ref)
	}
	what := strings.Join(names, ", ")
	until := v.Until.UTC().Format(time.RFC3339)
	msg := fmt.Sprintf("Reload for %s deferred until %s: %s", what, until, v.Explain(gate))
	digest := messageDigest(msg)
	// An entry written before digests were kept was said: a restart after an upgrade is quiet.
	if pending && (said == digest || said == "") {
		return
	}
	g.store.SetValue(pk, encodePending(since, digest))
	g.reports.Event(w.Obj, corev1.EventTypeNormal, "ReloadDeferred", msg)
	g.log.Info("reload deferred", "kind", w.Kind.Name, "namespace", w.Key.Namespace, "name", w.Key.Name,
		"configs", what, "until", until, "reason", v.Reason)
}

// messageDigest is a short digest of an Event's message, for the state to say it was sent.
func messageDigest(msg string) string {
	sum := sha1.Sum([]byte(msg))
	return hex.EncodeToString(sum[:4])
}

// WarnSchedule says once that a workload's reload schedule does not parse, as a Warning Event
// and a log line: when the annotation is applied (the root's annotationCheck) or when a reload is held for
// it, whichever comes first. The message names no content.
func WarnSchedule(reports *report.Reporter, log *slog.Logger, kind string, obj any, meta metav1.Object, problems []string) {
	joined := strings.Join(problems, "; ")
	if reports.Warn(obj, string(meta.GetUID()), "ReloadScheduleInvalid", "Reloads are held until the schedule is fixed: "+joined) {
		log.Warn("reloads held: the reload schedule does not parse", "kind", kind, "namespace", meta.GetNamespace(),
			"name", meta.GetName(), "problem", joined)
	}
}

// holdInvalid holds w's reload until the content it would load validates (validate.go).
func (g *Gates) holdInvalid(w workload.View) {
	g.deferrals.Hold(w.Key, time.Time{}, policy.ReasonInvalidConfig)
	g.report()
}

// Release forgets a workload's held reload: it happened, or is no longer due.
func (g *Gates) Release(w workload.View) {
	g.store.Delete(g.names.Pending(w.Key))
	if g.deferrals.release(w.Key) {
		g.reports.Clear(string(w.Meta.GetUID()), "ReloadScheduleInvalid", workload.ReasonHeldInvalid)
		g.report()
	}
}

// Forget drops the hold and the remembered pause of a deleted workload.
func (g *Gates) Forget(k workload.Key) {
	g.store.Delete(g.names.Pending(k))
	g.forgetPause(k)
	if g.deferrals.release(k) {
		g.report()
	}
}

// Settle is the sync of a workload with no reload due: a hold is dropped, and a pause period
// that has run out is ended (one that has not is woken at its end). A resume's patch carries
// rolloutStarts' ops: the rollout it lets go starts now.
func (g *Gates) Settle(ctx context.Context, w workload.View, rolloutStarts func(workload.View) []policy.JSONOp) error {
	g.Release(w)
	if _, paused := w.Meta.GetAnnotations()[g.annotations.PausedAt]; !paused {
		g.forgetPause(w.Key)
		return nil
	}
	// A paused-at that does not parse ends at once: it holds nothing.
	gate, now := g.Of(w), g.clock.Now()
	if !gate.PausedAt.IsZero() && !gate.PauseExpired(now) {
		end := gate.PausedAt.Add(gate.PausePeriod)
		g.deferrals.Hold(w.Key, end, policy.ReasonPause)
		if len(g.resumeStakater(w)) > 0 {
			g.rememberPause(w, gate.PausedAt, end) // pauses.go: ended even outside the selection
		}
		return nil
	}
	resume := g.resumeStakater(w)
	if len(resume) == 0 {
		ops := append([]policy.JSONOp{rvGuard(w)}, g.annotations.EndPauseOps(w.Meta.GetAnnotations())...)
		return g.endPause(ctx, w, ops)
	}
	// The resume rolls out what the pause held: a restart, which the reload's time records.
	if v := gate.DecideResume(now); v.Action == policy.Hold {
		g.deferrals.Hold(w.Key, v.Until, v.Reason)
		g.report()
		return nil
	}
	ops := append([]policy.JSONOp{rvGuard(w)}, g.annotations.GateOps(w.Meta.GetAnnotations(), gate, now)...)
	ops = append(ops, rolloutStarts(w)...)
	return g.endPause(ctx, w, append(ops, resume...))
}

// endPause sends the ops that end w's pause period, and forgets the pause once they applied.
func (g *Gates) endPause(ctx context.Context, w workload.View, ops []policy.JSONOp) error {
	if err := WriteMeta(ctx, w, ops, "end the pause period of"); err != nil {
		return err
	}
	g.forgetPause(w.Key)
	return nil
}

// Resumes reports whether w's sync with nothing due resumes its rollouts: a pause of ours on it
// is over, and the resume restarts its pods on their configs as they are.
func (g *Gates) Resumes(w workload.View) bool {
	gate := g.Of(w)
	return !gate.PausedAt.IsZero() && gate.PauseExpired(g.clock.Now()) && len(g.resumeStakater(w)) > 0
}

// resumeStakater unpauses a Deployment that stakater paused (spec.paused with the paused-at
// annotation) when its pause ends, as stakater's own timer would have had it not been lost with
// stakater's process. A Deployment paused by someone else carries no paused-at and is left alone.
func (g *Gates) resumeStakater(w workload.View) []policy.JSONOp {
	d, ok := w.Obj.(*appsv1.Deployment)
	if !ok || !d.Spec.Paused || d.Annotations[g.annotations.PausedAt] == "" {
		return nil
	}
	return []policy.JSONOp{{Op: "replace", Path: "/spec/paused", Value: false}}
}

// Ops are the ops that go with a reload the gate let through as v: a pause's start, or the
// reload's time and the end of a pause. An Argo restart's ops have just created the annotations
// map if there was none.
func (g *Gates) Ops(w workload.View, gate policy.Gate, v policy.Verdict) []policy.JSONOp {
	meta := w.Meta.GetAnnotations()
	if meta == nil && w.Target.RestartAt {
		meta = map[string]string{}
	}
	switch v.Action {
	case policy.PauseAndReload:
		now := g.clock.Now()
		g.rememberPause(w, now, now.Add(gate.PausePeriod)) // before the patch: a pause of ours is never unknown
		return g.annotations.PauseOps(meta, now)
	case policy.ReloadPaused:
		return nil // restarts nothing: the resume records the reload's time
	}
	return append(g.annotations.GateOps(meta, gate, g.clock.Now()), g.resumeStakater(w)...)
}

// Wake syncs the held dependents that no longer need this config's reload (it was
// reverted), so that their hold and pending entry go now rather than when the gate opens.
func (g *Gates) Wake(deps []workload.Dependent) {
	for _, d := range deps {
		if !d.Reload && g.deferrals.isHeld(d.Workload) {
			g.queue.Add(d.Workload)
		}
	}
}

// report sets the reloader_deferred gauge.
func (g *Gates) report() {
	for reason, n := range g.deferrals.byReason() {
		g.gauge.WithLabelValues(reason).Set(float64(n))
	}
}

// ForgetGone drops, at start, the pending entries and remembered pauses of workloads that no
// longer exist: those not in existing.
func (g *Gates) ForgetGone(existing iter.Seq[workload.Key]) {
	live := map[string]bool{}
	for k := range existing {
		live[g.names.Pending(k)], live[g.names.Pause(k)] = true, true
	}
	for _, pk := range g.store.Keys() {
		if !live[pk] {
			g.store.Delete(pk)
		}
	}
}

// WriteMeta applies a patch of the workload's metadata only, through the kind's writeMeta: it
// restarts nothing, and runs or recreates no Job.
func WriteMeta(ctx context.Context, w workload.View, ops []policy.JSONOp, doing string) error {
	_, err := workload.Send(ctx, w, ops, w.Kind.WriteMeta)
	if errors.Is(err, workload.ErrStale) {
		return workload.ErrStale
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", doing, w.Key, err)
	}
	return nil
}

// rvGuard makes a patch apply only to the version of the workload it was computed from.
func rvGuard(w workload.View) policy.JSONOp {
	return policy.JSONOp{Op: "test", Path: "/metadata/resourceVersion", Value: w.Meta.GetResourceVersion()}
}

// Deferrals holds one timer per workload whose reload waits (a deferral): for its gate to open,
// or for the content its pods read to validate.
type Deferrals struct {
	clock coalesce.Clock
	fire  Queue

	mu   sync.Mutex
	held map[workload.Key]deferral
}

// deferral is one held reload: the gate wait.
type deferral struct {
	until  time.Time // zero: until the workload's annotations change
	reason string
	timer  coalesce.Timer
}

// NewDeferrals holds reloads on clock, and hands each to fire when its time comes.
func NewDeferrals(clock coalesce.Clock, fire Queue) *Deferrals {
	return &Deferrals{clock: clock, fire: fire, held: map[workload.Key]deferral{}}
}

// Hold (re)arms k's timer for until; it reports whether k was not held before.
func (d *Deferrals) Hold(k workload.Key, until time.Time, reason string) (fresh bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h, ok := d.held[k]
	if ok && h.until.Equal(until) && h.reason == reason {
		return false
	}
	if ok && h.timer != nil {
		h.timer.Stop()
	}
	h = deferral{until: until, reason: reason}
	if !until.IsZero() {
		h.timer = d.clock.AfterFunc(until.Sub(d.clock.Now()), func() { d.fire.Add(k) })
	}
	d.held[k] = h
	return !ok
}

// Release forgets k's hold, if any, and reports whether there was one.
func (d *Deferrals) release(k workload.Key) bool {
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
func (d *Deferrals) byReason() map[string]int {
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
func (d *Deferrals) isHeld(k workload.Key) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.held[k]
	return ok
}

// heldFor returns the workloads of namespace ns held for reason.
func (d *Deferrals) heldFor(ns, reason string) []workload.Key {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []workload.Key
	for k, h := range d.held {
		if k.Namespace == ns && h.reason == reason {
			out = append(out, k)
		}
	}
	return out
}

// StopAll stops every timer, at shutdown.
func (d *Deferrals) StopAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, h := range d.held {
		if h.timer != nil {
			h.timer.Stop()
		}
	}
}

// A pending entry in the state records a workload whose reload is due but held (a window, a
// minimum interval, a pause period), so that a restart does not announce it again:
// "pending@<unix seconds it became due>[#<digest of the ReloadDeferred Event said>]". Versions
// before the digest wrote none.
const pendingValuePrefix = "pending@"

// pendingLen is the longest value of a pending entry: the last second of the year 9999 and a
// digest.
const pendingLen = len(pendingValuePrefix) + len("253402300799") + len("#01234567")

func encodePending(since time.Time, digest string) string {
	v := pendingValuePrefix + strconv.FormatInt(min(max(since.Unix(), 0), 253402300799), 10)
	if digest != "" {
		v += "#" + digest
	}
	return v
}

// decodePending reads a pending entry's time and digest ("" when it has none, or is not one).
func decodePending(v string) (since time.Time, digest string) {
	v, digest, _ = strings.Cut(v, "#")
	secs, _ := strings.CutPrefix(v, pendingValuePrefix)
	n, _ := strconv.ParseInt(secs, 10, 64)
	return time.Unix(n, 0), digest
}

// PendingEntries is the kind of state entry of a held reload (entrykeys.Names.Pending).
func PendingEntries() state.EntryKind {
	return state.EntryKind{
		Prefix: entrykeys.PendingPrefix,
		MaxLen: func(string) int { return pendingLen },
		Valid: func(_, v string) error {
			v, digest, hasDigest := strings.Cut(v, "#")
			secs, ok := strings.CutPrefix(v, pendingValuePrefix)
			n, err := strconv.ParseInt(secs, 10, 64)
			if !ok || err != nil || n < 0 || n > 253402300799 || strconv.FormatInt(n, 10) != secs {
				return errors.New("a pending entry holds pending@<unix seconds>[#<digest>]")
			}
			if _, err := hex.DecodeString(digest); hasDigest && (err != nil || len(digest) != 8) {
				return errors.New("a pending entry's digest is 8 hex digits")
			}
			return nil
		},
	}
}
