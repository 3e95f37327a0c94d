package reloader

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/runs"
	"github.com/reloader/reloader/reloader/safe"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// rule applies policy's rule to cached workloads and configs. It gathers, read only, the facts
// the rule needs (the caches, the state, what the parts remember of each workload) and asks
// policy for the decision.
type rule struct {
	annotations                    policy.Annotations
	strategy                       string
	reloadOnCreate, reloadOnDelete bool
	caches                         *caches
	records                        *configs.Records
	store                          *state.Configs
	names                          entrykeys.Names
	tracker                        *safe.Tracker  // holds: reloads rolled back
	restarts                       *runs.Restarts // what a restart's pods may read unseen (reloader/runs)
	strips                         *runs.Strips   // what a workload runs without a marker
	// stakater: stakater's variables are compared, until the first comparison is over
	// (stakater.go); a config entry the state loses later is not compared again.
	stakater *atomic.Bool
	// rehearsed, with --dry-run, is a workload as the patches reported would have left it.
	rehearsed func(kind *workload.Kind, obj any) any
	// unrecorded tells a config without an entry written while no reloader recorded it.
	unrecorded *unrecorded
}

// View is the workload read once, if its namespace is in the selection.
func (ru *rule) View(kind *workload.Kind, obj any) (workload.View, bool) {
	w, ok := ru.viewInAnyNamespace(kind, obj)
	if !ok || !ru.caches.allowed(w.Key.Namespace) {
		return workload.View{}, false
	}
	return w, true
}

// viewInAnyNamespace is the workload read once, whether its namespace is in the selection or
// not: what its pods read does not depend on the selection.
func (ru *rule) viewInAnyNamespace(kind *workload.Kind, obj any) (workload.View, bool) {
	if ru.rehearsed != nil {
		obj = ru.rehearsed(kind, obj) // dryrun.go: as the dry run's reported patches left it
	}
	w, ok := ru.caches.view(kind, obj)
	if !ok {
		return workload.View{}, false
	}
	w.Target = policy.Target{
		Strategy:  ru.strategy,
		RestartAt: kind.CanRestartAt && ru.annotations.RestartsAt(w.Meta.GetAnnotations()),
	}
	return w, true
}

// judge applies the rule to workload w and config r (rec nil: it does not exist). triggers is
// false when the workload does not reload on r at all, nor on content that does not validate.
func (ru *rule) judge(w workload.View, r policy.ConfigRef, rec *configs.Record) (j workload.Judgement, triggers bool) {
	pj := policy.Judge(ru.pairFacts(w, r, rec))
	return workload.JudgementOf(pj), pj.Triggers
}

// pairFacts gathers, read only, what policy.Judge weighs of workload w and config r: what the
// workload carries, what the config is, and what the state and the reloader's parts remember.
func (ru *rule) pairFacts(w workload.View, r policy.ConfigRef, rec *configs.Record) policy.PairFacts {
	ann := w.Meta.GetAnnotations()
	want, keys, triggers := ru.wanted(w, r, rec)
	runs, read, known := ru.restarts.Runs(w.Key, r)
	held, staleHold := ru.tracker.HeldAfterRollback(w.Key, r, want)
	stakaterValue, stakaterSet := policy.EnvValue(w.Tmpl, policy.StakaterVar(r))
	e, inState := ru.store.Get(ru.names.Config(workload.ConfigKey(r, w.Key.Namespace)))
	f := policy.PairFacts{
		Ref:                 r,
		Triggers:            triggers,
		Exists:              rec != nil,
		Want:                want,
		Keys:                keys,
		Marker:              w.Target.MarkerOf(ann, w.Tmpl, r, want),
		MarkedUnderOtherKey: policy.MarkedUnderOtherKey(ann, w.Tmpl, r, want),
		Held:                held,
		StaleHold:           staleHold,
		Unseen:              ru.restarts.Unseen(w.Key, r),
		RollbackRan:         ru.tracker.RollbackRan(w, r, safe.HeldAs(want.Value)),
		Runs:                policy.RestartRuns{Value: runs, Keys: read, Known: known},
		Awaiting:            ru.restarts.Awaiting(w.Key, r),
		Waits:               policy.Waits(&w.Tmpl.Spec, r),
		RanSince:            ru.strips.RanSince(w.Key, r),
		StartedWithout:      ru.strips.StartedWithout(w.Key, r),
		State:               policy.Recorded{Known: inState, Deleted: e.Deleted, Hash: e.Hash, Since: e.Since},
		Stakater:            policy.StakaterFacts{Comparing: ru.stakater.Load(), Set: stakaterSet, Value: stakaterValue},
		ReloadOnCreate:      ru.reloadOnCreate,
		ReloadOnDelete:      ru.reloadOnDelete,
		Created:             w.Meta.GetCreationTimestamp().Time,
	}
	if rec != nil {
		ru.configFacts(&f, w, rec)
	}
	return f
}

// configFacts gathers the facts of a config that exists: its own, and what the workload
// carries of it without a marker of ours.
func (ru *rule) configFacts(f *policy.PairFacts, w workload.View, rec *configs.Record) {
	f.Ignored = ru.annotations.Ignores(rec.Annotations())
	f.Invalid = rec.Invalid() != ""
	if f.Triggers && f.Keys == nil {
		f.Whole = f.Want // wanted's ru.records.Content(rec, nil): one read of the hashes as text
		f.Whole.Undecided = nil
	} else {
		f.Whole = ru.records.Content(rec, nil)
	}
	f.NoneOfKeys = f.Keys != nil && holdsNoneOf(rec)(f.Keys)
	f.Collaborne = policy.CollaborneMarker(w.Tmpl, f.Ref, f.Whole.Collaborne)
	f.Strip = ru.strips.Marker(w.Key, f.Ref, f.Want.Value)
	f.KeyStates = ru.keyStates(workload.ConfigKey(f.Ref, w.Key.Namespace), rec, f.Keys)
	f.Stakater.Hash = rec.Stakater.String()
	f.Stakater.Others = ru.stakaterOthers(w, f.Ref)
	f.Unrecorded = ru.unrecorded.facts(workload.ConfigKey(f.Ref, w.Key.Namespace), rec)
}

// ReloadsOn lists, once each, the configs workload w may reload on: those its pod spec uses or
// its annotations name, then those its patterns match.
func (ru *rule) ReloadsOn(w workload.View) []policy.ConfigRef {
	refs := w.Policy.Candidates(w.Uses)
	for _, r := range ru.caches.matchedByPattern(w.Policy, w.Key.Namespace) {
		if !slices.Contains(refs, r) {
			refs = append(refs, r)
		}
	}
	return refs
}

// WantedExisting is wanted for a config that exists, with its record; ok is false when it does
// not exist or w does not reload on it.
func (ru *rule) WantedExisting(w workload.View, r policy.ConfigRef) (rec *configs.Record, want policy.Content, keys []string, ok bool) {
	if rec = ru.caches.lookup(workload.ConfigKey(r, w.Key.Namespace)); rec == nil {
		return nil, want, nil, false
	}
	want, keys, ok = ru.wanted(w, r, rec)
	return rec, want, keys, ok
}

// wanted is what workload w's marker for config r should hold (nothing for a config that does
// not exist) and the keys it reads (nil: all); triggers is false when w does not reload on r.
func (ru *rule) wanted(w workload.View, r policy.ConfigRef, rec *configs.Record) (want policy.Content, keys []string, triggers bool) {
	matched := rec != nil && ru.annotations.Matches(rec.Annotations())
	triggers, keys = w.Policy.Triggers(r, w.Uses[r], matched)
	switch {
	case !triggers:
		return want, nil, false
	case rec == nil:
		return want, keys, true // no content to read
	}
	u := w.Uses[r]
	want = ru.records.Content(rec, keys)
	e, known := ru.store.Get(ru.names.Config(workload.ConfigKey(r, w.Key.Namespace)))
	want.Undecided = policy.UndecidedOf(keys, u, policy.Recorded{Known: known, Deleted: e.Deleted, Hash: e.Hash},
		func() policy.Content { return ru.records.Content(rec, u.Keys) })
	return want, keys, true
}

// keyStates gives, for each of keys (nil: none), rec's current content of it and the state's
// per-key entry.
func (ru *rule) keyStates(c workload.Key, rec *configs.Record, keys []string) func() []policy.KeyRecord {
	return func() []policy.KeyRecord {
		skey := ru.names.Config(c)
		out := make([]policy.KeyRecord, 0, len(keys))
		for _, k := range keys {
			e, ok := ru.store.Get(state.KeyOf(skey, k))
			out = append(out, policy.KeyRecord{Content: ru.records.KeyContent(rec, k), State: policy.Recorded{Known: ok, Deleted: e.Deleted, Hash: e.Hash}})
		}
		return out
	}
}

// ReadByOthers is what pods that another actor's change of w started read of config r (nil:
// nothing to note), as policy.ReadByOthers says.
func (ru *rule) ReadByOthers(w workload.View, r policy.ConfigRef) *runs.Read {
	f := ru.pairFacts(w, r, ru.caches.lookup(workload.ConfigKey(r, w.Key.Namespace)))
	switch policy.ReadByOthers(f) {
	case policy.ReadAbsent:
		return &runs.Read{Keys: f.Keys, Absent: true}
	case policy.ReadNone:
		return &runs.Read{Keys: f.Keys, None: true}
	case policy.ReadCurrent:
		return &runs.Read{Value: f.Want.Value, Keys: f.Keys}
	case policy.ReadVouched:
		return &runs.Read{Value: f.Want.Value, Keys: f.Keys, Vouched: true}
	case policy.ReadOther:
		return &runs.Read{Value: runs.OtherContent, Keys: f.Keys}
	}
	return nil
}

// CachedVersion gives a config's version in the cache now, with the content a read takes of it.
func (ru *rule) CachedVersion(namespace string) func(policy.ConfigRef, *runs.Read) (runs.Version, bool) {
	return func(r policy.ConfigRef, rd *runs.Read) (runs.Version, bool) {
		rec := ru.caches.lookup(workload.ConfigKey(r, namespace))
		if rec == nil {
			return runs.Version{}, false
		}
		return runs.Version{RV: rec.ResourceVersion(), Value: ru.records.Content(rec, rd.Keys).Value}, true
	}
}

// Lookup is config k's record in the cache, nil when it does not exist or is not watched
// (caches.lookup).
func (ru *rule) Lookup(k workload.Key) *configs.Record { return ru.caches.lookup(k) }

// Dependents judges every workload that reloads on the config.
func (ru *rule) Dependents(k workload.Key, rec *configs.Record) []workload.Dependent {
	return ru.judgeAll(k, rec, func(_ workload.Judgement, triggers bool) bool { return triggers })
}

// created lists when each workload that reloads on the config was created.
func (ru *rule) created(k workload.Key) []time.Time {
	var out []time.Time
	for _, kind := range ru.caches.kinds {
		for _, o := range ru.caches.indexed(kind, k) {
			if w, ok := ru.View(kind, o); ok {
				if _, triggers := ru.judge(w, policy.ConfigRef{Kind: k.Kind, Name: k.Name}, nil); triggers {
					out = append(out, w.Meta.GetCreationTimestamp().Time)
				}
			}
		}
	}
	return out
}

// staleHolds judges every workload that reloads on the config, for the holds on it that the
// content ends, content that does not validate included.
func (ru *rule) staleHolds(k workload.Key, rec *configs.Record) []workload.Dependent {
	return ru.judgeAll(k, rec, func(j workload.Judgement, _ bool) bool { return j.StaleHold })
}

// judgeAll judges every workload the index holds under the config, and keeps those keep says.
func (ru *rule) judgeAll(k workload.Key, rec *configs.Record, keep func(j workload.Judgement, triggers bool) bool) []workload.Dependent {
	var out []workload.Dependent
	for _, kind := range ru.caches.kinds {
		for _, o := range ru.caches.indexed(kind, k) {
			w, ok := ru.View(kind, o)
			if !ok {
				continue
			}
			if j, triggers := ru.judge(w, policy.ConfigRef{Kind: k.Kind, Name: k.Name}, rec); keep(j, triggers) {
				out = append(out, workload.Dependent{Workload: w.Key, Judgement: j})
			}
		}
	}
	return out
}
