package reloader

import (
	"slices"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/policy"
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
	records                        *records
	store                          *state.Store
	names                          entryKeys
	tracker                        *tracker  // holds: reloads rolled back
	restarts                       *restarts // what a restart's pods may read unseen (unseen.go)
	strips                         *strips   // what a workload runs without a marker
	// stakater: stakater's variables are compared, until the first comparison is over
	// (stakater.go); a config entry the state loses later is not compared again.
	stakater *atomic.Bool
	// rehearsed, with --dry-run, is a workload as the patches reported would have left it.
	rehearsed func(kind *workloadKind, obj any) any
}

// workloadView is a cached workload read once: its metadata, template, annotations policy and
// the configs its pod spec uses.
type workloadView struct {
	key    key
	kind   *workloadKind
	obj    any
	meta   metav1.Object
	tmpl   *corev1.PodTemplateSpec
	policy policy.Policy
	uses   map[policy.ConfigRef]policy.Use
	target policy.Target
}

// judgement is what the rule says of one workload and one config: the value its marker should
// hold, the keys it reads (nil: all), and whether it must be reloaded.
type judgement struct {
	change policy.Change
	keys   []string
	reload bool
	// vouched: the pods run the content though the marker may say another (unseen.go).
	vouched bool
	// behind: the config exists and the marker does not say that the pods run its content (its
	// reload held, or left to the state).
	behind bool
	// untouched: the config does not exist, the workload carries no marker of it, and the
	// deletion does not reload it: it was created after the deletion (or the flag is off).
	untouched bool
	// byState: the config exists and the workload carries no marker of it: the state decides.
	byState bool
	// stripped: the config exists, the workload carries no marker of it, and what it was noted
	// to run decides (strips.go).
	stripped bool
	// staleHold: a hold on the workload for this config names another content: it has ended.
	staleHold bool
	// held: a hold on the workload for this config names its content: its reload was rolled
	// back, and it is not reloaded for it.
	held bool
}

// ownMarker reports whether the workload's own marker says what its pods run of the config, so
// that the config's state entry only restates it for this workload: the state judges neither it
// nor, after a restart, what the restart memory vouches for, nor keys it keeps apart.
func (j judgement) ownMarker() bool {
	return !j.byState && !j.stripped && !j.vouched && j.keys == nil
}

// view is the workload read once, if its namespace is in the selection.
func (ru *rule) view(kind *workloadKind, obj any) (workloadView, bool) {
	w, ok := ru.viewInAnyNamespace(kind, obj)
	if !ok || !ru.caches.allowed(w.key.namespace) {
		return workloadView{}, false
	}
	return w, true
}

// viewInAnyNamespace is the workload read once, whether its namespace is in the selection or
// not: what its pods read does not depend on the selection.
func (ru *rule) viewInAnyNamespace(kind *workloadKind, obj any) (workloadView, bool) {
	if ru.rehearsed != nil {
		obj = ru.rehearsed(kind, obj) // dryrun.go: as the dry run's reported patches left it
	}
	meta, tmpl := kind.template(obj)
	if tmpl == nil {
		return workloadView{}, false
	}
	return workloadView{
		key:    key{kind.name, meta.GetNamespace(), meta.GetName()},
		kind:   kind,
		obj:    obj,
		meta:   meta,
		tmpl:   tmpl,
		policy: ru.annotations.Of(meta.GetAnnotations(), tmpl.Annotations),
		uses:   policy.UsesOf(&tmpl.Spec),
		target: policy.Target{
			Strategy:  ru.strategy,
			RestartAt: kind.canRestartAt && ru.annotations.RestartsAt(meta.GetAnnotations()),
		},
	}, true
}

// judge applies the rule to workload w and config r (rec nil: it does not exist). triggers is
// false when the workload does not reload on r at all, nor on content that does not validate.
func (ru *rule) judge(w workloadView, r policy.ConfigRef, rec *configRecord) (j judgement, triggers bool) {
	if rec != nil && ru.annotations.Ignores(rec.Annotations()) {
		return j, false
	}
	want, keys, ok := ru.wanted(w, r, rec)
	if !ok {
		return j, false
	}
	// Rolled back (track.go). Any other content seen ends a hold, content that does not validate
	// too: it reloads nothing, but it is another content seen. The syncs lift such a hold
	// (tracker.liftStale); judging only reads.
	held, staleHold := ru.tracker.held(w.key, r, heldAs(want.Value))
	if rec != nil && rec.Invalid() != "" {
		return judgement{change: policy.Change{Ref: r, Value: want.Value}, staleHold: staleHold}, false
	}
	f := policy.Facts{
		Exists:         rec != nil,
		Hash:           want.Value,
		Legacy:         want.Legacy,
		Marker:         w.target.MarkerOf(w.meta.GetAnnotations(), w.tmpl, r, want),
		ReloadOnCreate: ru.reloadOnCreate,
		ReloadOnDelete: ru.reloadOnDelete,
	}
	// The pods of its last restart may have read a content the marker does not say (unseen.go),
	// or those a rollback started the content rolled back for (track.go).
	force := f.Exists && (ru.restarts.unseen(w.key, r) || ru.tracker.rollbackRan(w, r, heldAs(want.Value)))
	if force {
		f.Marker = policy.Stale
	}
	// Or they waited for it, absent at their restart, and run the content it reappeared with;
	// deleted again, that content is gone whatever the marker says.
	vouched := false
	runs, known := ru.running(w.key, r, rec, keys, want.Value)
	if !force && known {
		vouched, force = runs == want.Value, runs != want.Value
		f.Marker = policy.Stale
		if vouched {
			f.Marker = policy.Current
		}
	}
	// A process that did not see that restart learns it from the state (strips.awaits), as it
	// learns that pods without a marker run a content (strips.go).
	if !f.Exists && f.ReloadOnDelete && !known && f.Marker != policy.Stale && policy.Waits(&w.tmpl.Spec, r) && ru.strips.ranSince(w.key, r) {
		f.Marker, force = policy.Stale, true
	}
	// Or they waited for it and it has not come back: they run nothing of it, as a deletion's
	// marker says (soak seed 1795828528856311681@7: rolled out by another actor to read a config
	// deleted before, a workload was reloaded for the deletion).
	if !f.Exists && !known && f.Marker == policy.NoMarker && ru.restarts.awaiting(w.key, r) {
		f.Marker = policy.Current
	}
	if f.Exists && f.Marker == policy.NoMarker && keys == nil {
		f.Marker = policy.CollaborneMarker(w.tmpl, r, rec.Collaborne.String())
	}
	stripped := false
	if f.Exists && f.Marker == policy.NoMarker {
		f.Marker = ru.strips.marker(w.key, r, want.Value)
		stripped = f.Marker != policy.NoMarker
	}
	byState := f.Exists && f.Marker == policy.NoMarker
	if byState {
		ru.stateFacts(&f, w, r, rec, keys)
		f.MarkedUnderOtherKey = policy.MarkedUnderOtherKey(w.meta.GetAnnotations(), w.tmpl, r, want)
	}
	if !f.Exists && f.Marker == policy.NoMarker && f.ReloadOnDelete {
		ru.deletionFacts(&f, w, r)
	}
	reload := policy.Reload(f) && !held
	return judgement{change: policy.Change{Ref: r, Value: want.Value, Force: force, Ran: ranByState(f, byState, keys, want)}, keys: keys, reload: reload, vouched: vouched,
		behind: f.Exists && f.Marker != policy.Current, untouched: !f.Exists && f.Marker == policy.NoMarker && !reload, byState: byState, stripped: stripped,
		staleHold: staleHold, held: held}, true
}

// ranByState is the content the pods of a workload without a marker run by the state, for a
// rollback to put back: for a config that exists, the state's content where it decides the
// reload (TestARevertAfterAFirstReloadWasRolledBackRestartsNothing); for a deleted one, the
// content rolled out before the deletion (TestARolledBackDeletionReloadOfAWorkloadWithoutAMarkerReloadsItsRecreation).
// "" when the state says nothing, or for keys, whose contents it keeps apart.
func ranByState(f policy.Facts, byState bool, keys []string, want policy.Content) string {
	switch {
	case keys != nil || !f.State.Known || f.State.Hash == "":
		return ""
	case !f.Exists && f.Marker == policy.NoMarker:
		return f.State.Hash
	case byState && !f.State.Deleted && want.Match(f.State.Hash) == policy.Differs:
		return f.State.Hash
	}
	return ""
}

// running is what the pods of w's last restart run of config r where their marker may say
// another content (restarts.runs), against want, its content now for keys (rec nil when it does
// not exist). A content noted for other keys says nothing of these, as a marker made for them
// says nothing (policy.Content.Undecided): the workload's annotations switched between some keys
// and all of them since, and the marker or the state decides (soak seed 1795737404676896416@4:
// a key's content, compared with the whole Secret's, restarted a CronJob for no change).
func (ru *rule) running(w key, r policy.ConfigRef, rec *configRecord, keys []string, want string) (runs string, ok bool) {
	runs, read, ok := ru.restarts.runs(w, r)
	switch {
	case !ok || runs != "" && !sameKeys(read, keys):
		return "", false
	case runs == "" && rec != nil && keys != nil && holdsNoneOf(rec)(keys):
		return want, true // pods that run without the config read none of these keys either
	}
	return runs, true
}

// sameKeys reports whether two key lists name the same keys (nil: all of them).
func sameKeys(a, b []string) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
}

// reloadsOn lists, once each, the configs workload w may reload on: those its pod spec uses or
// its annotations name, then those its patterns match.
func (ru *rule) reloadsOn(w workloadView) []policy.ConfigRef {
	refs := w.policy.Candidates(w.uses)
	for _, r := range ru.caches.matchedByPattern(w.policy, w.key.namespace) {
		if !slices.Contains(refs, r) {
			refs = append(refs, r)
		}
	}
	return refs
}

// wantedExisting is wanted for a config that exists, with its record; ok is false when it does
// not exist or w does not reload on it.
func (ru *rule) wantedExisting(w workloadView, r policy.ConfigRef) (rec *configRecord, want policy.Content, keys []string, ok bool) {
	if rec = ru.caches.lookup(configKey(r, w.key.namespace)); rec == nil {
		return nil, want, nil, false
	}
	want, keys, ok = ru.wanted(w, r, rec)
	return rec, want, keys, ok
}

// wanted is what workload w's marker for config r should hold (nothing for a config that does
// not exist) and the keys it reads (nil: all); triggers is false when w does not reload on r.
func (ru *rule) wanted(w workloadView, r policy.ConfigRef, rec *configRecord) (want policy.Content, keys []string, triggers bool) {
	matched := rec != nil && ru.annotations.Matches(rec.Annotations())
	ok, keys := w.policy.Triggers(r, w.uses[r], matched)
	if !ok {
		return want, nil, false
	}
	if rec != nil {
		want = ru.records.content(rec, keys)
	}
	if rec != nil {
		want.Undecided = ru.undecided(rec, r, w.key.namespace, w.uses[r], keys)
	}
	return want, keys, true
}

// undecided are the values a marker of rec may hold that leave the judgement to the state
// (policy.Content.Undecided), for a workload whose pod reads rec as u and reloads on keys of it
// (nil: all of it).
func (ru *rule) undecided(rec *configRecord, r policy.ConfigRef, ns string, u policy.Use, keys []string) []string {
	if keys != nil {
		e, known := ru.store.Get(ru.names.config(configKey(r, ns)))
		if !known || e.Deleted || e.Hash == "" {
			return nil
		}
		return []string{e.Hash}
	}
	if u.Whole || len(u.Keys) == 0 {
		return nil
	}
	part := ru.records.content(rec, u.Keys)
	return []string{part.Value, part.Legacy}
}

// stateFacts fills in what the state says, for a workload without a marker.
func (ru *rule) stateFacts(f *policy.Facts, w workloadView, r policy.ConfigRef, rec *configRecord, keys []string) {
	skey := ru.names.config(configKey(r, w.key.namespace))
	e, known := ru.store.Get(skey)
	whole := ru.records.content(rec, nil)
	f.Hash, f.Legacy, f.Collaborne = whole.Value, whole.Legacy, whole.Collaborne
	f.State = policy.Recorded{Known: known, Deleted: e.Deleted, Hash: e.Hash}
	f.KeyLevel = keys != nil
	if f.KeyLevel && known && whole.Match(e.Hash) == policy.Differs {
		f.KeysSame = ru.keysSame(skey, rec, keys)
	}
	if !known && ru.stakater.Load() {
		f.StakaterStale = ru.stakaterStale(w, r, rec)
	}
}

// deletionFacts fills in, for a workload without a marker of a deleted config, what the state
// says of the content rolled out before the deletion, and when the workload was created.
func (ru *rule) deletionFacts(f *policy.Facts, w workloadView, r policy.ConfigRef) {
	e, known := ru.store.Get(ru.names.config(configKey(r, w.key.namespace)))
	f.State = policy.Recorded{Known: known, Deleted: e.Deleted, Hash: e.Hash, Since: e.Since}
	f.Created = w.meta.GetCreationTimestamp().Time
}

// keysSame reports whether every key still has the per-key value the state recorded (or one it
// cannot compare, made under a lost hash key); a key never recorded counts as changed, so no
// reload is lost.
func (ru *rule) keysSame(skey string, rec *configRecord, keys []string) bool {
	for _, k := range keys {
		e, ok := ru.store.Get(state.KeyOf(skey, k))
		if !ok || ru.records.keyContent(rec, k).Match(e.Hash) == policy.Differs {
			return false
		}
	}
	return true
}

// readByOthers is what pods that another actor's change of w started read of config r (nil:
// nothing to note).
func (ru *rule) readByOthers(w workloadView, r policy.ConfigRef) *read {
	rec := ru.caches.lookup(configKey(r, w.key.namespace))
	want, keys, triggers := ru.wanted(w, r, rec)
	switch {
	case !triggers:
		return nil
	case rec == nil && policy.Waits(&w.tmpl.Spec, r):
		return &read{keys: keys, absent: true}
	case rec == nil:
		return &read{keys: keys, none: true}
	}
	switch w.target.MarkerOf(w.meta.GetAnnotations(), w.tmpl, r, want) {
	case policy.Current:
		return &read{value: want.Value, keys: keys}
	case policy.Stale:
		if runs, ok := ru.running(w.key, r, rec, keys, want.Value); ok && runs == want.Value {
			return &read{value: want.Value, keys: keys, vouched: true} // the pods before ran it too
		}
		return &read{value: otherContent, keys: keys}
	}
	return nil
}

// cachedVersion gives a config's version in the cache now, with the content a read takes of it.
func (ru *rule) cachedVersion(namespace string) func(policy.ConfigRef, *read) (version, bool) {
	return func(r policy.ConfigRef, rd *read) (version, bool) {
		rec := ru.caches.lookup(configKey(r, namespace))
		if rec == nil {
			return version{}, false
		}
		return version{rec.ResourceVersion(), ru.records.content(rec, rd.keys).Value}, true
	}
}

// dependents judges every workload that reloads on the config.
func (ru *rule) dependents(k key, rec *configRecord) []dependent {
	return ru.judgeAll(k, rec, func(_ judgement, triggers bool) bool { return triggers })
}

// staleHolds judges every workload that reloads on the config, for the holds on it that the
// content ends, content that does not validate included.
func (ru *rule) staleHolds(k key, rec *configRecord) []dependent {
	return ru.judgeAll(k, rec, func(j judgement, _ bool) bool { return j.staleHold })
}

// judgeAll judges every workload the index holds under the config, and keeps those keep says.
func (ru *rule) judgeAll(k key, rec *configRecord, keep func(j judgement, triggers bool) bool) []dependent {
	var out []dependent
	for _, kind := range ru.caches.kinds {
		for _, o := range ru.caches.indexed(kind, k) {
			w, ok := ru.view(kind, o)
			if !ok {
				continue
			}
			if j, triggers := ru.judge(w, policy.ConfigRef{Kind: k.kind, Name: k.name}, rec); keep(j, triggers) {
				out = append(out, dependent{workload: w.key, judgement: j})
			}
		}
	}
	return out
}
