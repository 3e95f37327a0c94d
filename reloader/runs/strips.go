package runs

import (
	"maps"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// Strips remembers, per workload and config, what a workload runs after someone else's template
// change (a helm upgrade or kubectl apply that drops our marker) removed a marker that held the
// config's current content. That change rolled the workload's pods, and they read that content,
// so the workload runs it without carrying a marker. The state cannot tell: it advances only when
// every dependent holds the content, and until then it would restart the workload a second time
// for content it already runs, or, after a revert to what the state holds, not at all.
//
// An entry is only taken for content written before the strip (by resourceVersion). Once the
// config changes again, pods of that rollout may have read either content, so the entry no
// longer vouches for any: the workload is reloaded, as it would be for a stale marker. Each
// entry is also written to the state (a strip entry, package state), so that a restart keeps
// it: without it, a reloader started while the config's entry is behind would restart the
// stripped workload again. After a restart only the content is known, not whether the config
// changed since: the entry vouches for the workload while the config holds that content.
type Strips struct {
	mu    sync.Mutex
	m     map[workload.Key]map[policy.ConfigRef]Stripped
	store *state.KindView
	names entrykeys.Names
}

// Stripped is what a workload stripped of its marker for a config runs: the content value, or
// unknown once the config changed after the strip; keys are the data keys it reads (nil: all).
type Stripped struct {
	value string
	known bool
	keys  []string
	// watched: the workload is due by the state and this process watches it, so the state
	// still decides here; the state's entry says another content, for a later process
	// (watch).
	watched bool
	// restored: the pods a rollback put back run value; they started before it, so a later change
	// of the config is not in them, as it would not be under a marker (RanBefore).
	restored bool
}

// OtherContent is a strip's value for a workload known to run another content than the
// config's, which one unknown: the same value as a tombstone of an unrecorded content.
const OtherContent = policy.UnrecordedContent

// awaited is a strip's value for pods that wait for an absent config, restarted while it did not
// exist: they run whatever content it next has (Awaits). Another well-formed hash no content has.
const awaited = "0000000000000000000000000000000000000001"

// startedWithout is a strip's value for pods restarted while a config they read only through
// optional key refs was absent: they run without it (RunNothing). Against any content it is
// another, as OtherContent is; the config still absent, the deletion is not in them
// (StartedWithout). Another well-formed hash no content has.
const startedWithout = "0000000000000000000000000000000000000002"

// NewStrips returns the strips kept in memory and in store, the state's strip entries, named by
// names.
func NewStrips(store *state.KindView, names entrykeys.Names) *Strips {
	return &Strips{m: map[workload.Key]map[policy.ConfigRef]Stripped{}, store: store, names: names}
}

// JustCreated reports whether a workload is as its creator made it: generation 1 and no status
// written by its controller yet (a CronJob has not run, a Job has not started; an Argo Rollout
// or a DeploymentConfig has no observed generation).
func JustCreated(obj any) bool {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		g, found, _ := unstructured.NestedFieldNoCopy(o.Object, "status", "observedGeneration")
		return o.GetGeneration() == 1 && (!found || g == nil || g == "" || g == "0" || g == int64(0))
	case *appsv1.Deployment:
		return o.Generation == 1 && o.Status.ObservedGeneration == 0
	case *appsv1.StatefulSet:
		return o.Generation == 1 && o.Status.ObservedGeneration == 0
	case *appsv1.DaemonSet:
		return o.Generation == 1 && o.Status.ObservedGeneration == 0
	case *batchv1.CronJob:
		return o.Generation == 1 && o.Status.LastScheduleTime == nil && len(o.Status.Active) == 0
	case *batchv1.Job:
		return o.Generation == 1 && o.Status.StartTime == nil
	}
	return false
}

// Remember notes, in memory and in the state, that workload w runs value of config r without a
// marker (OtherContent: some other content than the config's).
func (s *Strips) Remember(w workload.Key, r policy.ConfigRef, value string, keys []string) {
	s.put(w, r, Stripped{value: value, known: true, keys: keys}, value)
}

// put notes e in memory and stored in the state.
func (s *Strips) put(w workload.Key, r policy.ConfigRef, e Stripped, stored string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[w] == nil {
		s.m[w] = map[policy.ConfigRef]Stripped{}
	}
	s.m[w][r] = e
	s.store.SetValue(s.names.Strip(w, r), stored)
}

// watch notes that workload w, without a marker of r, is due by the state: its pods run the
// content the state holds, unless they restart first, and then they read the config's new
// content. This process sees such a restart (notes.RestartedByOthers, Created) and judges by
// the state meanwhile. A restart no reloader saw, by another actor while the reloader was down
// or had no leader, cannot be told apart later, and a return of the config to the state's
// content would leave those pods on the content in between (soak seed
// 1795727042036173470@4). So the state's entry says another content: a later process reloads
// w once. unwatch ends it when the state no longer says w is due.
func (s *Strips) watch(w workload.Key, r policy.ConfigRef, keys []string) {
	s.mu.Lock()
	_, noted := s.m[w][r]
	s.mu.Unlock()
	if _, left := s.store.Value(s.names.Strip(w, r)); noted || left {
		return // noted already, or left by a process before this one: it stands
	}
	s.put(w, r, Stripped{keys: keys, watched: true}, OtherContent)
}

// WatchDue watches each dependent the state judges due, and stops watching the others (watch).
func (s *Strips) WatchDue(c workload.Key, deps []workload.Dependent) {
	r := policy.ConfigRef{Kind: c.Kind, Name: c.Name}
	for _, d := range deps {
		if d.ByState && d.Reload && restartedByOthers(d.Workload) {
			s.watch(d.Workload, r, d.Keys)
		} else {
			s.unwatch(d.Workload, r)
		}
	}
}

// Unsure notes, at a start, each dependent of config c the state judges due as running another
// content: while no reloader watched, another actor may have restarted it and it may run the
// config's content (watch); without a strip, a return of the config to the state's content
// would leave it there. So too a dependent an earlier process noted waiting for c (Awaits): c
// came back while no reloader watched, and may have changed since the pods took it, or been
// read anew by another actor's restart (checker seed 408@9): which content they run is unknown.
// Unless this process made that restart and saw what its pods took (d.Vouched: a namespace that
// entered the selection again, whose events it saw while out): the note says that content, as
// the process judges by it.
func (s *Strips) Unsure(c workload.Key, deps []workload.Dependent) {
	r := policy.ConfigRef{Kind: c.Kind, Name: c.Name}
	for _, d := range deps {
		v, noted := s.store.Value(s.names.Strip(d.Workload, r))
		switch {
		case noted && v == awaited && d.Vouched:
			s.Remember(d.Workload, r, d.Change.Value, d.Keys)
		case d.ByState && d.Reload && restartedByOthers(d.Workload) || noted && v == awaited:
			s.Remember(d.Workload, r, OtherContent, d.Keys)
		}
	}
}

// restartedByOthers reports whether another actor can restart workload w's pods: not a Job's,
// whose template cannot change, nor a CronJob's, whose template change starts nothing (its
// scheduled runs are new pods, each reading the config as it is then).
func restartedByOthers(w workload.Key) bool {
	return w.Kind != "CronJob" && w.Kind != "Job"
}

// unwatch ends watch for w and r, if it holds.
func (s *Strips) unwatch(w workload.Key, r policy.ConfigRef) {
	s.mu.Lock()
	e, ok := s.m[w][r]
	s.mu.Unlock()
	if ok && e.watched {
		s.forget(w, r)
	}
}

// PutBack notes what the pods a rollback puts back run of configs the undone restart's
// pods took without a marker (restarts.RollbackBegins):
// a strip, which decides only where the restored template carries no marker, before the state,
// which may have recorded the content they took (soak seed 1795681571291661041@4: cm--2
// reappeared during the reload's rollout, its new pods took it, the state recorded it, and the
// pods put back, without a marker of it, were never restarted for it). Noted before the
// rollback is sent: its own update event may be handled first.
func (s *Strips) PutBack(w workload.Key, runs map[policy.ConfigRef]Stripped) (undo func()) {
	undo = s.keep(w, slices.Collect(maps.Keys(runs)))
	for r, run := range runs {
		s.Remember(w, r, run.value, run.keys)
	}
	return undo
}

// RanBefore notes, for a rollback of w about to be sent, what the pods it puts back run of each
// config its restored template carries no marker of, as the reload recorded it
// (policy.Restore.Ran): the state may already say the content the rollback undid. undo puts
// back what was noted before, for a rollback that was not sent.
func (s *Strips) RanBefore(w workload.Key, ran map[string]string) (undo func()) {
	refs := make([]policy.ConfigRef, 0, len(ran))
	for ref := range ran {
		refs = append(refs, policy.RestoreRef(ref))
	}
	undo = s.keep(w, refs)
	for ref, v := range ran {
		s.put(w, policy.RestoreRef(ref), Stripped{value: v, known: true, restored: true}, v)
	}
	return undo
}

// keep returns what puts back, in memory and in the state, what is noted now of w and each
// config of refs. A rollback's notes are undone with it when its patch is not sent: a rollback
// retried on a cache behind the one that landed fails, and must not drop what that one noted.
func (s *Strips) keep(w workload.Key, refs []policy.ConfigRef) (restore func()) {
	s.mu.Lock()
	before := maps.Clone(s.m[w])
	s.mu.Unlock()
	stored := map[policy.ConfigRef]string{}
	for _, r := range refs {
		if sv, ok := s.store.Value(s.names.Strip(w, r)); ok {
			stored[r] = sv
		}
	}
	return func() {
		for _, r := range refs {
			e, noted := before[r]
			sv, kept := stored[r]
			switch {
			case noted && kept:
				s.put(w, r, e, sv)
			case kept:
				s.mu.Lock()
				delete(s.m[w], r)
				s.mu.Unlock()
				s.store.SetValue(s.names.Strip(w, r), sv)
			default:
				s.forget(w, r)
			}
		}
	}
}

// RunNothing notes that the pods of a restart of w run without each config of refs (absent,
// read through optional key refs only, with no marker: unseen.go), keys being what they read of
// it. Noted before the restart is sent, since its own update event may be handled first; undo
// puts back what was noted before, for a restart that was not sent.
func (s *Strips) RunNothing(w workload.Key, refs map[policy.ConfigRef][]string) (undo func()) {
	s.mu.Lock()
	before := maps.Clone(s.m[w])
	s.mu.Unlock()
	for r, keys := range refs {
		s.Remember(w, r, startedWithout, keys)
	}
	return func() {
		for r := range refs {
			switch e, ok := before[r]; {
			case ok && e.watched:
				s.put(w, r, e, OtherContent)
			case ok && e.known:
				s.Remember(w, r, e.value, e.keys)
			default:
				s.forget(w, r)
			}
		}
	}
}

// CaughtUp forgets what w was noted to run of r where that is value, the content the state's
// entry for r now records as rolled out: the entry says the same, and later changes are best
// judged by it (one made while the config is ignored restarts nothing once the ignore is
// lifted, as for a workload created after the entry caught up; CI:
// TestRemovingIgnoreCatchesUpMarkedWorkloadsOnce, created while the entry lagged).
func (s *Strips) CaughtUp(w workload.Key, r policy.ConfigRef, value string) {
	s.mu.Lock()
	e, noted := s.m[w][r]
	s.mu.Unlock()
	if noted && e.known && e.value == value {
		s.forget(w, r)
		return
	}
	if v, ok := s.store.Value(s.names.Strip(w, r)); !noted && ok && v == value {
		s.forget(w, r)
	}
}

// forget drops what was remembered of workload w and config r, in memory and in the state.
func (s *Strips) forget(w workload.Key, r policy.ConfigRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m[w], r)
	if len(s.m[w]) == 0 {
		delete(s.m, w)
	}
	s.store.Delete(s.names.Strip(w, r))
}

// Marker is what workload w, without a marker for r, carries in effect against value: what it
// was remembered to run since a strip, in memory or, after a restart, in the state; NoMarker
// when nothing is, or only a value made under a lost hash key (the state's config entry decides).
func (s *Strips) Marker(w workload.Key, r policy.ConfigRef, value string) policy.MarkerState {
	s.mu.Lock()
	e, ok := s.m[w][r]
	s.mu.Unlock()
	switch {
	case ok && e.watched:
		return policy.NoMarker
	case ok && e.known && e.value == value:
		return policy.Current
	case ok:
		return policy.Stale
	}
	switch v, ok := s.store.Value(s.names.Strip(w, r)); {
	case !ok:
		return policy.NoMarker
	case v == value || v == awaited:
		return policy.Current
	case policy.Content{Value: value}.Match(v) == policy.OtherKey:
		// Made under a lost hash key: like a marker made under one, it says nothing, and the
		// state, whose entries under that key are taken as current, decides (soak seed
		// 1795705990417200457@4: a workload created while the state lagged, restarted for
		// nothing once the key was replaced).
		return policy.NoMarker
	}
	return policy.Stale
}

// Awaits notes, in the state only, that the pods of a restart of w wait for each config of refs,
// absent: they run the content it reappears with, whatever a marker set to its deletion says
// (unseen.go knows it too, in memory). A later process learns the reappearance at a sync of the
// config (Reappeared) and, the config deleted again, reloads w once (RanSince). Noted before the
// restart is sent, since its own update event may be handled first; undo puts back what the
// state held, for a restart that was not sent.
func (s *Strips) Awaits(w workload.Key, refs []policy.ConfigRef) (undo func()) {
	before := map[policy.ConfigRef]string{}
	for _, r := range refs {
		k := s.names.Strip(w, r)
		if v, ok := s.store.Value(k); ok {
			before[r] = v
		}
		s.mu.Lock()
		delete(s.m[w], r)
		s.mu.Unlock()
		s.store.SetValue(k, awaited)
	}
	return func() {
		for _, r := range refs {
			if v, ok := before[r]; ok {
				s.store.SetValue(s.names.Strip(w, r), v)
			} else {
				s.store.Delete(s.names.Strip(w, r))
			}
		}
	}
}

// RolledBack forgets the notes that w's pods wait for an absent config (Awaits), of each config
// of refs: a rollback puts back the pods from before the restart that noted them (soak seed
// 1795754412268271987@5: a deletion's reload rolled back, its note then vouched for the
// config's reappearance, which the restored pods never took). undo puts them back, for a
// rollback that was not sent.
func (s *Strips) RolledBack(w workload.Key, refs []policy.ConfigRef) (undo func()) {
	var forgot []policy.ConfigRef
	for _, r := range refs {
		if v, ok := s.store.Value(s.names.Strip(w, r)); ok && v == awaited {
			s.forget(w, r)
			forgot = append(forgot, r)
		}
	}
	return func() { s.Awaits(w, forgot) }
}

// Reappeared notes, for each dependent of config c (which exists) whose pods waited for it
// (Awaits), that they run its content: they started on it. noted: any did.
func (s *Strips) Reappeared(c workload.Key, deps []workload.Dependent) (noted bool) {
	r := policy.ConfigRef{Kind: c.Kind, Name: c.Name}
	for _, d := range deps {
		if v, ok := s.store.Value(s.names.Strip(d.Workload, r)); ok && v == awaited {
			s.Remember(d.Workload, r, d.Change.Value, d.Keys)
			noted = true
		}
	}
	return noted
}

// RanSince reports whether the state notes that the pods of w run a content of config r: one
// they took without a marker, or since they were restarted while it was absent (Awaits). Its
// deletion is a change to them.
func (s *Strips) RanSince(w workload.Key, r policy.ConfigRef) bool {
	v, ok := s.store.Value(s.names.Strip(w, r))
	return ok && v != awaited && v != startedWithout
}

// StartedWithout reports whether the state notes that the pods of w were restarted while config
// r was absent, and run without it (RunNothing): while it stays absent, its deletion is not a
// change to them.
func (s *Strips) StartedWithout(w workload.Key, r policy.ConfigRef) bool {
	v, ok := s.store.Value(s.names.Strip(w, r))
	return ok && v == startedWithout
}

// ConfigChanged makes what was remembered of config c, in every workload, unknown, except for a
// workload that reads only keys the change left alone (same reports that; nil: none is known
// to be): whichever content its pods read, they read the same values.
func (s *Strips) ConfigChanged(c workload.Key, same func(keys []string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := policy.ConfigRef{Kind: c.Kind, Name: c.Name}
	for w, refs := range s.m {
		e, ok := refs[r]
		if !ok || w.Namespace != c.Namespace || e.watched || e.restored || e.known && e.keys != nil && same != nil && same(e.keys) {
			continue
		}
		refs[r] = Stripped{}
	}
}

// WorkloadGone forgets, in memory, a deleted workload (the root's workloadEntries.lift deletes its state entries).
func (s *Strips) WorkloadGone(w workload.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, w)
}
