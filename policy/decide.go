package policy

import (
	"slices"
	"time"

	"github.com/reloader/reloader/confighash"
)

// Content is what a marker or a state value is compared with: the value for a config's current
// content and, for a Secret, the plain value that versions before keyed hashes wrote for the
// same content. That one is kept in memory only, so that what those versions left in workloads
// and in the state is judged as before: an upgrade restarts nothing that did not change.
type Content struct {
	Value  string // a ConfigMap's plain hash or a Secret's keyed one
	Legacy string // a Secret's plain hash; "" for a ConfigMap
	// Collaborne is Collaborne kubernetes-reloader's hash of the whole content, kept in memory
	// only: a state entry it wrote for this content is current (collaborne.go).
	Collaborne string
	// Whole is, for a workload that reads only some keys, the hash of the whole current content:
	// a marker holding it was written when the workload reloaded on the whole config (a reload
	// annotation naming it), and says it runs every key of the current content.
	Whole string
	// Undecided are values a marker may hold that say too little to judge the workload by, so
	// the state decides, as for a workload without a marker (Match: Undecided):
	//   - for a workload reloaded on the whole config whose pod reads only some keys, the
	//     current value of those keys, written while it reloaded on them alone (auto): it says
	//     nothing of the other keys;
	//   - for one reloaded on some keys, the whole content the state records as rolled out,
	//     written while a reload annotation named the config: the state's per-key entries,
	//     which describe that content, say whether those keys changed since.
	Undecided []string
}

// Match is how a recorded value (a marker, a state entry) relates to a config's current content.
type Match int

const (
	// Differs: the value of other content.
	Differs Match = iota
	// Same: the value of this content, keyed under the current key or as the legacy plain value.
	Same
	// OtherKey: a keyed value made under a key the reloader no longer has (the key Secret was
	// deleted or replaced). It cannot be compared with anything.
	OtherKey
	// Undecided: one of Content.Undecided. Taking it as other content would restart a workload
	// whose reload annotations switched, for nothing; taking it as this content would hide a
	// change the marker cannot speak for.
	Undecided
)

// Match tells how v relates to the content c.
func (c Content) Match(v string) Match {
	switch {
	case v == c.Value || c.Legacy != "" && v == c.Legacy || c.Collaborne != "" && v == c.Collaborne || c.Whole != "" && v == c.Whole:
		return Same
	case v != "" && slices.Contains(c.Undecided, v):
		return Undecided
	case underOtherKey(v, c.Value):
		return OtherKey
	}
	return Differs
}

// underOtherKey reports whether v is keyed, under another key than current (which may be plain:
// a ConfigMap's value, whose markers the reloader never keys).
func underOtherKey(v, current string) bool {
	id, keyed := confighash.KeyIDOf(v)
	if !keyed {
		return false
	}
	now, _ := confighash.KeyIDOf(current)
	return id != now
}

// Recorded is a config's entry in the reloader-state: the last content hash fully rolled out to
// its dependents, or a tombstone of a config that did not exist.
type Recorded struct {
	Known   bool
	Deleted bool   // a tombstone
	Hash    string // "" in a tombstone: no content was rolled out (absent, or its deletion was)
	// Since is a tombstone's time: when the reloader first saw the config deleted.
	Since time.Time
}

// facts are what reload weighs for one workload and one config it reloads on, the marker as it
// counts after the restart memory and the strips spoke (Judge).
type facts struct {
	Exists bool   // the config exists now
	Hash   string // its content hash, when it exists
	// Legacy is a Secret's plain content hash, as versions before keyed hashes recorded it.
	Legacy string
	Marker MarkerState // what the workload carries, against the value for the current content
	State  Recorded
	// KeyLevel: the workload reads only some keys; KeysSame: each of them still has the
	// per-key value the state recorded.
	KeyLevel, KeysSame bool
	// StakaterStale: the workload carries stakater Reloader's variable with another hash.
	StakaterStale bool
	// MarkedUnderOtherKey: the workload carries a marker of the config made under a hash key
	// the reloader no longer has (MarkedUnderOtherKey).
	MarkedUnderOtherKey            bool
	ReloadOnCreate, ReloadOnDelete bool
	// Created is when the workload was created (to the second).
	Created time.Time
	// UnrecordedWrite: the config has no entry, and was written while no reloader recorded it,
	// after its creation before the workload's (UnrecordedFacts).
	UnrecordedWrite bool

	// Collaborne is Collaborne kubernetes-reloader's hash of the content, as it recorded it.
	Collaborne string
}

// reload is the one rule of the reloader: does the workload need a reload for this config? why
// is the fact that decided, 0 where the marker did.
//
// A workload carrying a marker is reloaded exactly when the marker differs from the config's
// current content, so reverts, recreations and partial rollouts need no history. Only a workload
// without a marker is judged by the state, which holds the content last fully rolled out: it is
// reloaded if the content differs from that. A config the state has never seen restarts nothing
// (first start, a corrupt entry, a namespace newly in scope), except to catch up a change that
// stakater Reloader missed; a tombstone without content marks a config that did not exist, whose
// appearance reloads only with --reload-on-create. A state value made under a hash key the
// reloader no longer has cannot be compared, and restarts nothing either: a lost or rotated key
// must not restart every Secret dependent, at the cost of missing a change made while the
// reloader was down and the key was lost. Nor does a marker under such a key against a
// tombstone without content.
//
// With --reload-on-delete a deletion is a change: a marker of other content is set to the
// deletion, and a workload without one is reloaded too if it ran the content (ranBeforeDeletion).
func reload(f facts) (bool, Reason) {
	if !f.Exists {
		return deletion(f)
	}
	switch f.Marker {
	case Current, Stale:
		return f.Marker == Stale, 0
	}
	switch {
	case !f.State.Known && f.StakaterStale:
		return true, StakaterMissed
	case !f.State.Known && f.UnrecordedWrite:
		// Its readers created after it may run a content before that write: one restart
		// rather than a lost change.
		return true, UnrecordedWrite
	case !f.State.Known:
		return false, StateUnknown
	case f.State.Deleted && f.State.Hash == "" && f.MarkedUnderOtherKey:
		// A marker under a lost key says a content was rolled out to the workload after all,
		// by a process that stopped before recording it; which one is unknown, and like every
		// value under a lost key it restarts nothing.
		return false, MarkedUnderLostKey
	case f.State.Deleted && f.State.Hash == "":
		return f.ReloadOnCreate, pickBool(f.ReloadOnCreate, ReloadOnCreate, Tombstone)
	case f.State.Deleted && f.State.Hash == UnrecordedContent:
		return true, UnrecordedTombstone
	case Content{Value: f.Hash, Legacy: f.Legacy, Collaborne: f.Collaborne}.Match(f.State.Hash) != Differs:
		return false, StateSame
	case f.KeyLevel && f.KeysSame:
		return false, KeysUnchanged
	}
	return true, StateDiffers
}

// deletion is reload for a config that does not exist.
func deletion(f facts) (bool, Reason) {
	switch {
	case f.Marker == Current:
		return false, 0
	case !f.ReloadOnDelete:
		return false, DeletionIgnored
	case f.Marker == Stale:
		return true, 0
	case ranBeforeDeletion(f):
		return true, RanBeforeDeletion
	case !f.State.Known:
		return false, StateUnknown
	case f.State.Hash == "":
		return false, NothingRolledOut
	}
	return false, CreatedAfterDeletion
}

// pickBool is a when b holds, else c.
func pickBool(b bool, a, c Reason) Reason {
	if b {
		return a
	}
	return c
}

// ranBeforeDeletion reports whether a workload without a marker of a deleted config ran its
// content: the state recorded a content rolled out, and the workload existed when the config
// was deleted (by the tombstone's time, to the second, a tie counting as before; without a
// tombstone yet, the deletion is being handled now). A workload created later never read it.
func ranBeforeDeletion(f facts) bool {
	return f.State.Known && f.State.Hash != "" && (!f.State.Deleted || !f.Created.After(f.State.Since))
}
