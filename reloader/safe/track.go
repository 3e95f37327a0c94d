package safe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/coalesce"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/internal/report"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// Rollout tracking. A followed reload writes, in the same patch, a "progressing" entry at the head
// of the workload's reloader/history annotation (and, with rollback on, what it replaced in
// reloader/restore). That annotation is the only record: every event of a workload whose newest
// entry is progressing queues its rollout key, whose sync reads the cached status and, once the
// rollout is done, failed or past its timeout, writes the outcome in one patch guarded by the
// history it read. So a restart, or a failover, resumes following from the cache alone, and no
// request is made per followed workload until its outcome is written.

// Tracker is the part that follows a reload's rollout to its end: the history entry a reload's
// patch writes, the outcome once the cached status tells it, the rollback of a failed one and
// the hold on its content (HeldAfterRollback). The sync asks it Ops and Reloaded around a
// reload, and HeldAfterRollback while judging.
type Tracker struct {
	defaults policy.Follow
	clock    coalesce.Clock
	store    *state.KindView // holds and rollback reads
	flusher  Flusher
	names    entrykeys.Names
	reports  *report.Reporter
	log      *slog.Logger
	metrics  *metrics.Metrics
	runs     RunMemory
	queue    DelayingQueue
	// pauses says how a pause period holds a workload's rollout back (Gates.PauseOf); nil: none.
	pauses Pauser
	// pausedAt is the annotation of a pause of ours: a Deployment paused without it is its owner's.
	pausedAt string
	// templatesRead: per followed workload, the last generation whose whole template was read
	// to be still its reload's.
	templatesRead sync.Map // key → templateRead
}

// Flusher writes the state's pending entries (state.Store.Flush).
type Flusher interface {
	Flush(ctx context.Context) error
}

// DelayingQueue queues a key now or after a delay (the controller's work queue).
type DelayingQueue interface {
	Queue
	AddAfter(k workload.Key, d time.Duration)
}

// Pauser says how a pause period holds a workload's rollout back (Gates.PauseOf).
type Pauser interface {
	PauseOf(w workload.View) (held bool, extra time.Duration)
}

// RunMemory is what the pods of a workload run that no marker says, across a rollback
// (reloader/runs): the cache may be behind our rollback, and the pods a rollback puts back run
// what its restore record says they ran. Each note returns its undo, for a rollback not sent.
type RunMemory interface {
	// BehindRollback reports whether a cached version rv of w was written before our last
	// rollback of it.
	BehindRollback(w workload.Key, rv string) bool
	// RanBefore notes what the pods a rollback of w puts back run (policy.Restore.Ran).
	RanBefore(w workload.Key, ran map[string]string) (undo func())
	// RollbackBegins notes a rollback of w about to be sent; uses are the configs w uses.
	RollbackBegins(w workload.Key, uses []policy.ConfigRef) (undo func())
	// RollbackEnded ends it; rv is what it wrote ("" when it failed).
	RollbackEnded(w workload.Key, rv string)
}

// TrackerDeps is what a Tracker is built from. Store is the state's view of the hold and
// rollback-read entries; Pauses may be nil.
type TrackerDeps struct {
	Defaults policy.Follow
	Clock    coalesce.Clock
	Store    *state.KindView
	Flusher  Flusher
	Names    entrykeys.Names
	Reports  *report.Reporter
	Log      *slog.Logger
	Metrics  *metrics.Metrics
	Runs     RunMemory
	Queue    DelayingQueue
	Pauses   Pauser
	PausedAt string
}

// NewTracker builds a Tracker from d.
func NewTracker(d TrackerDeps) *Tracker {
	return &Tracker{defaults: d.Defaults, clock: d.Clock, store: d.Store, flusher: d.Flusher, names: d.Names, reports: d.Reports,
		log: d.Log, metrics: d.Metrics, runs: d.Runs, queue: d.Queue, pauses: d.Pauses, pausedAt: d.PausedAt}
}

// RolloutPrefix starts the kind of a queue key that follows a workload's rollout.
const RolloutPrefix = "rollout:"

// RolloutKey is the queue key that follows w's rollout.
func RolloutKey(w workload.Key) workload.Key {
	return workload.Key{Kind: RolloutPrefix + w.Kind, Namespace: w.Namespace, Name: w.Name}
}

// pause says how a pause period holds w's rollout back, not at all without pauses.
func (t *Tracker) pause(w workload.View) (held bool, extra time.Duration) {
	if t.pauses == nil {
		return false, 0
	}
	return t.pauses.PauseOf(w)
}

// resumed are the ops that restart the clock of w's followed rollout when our resume of a pause
// lets it roll out: its timeout counts from the resume, not from the reload patched in during
// the pause. A resume held by a window, or late after a restart, came seconds after the reload
// plus the pause period (soak seed 1795789687619408493@6 rolled back 1.2 s after the resume).
func (t *Tracker) Resumed(w workload.View) []policy.JSONOp {
	ann := w.Meta.GetAnnotations()
	history := policy.ParseHistory(ann[policy.HistoryAnnotation])
	if len(history) == 0 || history[0].Outcome != policy.OutcomeProgressing {
		return nil
	}
	history[0].At, history[0].Stopped = t.clock.Now(), time.Time{}
	text := policy.FormatHistory(history)
	return policy.MetaAnnotationOps(ann, true, map[string]*string{policy.HistoryAnnotation: &text})
}

// follow reads how the workload's reloads are followed; a malformed annotation is said once.
func (t *Tracker) follow(w workload.View) policy.Follow {
	f, problems := policy.FollowOf(w.Meta.GetAnnotations(), w.Tmpl.Annotations, t.defaults)
	WarnFollow(t.reports, t.log, w.Kind.Name, w.Obj, w.Meta, problems)
	return f
}

// WarnFollow says once that a workload's safe-reload annotations do not parse, as a Warning
// Event and a log line, when they are applied (annotationCheck) or read for a reload; with none,
// it forgets what was said, so that a later problem is news.
func WarnFollow(reports *report.Reporter, log *slog.Logger, kind string, obj any, meta metav1.Object, problems []string) {
	uid := string(meta.GetUID())
	if len(problems) == 0 {
		reports.Clear(uid, "InvalidSafeReloadAnnotation")
	} else if reports.Warn(obj, uid, "InvalidSafeReloadAnnotation", strings.Join(problems, "; ")+"; the default applies") {
		log.Warn("invalid safe-reload annotation", "kind", kind, "namespace", meta.GetNamespace(), "name", meta.GetName(),
			"problems", strings.Join(problems, "; "))
	}
}

// ops adds to a reload's patch its history entry and, with rollback on, what it replaces. It
// returns the entry the reload supersedes, if one was still progressing. paused: the patch leaves
// the reload to a pause of ours, so its clock is stopped from the patch: our resume restarts it
// (Resumed), and so does another actor's resume (startClock), however late either comes.
func (t *Tracker) Ops(ctx context.Context, w workload.View, changes []policy.Change, ops []policy.JSONOp, paused bool) ([]policy.JSONOp, *policy.Entry, error) {
	f := t.follow(w)
	ann := w.Meta.GetAnnotations()
	history := policy.ParseHistory(ann[policy.HistoryAnnotation])
	var superseded *policy.Entry
	if len(history) > 0 && history[0].Outcome == policy.OutcomeProgressing {
		history[0].Outcome, history[0].Stopped = policy.OutcomeSuperseded, time.Time{}
		superseded = &history[0]
	}
	follow := f.Track && workload.Rolls(w.Obj)
	if !follow && superseded == nil {
		return ops, nil, nil
	}
	var guard []policy.JSONOp
	if follow { // else tracking was turned off meanwhile: the rollout still followed is superseded
		tmpl, test, err := t.reloadTemplate(ctx, w, ops)
		if err != nil {
			return nil, nil, err
		}
		// Its time is taken after that read, which an outage may hold for long: the rollout's
		// timeout counts from the patch (soak seed 1795657828041649790 rolled a reload back a
		// second after it landed).
		e := t.progressing(w, changes)
		if paused {
			e = e.StopClock(e.At)
		}
		e.Template, guard = tmpl, test
		history = append([]policy.Entry{e}, history...)
	}
	text := policy.FormatHistory(history)
	set := map[string]*string{policy.HistoryAnnotation: &text, policy.RestoreAnnotation: nil}
	if r, ok := w.Target.RestoreOf(w.Tmpl, changes); ok && follow && f.Rollback {
		if w.Kind.Paused != nil && w.Kind.Paused(w.Obj) {
			if earlier, err := policy.ParseRestore(ann[policy.RestoreAnnotation]); err == nil {
				r = r.Since(earlier) // nothing of the reload before rolled out
			}
		}
		v := r.Encode()
		set[policy.RestoreAnnotation] = &v
	}
	exists := ann != nil || workload.CreatesAnnotations(ops)
	return append(append(ops, guard...), policy.MetaAnnotationOps(ann, exists, set)...), superseded, nil
}

// reloadTemplate returns the hash of the whole pod template a followed reload's ops make, read
// from the API server (the cache strips templates), and a test that the patch applies to the spec
// so read: the entry's generation and template are then exactly the ones the patch makes. A spec
// changed since the cache was read is retried from the fresher cache.
func (t *Tracker) reloadTemplate(ctx context.Context, w workload.View, ops []policy.JSONOp) (string, []policy.JSONOp, error) {
	obj, err := w.Kind.Get(ctx, w.Key.Namespace, w.Key.Name)
	if apierrors.IsNotFound(err) {
		return "", nil, workload.ErrStale
	}
	if err != nil {
		return "", nil, fmt.Errorf("read the pod template of %s: %w", w.Key, err)
	}
	meta, tmpl := w.Kind.Template(obj)
	if tmpl == nil || meta.GetGeneration() != w.Meta.GetGeneration() {
		return "", nil, workload.ErrStale
	}
	after, err := policy.TemplateAfter(tmpl, ops)
	if err != nil {
		return "", nil, errors.Join(workload.ErrStale, fmt.Errorf("reload of %s: %w", w.Key, err)) // the patch would not apply either
	}
	guard := policy.JSONOp{Op: "test", Path: "/metadata/generation", Value: meta.GetGeneration()}
	return policy.TemplateHash(after), []policy.JSONOp{guard}, nil
}

// templateRead is a generation of a followed workload whose template was read to be still the one
// of the reload at generation reload.
type templateRead struct{ reload, read int64 }

// templateReplaced reports whether someone else changed the pod template since the followed
// reload made it: the generation moved on (a reload of ours would have written a newer entry)
// and the template, read whole from the API server, is no longer the entry's. A change outside
// the template (a scale, a pause) moves the generation too and is not a replacement; the
// generation so read is remembered, so that status updates cost no read, only the next spec
// change does. An entry without a template (written by an older version) is replaced by any
// spec change.
func (t *Tracker) templateReplaced(ctx context.Context, w workload.View, entry policy.Entry) (bool, error) {
	gen := w.Meta.GetGeneration()
	if gen <= entry.Generation {
		return false, nil
	}
	if entry.Template == "" {
		return true, nil
	}
	if v, ok := t.templatesRead.Load(w.Key); ok && v.(templateRead) == (templateRead{entry.Generation, gen}) {
		return false, nil
	}
	obj, err := w.Kind.Get(ctx, w.Key.Namespace, w.Key.Name)
	if apierrors.IsNotFound(err) {
		return false, nil // its deletion ends the follow
	}
	if err != nil {
		return false, fmt.Errorf("read the pod template of %s: %w", w.Key, err)
	}
	if _, tmpl := w.Kind.Template(obj); tmpl == nil || policy.TemplateHash(tmpl) != entry.Template {
		return true, nil
	}
	t.templatesRead.Store(w.Key, templateRead{entry.Generation, gen})
	return false, nil
}

// progressing is the history entry of a reload about to be patched: the generation its template
// change makes, and each config with its short hash.
func (t *Tracker) progressing(w workload.View, changes []policy.Change) policy.Entry {
	e := policy.Entry{At: t.clock.Now(), Outcome: policy.OutcomeProgressing, Generation: w.Meta.GetGeneration() + 1}
	for _, ch := range changes {
		e.Configs = append(e.Configs, fmt.Sprintf("%s/%s@%s", ch.Ref.Kind, ch.Ref.Name, shortOrDeleted(ch.Value)))
	}
	return e
}

func shortOrDeleted(v string) string {
	if s := workload.Short(v); s != "" {
		return s
	}
	return policy.DeletedMarker
}

// reloaded completes a reload's patch: a superseded rollout is reported, and the holds of
// the configs reloaded are lifted, and what a rollback's pods read of them forgotten, since the
// workload now runs their newer content.
func (t *Tracker) Reloaded(w workload.View, changes []policy.Change, superseded *policy.Entry) {
	for _, ch := range changes {
		for _, k := range []string{t.names.Hold(w.Key, ch.Ref), t.names.RollbackRead(w.Key, ch.Ref)} {
			if _, ok := t.store.Value(k); ok {
				t.store.Delete(k)
			}
		}
	}
	if superseded != nil {
		t.reportOutcome(w, *superseded, policy.OutcomeSuperseded, "a newer reload replaced it", false, rollbackStart{})
	}
}

// watch queues the rollout key of a workload whose newest reload is being followed.
func (t *Tracker) Watch(k *workload.Kind, obj any) {
	meta, _ := k.Template(obj)
	if meta == nil {
		return
	}
	if _, ok := policy.Pending(meta.GetAnnotations()); ok {
		t.queue.Add(RolloutKey(workload.Key{Kind: k.Name, Namespace: meta.GetNamespace(), Name: meta.GetName()}))
	}
}

// sync judges a followed rollout from the cached status and writes its outcome once it has one;
// until then it comes back at the timeout (k is its rollout key), or earlier with the
// workload's next event.
func (t *Tracker) Sync(ctx context.Context, k workload.Key, w workload.View) error {
	entry, pending := policy.Pending(w.Meta.GetAnnotations())
	if !pending {
		return nil
	}
	if t.runs.BehindRollback(w.Key, w.Meta.GetResourceVersion()) {
		return workload.ErrStale // the cache has not shown our rollback, which ended this rollout
	}
	f := t.follow(w)
	// Only the reload's own template is its rollout: once someone else replaced it, what rolls
	// out, and how it ends, is theirs.
	if replaced, err := t.templateReplaced(ctx, w, entry); err != nil || replaced {
		if err != nil {
			return err
		}
		return t.finish(ctx, w, f, entry, policy.OutcomeSuperseded, fmt.Sprintf(
			"another actor changed the pod template (generation %d) before the rollout ended; nothing is rolled back or held", w.Meta.GetGeneration()))
	}
	progress, why := policy.RolloutProgress(w.Obj)
	if progress == policy.Stuck && policy.DeadlineBefore(w.Obj, entry.At) {
		progress = policy.Rolling // the last rollout's deadline, kept until this one progresses
	}
	switch progress {
	case policy.Done:
		return t.finish(ctx, w, f, entry, policy.OutcomeSucceeded, "")
	case policy.Stuck:
		return t.finish(ctx, w, f, entry, policy.OutcomeFailed, why)
	case policy.Rolling:
		// A reload patched into a workload our pause holds rolls out at the resume, which
		// restarts its clock and queues this key again with its update.
		held, extra := t.pause(w)
		if held {
			return nil
		}
		// A rollout its owner paused cannot move: its clock stops until the owner resumes it.
		if paused, how := policy.OwnerPaused(w.Obj, t.pausedAt); paused {
			return t.stopClock(ctx, w, entry, how)
		}
		if !entry.Stopped.IsZero() {
			return t.startClock(ctx, w, entry)
		}
		now, deadline := t.clock.Now(), entry.Deadline(f.Timeout+extra)
		if now.Before(deadline) {
			t.queue.AddAfter(k, deadline.Sub(now))
			return nil
		}
		return t.finish(ctx, w, f, entry, policy.OutcomeTimedOut, fmt.Sprintf("not done within %s", f.Timeout))
	}
	return nil
}

// stopClock records, once, that the owner paused the rollout: the entry's clock stops, in a
// patch guarded by the history it read, and one Event says so. The owner's resume is an event
// of the workload, which queues this key again.
func (t *Tracker) stopClock(ctx context.Context, w workload.View, entry policy.Entry, how string) error {
	if !entry.Stopped.IsZero() {
		return nil
	}
	if err := t.rewriteNewest(ctx, w, entry.StopClock(t.clock.Now()), "stop the rollout clock of"); err != nil {
		return err
	}
	what := configsOf(entry)
	t.reports.Event(w.Obj, corev1.EventTypeNormal, "RolloutPaused", fmt.Sprintf(
		"Rollout of the reload for %s paused by its owner (%s); timeout clock stopped", what, how))
	t.log.Info("rollout paused by its owner; timeout clock stopped", "kind", w.Kind.Name, "namespace", w.Key.Namespace,
		"name", w.Key.Name, "configs", what, "how", how)
	return nil
}

// startClock runs the clock of a rollout its owner resumed: the timeout counts on from where it
// stopped. The patch's own event queues this key again, to wait for the deadline.
func (t *Tracker) startClock(ctx context.Context, w workload.View, entry policy.Entry) error {
	if err := t.rewriteNewest(ctx, w, entry.StartClock(t.clock.Now()), "restart the rollout clock of"); err != nil {
		return err
	}
	t.log.Info("rollout resumed by its owner; timeout clock running", "kind", w.Kind.Name, "namespace", w.Key.Namespace,
		"name", w.Key.Name, "configs", configsOf(entry))
	return nil
}

// rewriteNewest replaces the newest history entry with e, guarded by the history it read.
func (t *Tracker) rewriteNewest(ctx context.Context, w workload.View, e policy.Entry, doing string) error {
	ann := w.Meta.GetAnnotations()
	history := policy.ParseHistory(ann[policy.HistoryAnnotation])
	history[0] = e
	text := policy.FormatHistory(history)
	ops := append([]policy.JSONOp{policy.HistoryTest(ann[policy.HistoryAnnotation])},
		policy.MetaAnnotationOps(ann, true, map[string]*string{policy.HistoryAnnotation: &text})...)
	return WriteMeta(ctx, w, ops, doing)
}

// finish writes a rollout's outcome into the history, guarded by the history it read. A failed or
// timed-out rollout (not a superseded one) with rollback on is undone in the same patch, after
// its holds are written to the state: a crash in between finds the reload still progressing and
// the hold in place, and does both again.
func (t *Tracker) finish(ctx context.Context, w workload.View, f policy.Follow, entry policy.Entry, outcome, why string) error {
	ann := w.Meta.GetAnnotations()
	history := policy.ParseHistory(ann[policy.HistoryAnnotation])
	history[0].Outcome, history[0].Template, history[0].Stopped = outcome, "", time.Time{}
	// Judged on this generation: a template change of another actor's that the cache has not
	// shown yet makes the patch stale, and the rollout is judged again, theirs (soak seed
	// 1795711302120981478@4 rolled back a reload on top of another actor's change).
	ops := []policy.JSONOp{policy.HistoryTest(ann[policy.HistoryAnnotation]),
		{Op: "test", Path: "/metadata/generation", Value: w.Meta.GetGeneration()}}
	rollback, undoRan, started := false, func() {}, rollbackStart{}
	if (outcome == policy.OutcomeFailed || outcome == policy.OutcomeTimedOut) && f.Rollback {
		restore, starts, undo, ok, err := t.holdAndRestore(ctx, w, entry)
		if err != nil {
			return err
		}
		if ok {
			ops = append(ops, restore.Ops(w.Tmpl)...)
			history[0].RolledBack, rollback, undoRan, started = true, true, undo, starts
		}
	}
	text := policy.FormatHistory(history)
	ops = append(ops, policy.MetaAnnotationOps(ann, true, map[string]*string{policy.HistoryAnnotation: &text, policy.RestoreAnnotation: nil})...)
	undoBegins := func() {}
	if rollback {
		undoBegins = t.runs.RollbackBegins(w.Key, slices.Collect(maps.Keys(w.Uses)))
	}
	out, err := workload.Send(ctx, w, ops, w.Kind.Reload)
	if rollback {
		t.runs.RollbackEnded(w.Key, workload.WrittenVersion(out, err))
	}
	if err != nil {
		// Nothing was put back: undone in the reverse order of the notes.
		undoBegins()
		undoRan()
	}
	if errors.Is(err, workload.ErrStale) {
		// Judged again from a fresher cache. The holds just written stay: the cache may only be
		// behind our own rollback, which wrote the same ones; a rollout found superseded lifts them.
		return workload.ErrStale
	}
	if err != nil {
		if rollback {
			t.metrics.Rollouts.Rollbacks.WithLabelValues(w.Kind.Name, metrics.ResultFailure).Inc()
			t.reports.Warn(w.Obj, string(w.Meta.GetUID()), "RollbackFailed", fmt.Sprintf("Rolling back the reload for %s failed: %v", configsOf(entry), err))
		}
		return fmt.Errorf("record the rollout outcome of %s: %w", w.Key, err)
	}
	t.templatesRead.Delete(w.Key)
	if outcome == policy.OutcomeSuperseded {
		t.liftUnsentHolds(w)
	}
	t.reportOutcome(w, entry, outcome, why, rollback, started)
	return nil
}

// warnHeld says that a reload for what restarted w's pods while holds keep the content of the
// configs held from it: the new pods read that content all the same, the one whose rollout was
// rolled back, and may fail as those did. A Warning Event and a log line for each such reload.
func (t *Tracker) WarnHeld(w workload.View, held []policy.ConfigRef, what string) {
	if len(held) == 0 {
		return
	}
	names := make([]string, len(held))
	for i, r := range held {
		names[i] = workload.RefName(r)
	}
	list := strings.Join(names, ", ")
	msg := fmt.Sprintf("Reload for %s restarted the pods, which read the held content of %s: its reload was rolled back, and the new pods may fail as those did", what, list)
	if t.reports.Warn(w.Obj, string(w.Meta.GetUID()), "HeldContentRead", msg) {
		t.log.Warn("reload restarted pods that read held content", "kind", w.Kind.Name, "namespace", w.Key.Namespace,
			"name", w.Key.Name, "configs", what, "held", list)
	}
}

// liftUnsentHolds lifts the holds a rollback of w's reload wrote but did not send (its patch went
// stale: another actor had changed the template): the rollout was theirs, nothing is held. Only
// a hold of the content that reload applied is its own; a reload lifts the older ones.
func (t *Tracker) liftUnsentHolds(w workload.View) {
	raw, ok := w.Meta.GetAnnotations()[policy.RestoreAnnotation]
	if !ok {
		return
	}
	restore, err := policy.ParseRestore(raw)
	if err != nil {
		return
	}
	for ref, v := range restore.Applied {
		hk := t.names.Hold(w.Key, policy.RestoreRef(ref))
		if held, ok := t.store.Value(hk); ok && held == HeldAs(v) {
			t.store.Delete(hk)
		}
	}
}

// holdAndRestore holds the content the reload applied, durably, notes what the pods put back run
// (RunMemory.RanBefore) and what the pods the rollback starts read (noteRollbackReads), and returns
// what it replaced, for the rollback to send, and what those pods read, with the undo of those
// notes for a rollback that is not sent. A workload without a readable restore record is not
// rolled back.
func (t *Tracker) holdAndRestore(ctx context.Context, w workload.View, entry policy.Entry) (policy.Restore, rollbackStart, func(), bool, error) {
	raw, ok := w.Meta.GetAnnotations()[policy.RestoreAnnotation]
	if !ok {
		return policy.Restore{}, rollbackStart{}, nil, false, nil
	}
	restore, err := policy.ParseRestore(raw)
	if err != nil {
		t.reports.Warn(w.Obj, string(w.Meta.GetUID()), "RollbackFailed", "Cannot roll back: "+err.Error())
		return policy.Restore{}, rollbackStart{}, nil, false, nil
	}
	for ref, v := range restore.Applied {
		t.store.SetValue(t.names.Hold(w.Key, policy.RestoreRef(ref)), HeldAs(v))
	}
	undoRan := t.runs.RanBefore(w.Key, restore.Ran)
	starts := rollbackStarts(w, entry, restore)
	undoReads := t.noteRollbackReads(w.Key, starts)
	undo := func() { undoReads(); undoRan() }
	if err := t.flusher.Flush(ctx); err != nil {
		undo()
		return policy.Restore{}, rollbackStart{}, nil, false, fmt.Errorf("record the hold of %s before rolling it back: %w", w.Key, err)
	}
	return restore, starts, undo, true, nil
}

// rollbackStart is what the pods a rollback starts read: pods of them start on the restored
// template while each config of reads holds the content rolled back for (policy.RollbackStarts).
type rollbackStart struct {
	pods  int32
	reads map[policy.ConfigRef]string
}

// rollbackStarts is what the pods the rollback of entry's reload, restore, starts read: the
// content it applied of each config, which the hold keeps and the marker put back does not say.
// A deletion is not noted: pods that wait for the config start on what it reappears with.
func rollbackStarts(w workload.View, entry policy.Entry, restore policy.Restore) rollbackStart {
	n := policy.RollbackStarts(w.Obj, entry.Generation)
	if n == 0 {
		return rollbackStart{}
	}
	reads := map[policy.ConfigRef]string{}
	for ref, v := range restore.Applied {
		if v != "" {
			reads[policy.RestoreRef(ref)] = v
		}
	}
	return rollbackStart{pods: n, reads: reads}
}

// noteRollbackReads notes in the state what the pods a rollback of w starts read, for a return
// of the config to the restored marker's content to restart them (rollbackRan). undo puts back
// what was noted before, for a rollback that is not sent.
func (t *Tracker) noteRollbackReads(w workload.Key, s rollbackStart) (undo func()) {
	before := map[string]*string{}
	for r, v := range s.reads {
		k := t.names.RollbackRead(w, r)
		if old, ok := t.store.Value(k); ok {
			before[k] = &old
		} else {
			before[k] = nil
		}
		t.store.SetValue(k, v)
	}
	return func() {
		for k, v := range before {
			if v == nil {
				t.store.Delete(k)
			} else {
				t.store.SetValue(k, *v)
			}
		}
	}
}

// rollbackRan reports whether pods of w that a rollback started run another content of r than
// value, the one its marker or the state is judged against: they read the content rolled back
// for, which the marker put back does not say (issue 53: a revert to the marker's content left
// them on the broken one). The entry counts only while w's history names a rollback of that
// content: a forged one needs an edit of the workload too, which can restart it anyway.
func (t *Tracker) RollbackRan(w workload.View, r policy.ConfigRef, value string) bool {
	history := w.Meta.GetAnnotations()[policy.HistoryAnnotation]
	if history == "" {
		return false // most workloads: no entry is looked up
	}
	v, ok := t.store.Value(t.names.RollbackRead(w.Key, r))
	return ok && v != value && policy.NamesRollbackOf(history, fmt.Sprintf("%s/%s@%s", r.Kind, r.Name, shortOrDeleted(v)))
}

// reportOutcome tells the outcome through the metrics, an Event on the workload and the log;
// started, what the pods a rollback starts read.
func (t *Tracker) reportOutcome(w workload.View, entry policy.Entry, outcome, why string, rolledBack bool, started rollbackStart) {
	m := t.metrics.Rollouts
	m.Outcomes.WithLabelValues(w.Kind.Name, outcome).Inc()
	m.Duration.WithLabelValues(w.Kind.Name, outcome).Observe(t.clock.Now().Sub(entry.At).Seconds())
	what := configsOf(entry)
	log := t.log.With("kind", w.Kind.Name, "namespace", w.Key.Namespace, "name", w.Key.Name, "configs", what, "outcome", outcome)
	switch outcome {
	case policy.OutcomeSucceeded:
		t.reports.Event(w.Obj, corev1.EventTypeNormal, "RolloutSucceeded", "Rollout of the reload for "+what+" succeeded")
		log.Info("rollout succeeded")
	case policy.OutcomeSuperseded:
		t.reports.Event(w.Obj, corev1.EventTypeNormal, "RolloutSuperseded", "Rollout of the reload for "+what+" was superseded: "+why)
		log.Info("rollout superseded", "why", why)
	default:
		reason := map[string]string{policy.OutcomeFailed: "RolloutFailed", policy.OutcomeTimedOut: "RolloutTimedOut"}[outcome]
		t.reports.Event(w.Obj, corev1.EventTypeWarning, reason, fmt.Sprintf("Rollout of the reload for %s %s: %s", what, outcome, why))
		log.Warn("rollout "+outcome, "why", why)
	}
	if rolledBack {
		m.Rollbacks.WithLabelValues(w.Kind.Name, metrics.ResultSuccess).Inc()
		t.reports.Clear(string(w.Meta.GetUID()), "RollbackFailed")
		msg := "Restored the pod template from before the reload for " + what + "; this content is held: it reloads this workload again only once it changes"
		if len(started.reads) > 0 {
			msg += fmt.Sprintf("; %s while %s holds the content rolled back for; revert or fix it to restart them",
				podsStart(started.pods), readNames(started.reads))
		}
		t.reports.Event(w.Obj, corev1.EventTypeWarning, "RolledBack", msg)
		log.Warn("rolled back; the config content is held until it changes", "pods_started", started.pods)
	}
}

func configsOf(e policy.Entry) string { return strings.Join(e.Configs, ", ") }

// podsStart says how many pods start: "1 pod starts", "2 pods start".
func podsStart(n int32) string {
	if n == 1 {
		return "1 pod starts"
	}
	return fmt.Sprintf("%d pods start", n)
}

// readNames lists the configs of reads, sorted.
func readNames(reads map[policy.ConfigRef]string) string {
	names := make([]string, 0, len(reads))
	for r := range reads {
		names = append(names, workload.RefName(r))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// HeldAs is what a hold names for a config's content value ("": the config is deleted). A
// rolled-back deletion is held too: unheld, the deletion was due again at once, and each of its
// rollouts failed and was rolled back in turn (soak seed 1795668697359437001@4).
func HeldAs(value string) string {
	if value == "" {
		return deletionHeldAfterRollback
	}
	return value
}

// deletionHeldAfterRollback is a hold's value for a deletion: a well-formed hash that no content has.
const deletionHeldAfterRollback = "ffffffffffffffffffffffffffffffffffffffff"

// forget drops what is remembered in memory of a deleted workload's rollout.
func (t *Tracker) Forget(w workload.Key) { t.templatesRead.Delete(w) }

// held reports whether workload w must not be reloaded for value of config r: that reload was
// rolled back. A hold ends as soon as the config is seen with other content, whether or not
// that content reloads the workload (a revert to what it runs does not, nor does content that
// does not validate), so that the held content applied again is a change like any other: stale
// says so, for the sync to lift it (liftStale).
// A hold made under a lost hash key (written before the loss, or by a rollback of a reload made
// under it) is taken as holding value, as a state entry under another key is (docs/design.md,
// "Secret hash keys"), and as stale too, for the sync to re-record it under the current key;
// a deletion it does not hold. So is one of the whole content (want.Whole) where the workload now reloads on some keys:
// its annotations switched from naming the config to auto, as a marker's does (seed 4936@9);
// and one of the keys' values the pods read (want.Undecided) where it now reloads on the whole
// content: the reverse switch.
func (t *Tracker) HeldAfterRollback(w workload.Key, r policy.ConfigRef, want policy.Content) (held, stale bool) {
	value := HeldAs(want.Value)
	v, ok := t.store.Value(t.names.Hold(w, r))
	// A deletion is no content under any key: a hold under another key does not hold it.
	otherKey := want.Value != "" && (policy.Content{Value: value}).Match(v) == policy.OtherKey
	if ok && (otherKey || want.Whole != "" && v == want.Whole ||
		want.Whole == "" && v != value && slices.Contains(want.Undecided, v)) {
		return true, true
	}
	return ok && v == value, ok && v != value
}

// liftStale lifts the holds that the judged content ended (Judgement.StaleHold), unless one was
// written for that content since; one under a lost hash key that still holds (held) is
// re-recorded under the current key, so that the next content ends it.
func (t *Tracker) LiftStale(deps []workload.Dependent) {
	for _, d := range deps {
		if !d.StaleHold {
			continue
		}
		k := t.names.Hold(d.Workload, d.Change.Ref)
		switch v, ok := t.store.Value(k); {
		case !ok || v == HeldAs(d.Change.Value):
		case d.Held:
			t.store.SetValue(k, HeldAs(d.Change.Value))
		default:
			t.store.Delete(k)
		}
	}
}
