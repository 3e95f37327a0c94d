package policy

// Recorded is a config's entry in the reloader-state: the last content hash fully rolled out to
// its dependents, or a tombstone of a config that did not exist.
type Recorded struct {
	Known   bool
	Deleted bool   // a tombstone
	Hash    string // "" in a tombstone: no content was rolled out (absent, or its deletion was)
}

// Facts are what the reloader knows of one workload and one config it reloads on.
type Facts struct {
	Exists bool        // the config exists now
	Hash   string      // its content hash, when it exists
	Marker MarkerState // what the workload carries, against the value for the current content
	State  Recorded
	// KeyLevel: the workload reads only some keys; KeysSame: each of them still has the
	// per-key value the state recorded.
	KeyLevel, KeysSame bool
	// StakaterStale: the workload carries stakater Reloader's variable with another hash.
	StakaterStale                  bool
	ReloadOnCreate, ReloadOnDelete bool
}

// Reload is the one rule of the reloader: does the workload need a reload for this config?
//
// A workload carrying a marker is reloaded exactly when the marker differs from the config's
// current content, so reverts, recreations and partial rollouts need no history. Only a workload
// without a marker is judged by the state, which holds the content last fully rolled out: it is
// reloaded if the content differs from that. A config the state has never seen restarts nothing
// (first start, a corrupt entry, a namespace newly in scope), except to catch up a change that
// stakater Reloader missed; a tombstone without content marks a config that did not exist, whose
// appearance reloads only with --reload-on-create.
func Reload(f Facts) bool {
	if !f.Exists {
		return f.ReloadOnDelete && f.Marker == Stale
	}
	switch f.Marker {
	case Current:
		return false
	case Stale:
		return true
	}
	switch {
	case !f.State.Known:
		return f.StakaterStale
	case f.State.Deleted && f.State.Hash == "":
		return f.ReloadOnCreate
	case f.State.Hash == f.Hash:
		return false
	case f.KeyLevel:
		return !f.KeysSame
	}
	return true
}
