package policy

import (
	"slices"
	"strconv"
	"time"
)

// PairFacts are the raw observations of one workload and one config it may reload on, gathered
// read only by the reloader: what the workload carries, what the config is, and what the
// reloader's parts remember of the two. Judge decides from them alone.
type PairFacts struct {
	Ref ConfigRef
	// Ignored: the config carries the ignore annotation. Triggers: the workload reloads on it
	// (its annotations, what its pod spec reads, the config's match annotation).
	Ignored, Triggers bool
	Exists            bool // the config exists now
	Invalid           bool // its content does not validate
	// Want is its content for Keys, the keys the workload reloads on (nil: all); zero when it
	// does not exist. Whole is its whole content, as the state records it.
	Want, Whole Content
	Keys        []string
	// NoneOfKeys: the config holds none of Keys.
	NoneOfKeys bool
	// Marker is what the workload carries of the config against Want (Target.MarkerOf);
	// Collaborne what Collaborne's variable says against the whole content (CollaborneMarker).
	Marker, Collaborne MarkerState
	// MarkedUnderOtherKey: a copy of the marker was made under a hash key the reloader no
	// longer has (MarkedUnderOtherKey).
	MarkedUnderOtherKey bool
	// Held: a hold after a rollback names this content; StaleHold: it names another.
	Held, StaleHold bool
	// Unseen: the pods of the workload's last restart read a content of the config other than
	// the one its marker was judged against. RollbackRan: the pods a rollback started read the
	// content rolled back for.
	Unseen, RollbackRan bool
	// Runs is what the reloader remembers the pods of the last restart run of the config.
	Runs RestartRuns
	// Awaiting: those pods wait for the config, absent at their restart and not seen back.
	Awaiting bool
	// Waits: the pod spec needs the config to start (Waits).
	Waits bool
	// RanSince: the state notes that the pods run a content of the config, taken without a
	// marker or since a restart while it was absent. Strip is what the workload, without a
	// marker, was noted to run since a strip, against Want.
	RanSince bool
	Strip    MarkerState
	// StartedWithout: the state notes that the pods, restarted while the config was absent,
	// started without it (they read it only through optional key refs).
	StartedWithout bool
	// State is the config's entry in the reloader-state. KeyStates gives, for each of Keys, its
	// current content and the state's entry of it; it is called only when the judgement needs it.
	State     Recorded
	KeyStates func() []KeyRecord
	Stakater  StakaterFacts
	// ReloadOnCreate, ReloadOnDelete: the flags.
	ReloadOnCreate, ReloadOnDelete bool
	// Created is when the workload was created (to the second).
	Created time.Time
	// Unrecorded are the facts that tell a config without an entry written while no reloader
	// recorded it.
	Unrecorded UnrecordedFacts
}

// UnrecordedFacts place a config's last write against what reloaders recorded: the state keeps
// entries only for configs some workload reads, so one without an entry may have changed while
// no reloader ran (UnrecordedWrite).
type UnrecordedFacts struct {
	// Watermark is the highest resourceVersion among the state's shards as loaded: every config
	// written at or before it was seen by a reloader that wrote the state after. "" when unknown
	// (a first start, a lost state, one no reloader wrote) or when it does not apply: the config
	// had no dependent at this process's start, so each of its writes since was seen running.
	Watermark string
	// WatermarkAt is no later than the write that left the watermark, by the clock of the
	// reloader that made it and signed it (state.Store.Watermark); zero when unknown.
	WatermarkAt time.Time
	// RV and Created are the config's resourceVersion and creation (to the second).
	RV      string
	Created time.Time
}

// RestartRuns is what the reloader remembers the pods of a workload's last restart run of a
// config where their marker may say another content: Value for Keys (nil: all; Value "": they
// run without it). Known is false when the marker says it.
type RestartRuns struct {
	Value string
	Keys  []string
	Known bool
}

// KeyRecord is one data key the workload reads: its current content and the state's entry.
type KeyRecord struct {
	Content Content
	State   Recorded
}

// StakaterFacts are what stakater Reloader left in the workload for the config.
type StakaterFacts struct {
	// Comparing: this start compares stakater's variables (the first start after a switch).
	Comparing bool
	// Set, Value: the workload carries stakater's variable for the config (StakaterVar), with Value.
	Set   bool
	Value string
	// Hash is stakater's hash of the config's content; Others gives those of the other configs
	// the workload reloads on whose names fold to the same variable. Called only when needed.
	Hash   string
	Others func() []string
}

// Judgement is what the rule says of one workload and one config.
type Judgement struct {
	// Change is the value the marker should hold; Force and Ran as Change says.
	Change Change
	Keys   []string // the keys the workload reloads on (nil: all)
	// Triggers: the workload reloads on the config, and its content validates.
	Triggers bool
	Reload   bool
	// Vouched: the pods run the content though the marker may say another.
	Vouched bool
	// Behind: the config exists and the marker does not say that the pods run its content (its
	// reload held, or left to the state).
	Behind bool
	// Untouched: the config does not exist, the workload carries no marker of it, and the
	// deletion does not reload it: it was created after the deletion (or the flag is off).
	Untouched bool
	// ByState: the config exists and the workload carries no marker of it: the state decides.
	ByState bool
	// Stripped: the config exists, the workload carries no marker of it, and what it was noted
	// to run decides.
	Stripped bool
	// Held: a hold names the content: its reload was rolled back, and it is not reloaded for
	// it. StaleHold: a hold names another content: it has ended.
	Held, StaleHold bool
	Reason          Reason
}

// OwnMarker reports whether the workload's own marker says what its pods run of the config, so
// that the config's state entry only restates it for this workload: the state judges neither it
// nor, after a restart, what the restart memory vouches for, nor keys it keeps apart.
func (j Judgement) OwnMarker() bool {
	return !j.ByState && !j.Stripped && !j.Vouched && j.Keys == nil
}

// Judge is the whole rule for one workload and one config: which content its pods run, by the
// first of these that speaks, and whether it is reloaded. The marker speaks unless the restart
// memory knows better (an unseen change, a rollback's pods, a restart while the config was
// absent); without a marker, Collaborne's variable, then what a strip noted, then the state
// (reload). A hold after a rollback keeps a due workload as it is.
func Judge(f PairFacts) Judgement {
	switch {
	case f.Ignored:
		return Judgement{Reason: Ignored}
	case !f.Triggers:
		return Judgement{Reason: NotTriggered}
	case f.Invalid:
		// Any other content seen ends a hold, content that does not validate too.
		return Judgement{Change: Change{Ref: f.Ref, Value: f.Want.Value}, StaleHold: f.StaleHold, Reason: Invalid}
	}
	m := f.runs()
	if f.Exists && m.marker == NoMarker && f.Keys == nil && f.Collaborne != NoMarker {
		m.marker, m.reason = f.Collaborne, pick(f.Collaborne, CollaborneCurrent, CollaborneStale)
	}
	stripped := f.Exists && m.marker == NoMarker && f.Strip != NoMarker
	if stripped {
		m.marker, m.reason = f.Strip, pick(f.Strip, StripCurrent, StripStale)
	}
	byState := f.Exists && m.marker == NoMarker
	rf := f.ruleFacts(m.marker, byState)
	reload, why := reload(rf)
	if why != 0 {
		m.reason = why
	}
	if reload && f.Held {
		reload, m.reason = false, Held
	}
	return Judgement{
		Change:    Change{Ref: f.Ref, Value: f.Want.Value, Force: m.force, Ran: ranByState(rf, byState, f.Keys, f.Want)},
		Keys:      f.Keys,
		Triggers:  true,
		Reload:    reload,
		Vouched:   m.vouched,
		Behind:    f.Exists && m.marker != Current,
		Untouched: !f.Exists && m.marker == NoMarker && !reload,
		ByState:   byState,
		Stripped:  stripped,
		Held:      f.Held,
		StaleHold: f.StaleHold,
		Reason:    m.reason,
	}
}

// marked is what the pods run by the marker and the restart memory: the marker as it counts,
// whether the workload is restarted whatever its marker holds (force), whether the memory
// vouches for the content, and which fact said so.
type marked struct {
	marker         MarkerState
	force, vouched bool
	reason         Reason
}

// runs reads the marker, then what the restart memory knows of the pods: the pods of the last
// restart may have read a content the marker does not say (unseen), or those a rollback started
// the content rolled back for; or they waited for the config, absent at their restart, and run
// the content it reappeared with (deleted again, that content is gone whatever the marker says);
// or they wait for it still, and run nothing of it, as a deletion's marker says (soak seed
// 1795828528856311681@7). A process that did not see that restart learns it from the state
// (RanSince; Strip, the content the state notes they took; StartedWithout, that they started
// without it, read only through optional key refs).
func (f PairFacts) runs() marked {
	m := marked{marker: f.Marker, reason: markerReason(f.Marker, f.Exists)}
	switch {
	case f.Exists && f.Unseen:
		return marked{marker: Stale, force: true, reason: RestartReadOther}
	case f.Exists && f.RollbackRan:
		return marked{marker: Stale, force: true, reason: RolledBackPodsRan}
	}
	runs, known := f.Runs.Running(f.Exists, f.Keys, f.NoneOfKeys, f.Want.Value)
	switch {
	case known && runs == f.Want.Value:
		return marked{marker: Current, vouched: true, reason: RestartRunsThis}
	case known:
		return marked{marker: Stale, force: true, reason: RestartRunsOther}
	case f.Exists && m.marker == Stale && f.Waits && f.RanSince && f.Strip == Current:
		// Restarted while the config was absent, the pods started on the content it reappeared
		// with, which a process that saw it noted in the state: a later one reads it there
		// (soak seed 1796182876957345445@10).
		return marked{marker: Current, vouched: true, reason: TookReappearance}
	case !f.Exists && f.ReloadOnDelete && m.marker != Stale && f.Waits && f.RanSince:
		return marked{marker: Stale, force: true, reason: TookBeforeDeletion}
	case !f.Exists && m.marker == NoMarker && f.Awaiting:
		return marked{marker: Current, reason: Awaiting}
	case !f.Exists && m.marker == NoMarker && f.StartedWithout:
		// Not the tombstone's content, though the workload was created before the deletion.
		return marked{marker: Current, reason: StartedWithout}
	}
	return m
}

// Running is what the pods of the last restart run of a config where their marker may say
// another content, against want, its content now for keys (exists: the config exists; noneOfKeys:
// it holds none of keys). A content noted for other keys says nothing of these, as a marker made
// for them says nothing (Content.Undecided): the workload's annotations switched between some
// keys and all of them since, and the marker or the state decides (soak seed
// 1795737404676896416@4: a key's content, compared with the whole Secret's, restarted a CronJob
// for no change). Pods that run without the config read none of keys either when it holds none
// of them (soak seed 1795669739113515719@4).
func (rr RestartRuns) Running(exists bool, keys []string, noneOfKeys bool, want string) (string, bool) {
	switch {
	case !rr.Known || rr.Value != "" && !sameKeys(rr.Keys, keys):
		return "", false
	case rr.Value == "" && exists && keys != nil && noneOfKeys:
		return want, true
	}
	return rr.Value, true
}

// sameKeys reports whether two key lists name the same keys (nil: all of them).
func sameKeys(a, b []string) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
}

// OthersRead is what the pods that another actor's change of a workload started read of a config.
type OthersRead int

// What such pods read.
const (
	ReadNothing OthersRead = iota // nothing to note: the workload does not reload on it, or has no marker of it
	ReadAbsent                    // nothing yet: the config is absent and they wait for it
	ReadNone                      // nothing: the config is absent and they start without it
	ReadCurrent                   // its content, as the marker says
	ReadVouched                   // its content, which the marker does not say but the pods before ran
	ReadOther                     // another content than the marker says, which one unknown
)

// ReadByOthers is what the pods another actor's restart started read of the config: where a
// marker is current, its content; where it is behind, another content (the restart memory may
// vouch that the pods before ran the current one); an absent config, nothing, waited for or not.
func ReadByOthers(f PairFacts) OthersRead {
	switch {
	case !f.Triggers:
		return ReadNothing
	case !f.Exists && f.Waits:
		return ReadAbsent
	case !f.Exists:
		return ReadNone
	case f.Marker == Current:
		return ReadCurrent
	case f.Marker != Stale:
		return ReadNothing
	}
	if v, ok := f.Runs.Running(true, f.Keys, f.NoneOfKeys, f.Want.Value); ok && v == f.Want.Value {
		return ReadVouched
	}
	return ReadOther
}

// UndecidedOf are the values a marker of a config may hold that leave the judgement to the state
// (Content.Undecided), for a workload whose pod reads the config as u and reloads on keys of it
// (nil: all of it): for keys, the whole content the state records (st); for the whole config
// read only in part, part's values, the content of the keys the pod reads (called only then).
func UndecidedOf(keys []string, u Use, st Recorded, part func() Content) []string {
	switch {
	case keys != nil && (!st.Known || st.Deleted || st.Hash == ""):
		return nil
	case keys != nil:
		return []string{st.Hash}
	case u.Whole || len(u.Keys) == 0:
		return nil
	}
	p := part()
	return []string{p.Value, p.Legacy}
}

// ruleFacts are the facts reload weighs, with the marker as it counts (marker): the state's
// entry where the state decides (byState), or where a deletion may reach a workload without a
// marker.
func (f PairFacts) ruleFacts(marker MarkerState, byState bool) facts {
	rf := facts{Exists: f.Exists, Hash: f.Want.Value, Legacy: f.Want.Legacy, Marker: marker,
		ReloadOnCreate: f.ReloadOnCreate, ReloadOnDelete: f.ReloadOnDelete}
	switch {
	case byState:
		st := Recorded{Known: f.State.Known, Deleted: f.State.Deleted, Hash: f.State.Hash}
		rf.Hash, rf.Legacy, rf.Collaborne = f.Whole.Value, f.Whole.Legacy, f.Whole.Collaborne
		rf.State, rf.KeyLevel = st, f.Keys != nil
		rf.KeysSame = rf.KeyLevel && st.Known && f.Whole.Match(st.Hash) == Differs && f.KeyStates != nil && keysSame(f.KeyStates())
		rf.StakaterStale = !st.Known && f.Stakater.stale()
		rf.MarkedUnderOtherKey = f.MarkedUnderOtherKey
		rf.UnrecordedWrite = !st.Known && f.Unrecorded.before(f.Created)
	case !f.Exists && marker == NoMarker && f.ReloadOnDelete:
		rf.State, rf.Created = f.State, f.Created
	}
	return rf
}

// before reports whether the config was written while no reloader recorded it (above the
// watermark), after a workload created at w may have read it: the config existed when the
// watermark was written (created at or before its second: that write above it is a change, as
// the entry it had would have told), or was created strictly before the workload (to the
// second). A config created after the watermark, in or after the workload's second (a Helm
// install while the reloader was down), is first seen. The creations are the API server's; the
// watermark's time is the reloader's own, and without it only the second test applies.
func (u UnrecordedFacts) before(w time.Time) bool {
	if u.Watermark == "" || !WrittenBefore(u.Watermark, u.RV) || u.Created.IsZero() {
		return false
	}
	created := u.Created.Truncate(time.Second)
	return !u.WatermarkAt.IsZero() && !created.After(u.WatermarkAt.Truncate(time.Second)) ||
		created.Before(w.Truncate(time.Second))
}

// WrittenBefore reports whether resourceVersion a is older than b. Resource versions are etcd
// revisions, ordered across objects; anything that is not a number is not trusted.
func WrittenBefore(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}

// keysSame reports whether every key still has the per-key value the state recorded (or one it
// cannot compare, made under a lost hash key); a key never recorded counts as changed, so no
// reload is lost.
func keysSame(keys []KeyRecord) bool {
	for _, k := range keys {
		if !k.State.Known || k.Content.Match(k.State.Hash) == Differs {
			return false
		}
	}
	return true
}

// stale reports whether the workload carries stakater's variable with a value that vouches for
// no content it reloads on. stakater names the variable from the config's name upper-cased, each
// run of other characters folded to one '_' (StakaterVar), so configs of one kind whose names
// fold alike share one variable, holding the hash of the one stakater reloaded on last. The
// value vouches for each of them whose current hash it equals, and says nothing of the others,
// which are then judged as never seen: a restart only when it equals none, for a change stakater
// surely missed. Compared only at the first start (reloader/stakater.go; soak seed
// 1795725183900764066@4).
func (s StakaterFacts) stale() bool {
	if !s.Comparing || !s.Set || s.Value == s.Hash {
		return false
	}
	return s.Others == nil || !slices.Contains(s.Others(), s.Value)
}

// ranByState is the content the pods of a workload without a marker run by the state, for a
// rollback to put back: for a config that exists, the state's content where it decides the
// reload (TestARevertAfterAFirstReloadWasRolledBackRestartsNothing); for a deleted one, the
// content rolled out before the deletion (TestARolledBackDeletionReloadOfAWorkloadWithoutAMarkerReloadsItsRecreation).
// "" when the state says nothing, or for keys, whose contents it keeps apart.
func ranByState(f facts, byState bool, keys []string, want Content) string {
	switch {
	case keys != nil || !f.State.Known || f.State.Hash == "":
		return ""
	case !f.Exists && f.Marker == NoMarker:
		return f.State.Hash
	case byState && !f.State.Deleted && want.Match(f.State.Hash) == Differs:
		return f.State.Hash
	}
	return ""
}

// pick is a when m is Current, else b.
func pick(m MarkerState, a, b Reason) Reason {
	if m == Current {
		return a
	}
	return b
}

// markerReason is what the workload's own marker says.
func markerReason(m MarkerState, exists bool) Reason {
	switch {
	case m == Current && exists:
		return MarkerCurrent
	case m == Current:
		return MarkerDeleted
	case m == Stale && exists:
		return MarkerStale
	case m == Stale:
		return Deleted
	}
	return 0
}
