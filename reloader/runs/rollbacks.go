package runs

import (
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/workload"
)

// Rollbacks is what a rollback of a workload's restart changes of what its pods run: the
// restart it undoes (Restarts) and the strips of the pods it puts back (Strips). It is the
// tracker's run memory (safe.RunMemory).
type Rollbacks struct {
	Restarts *Restarts
	Strips   *Strips
}

// BehindRollback is Restarts.BehindRollback.
func (r Rollbacks) BehindRollback(w workload.Key, rv string) bool {
	return r.Restarts.BehindRollback(w, rv)
}

// RanBefore is Strips.RanBefore.
func (r Rollbacks) RanBefore(w workload.Key, ran map[string]string) (undo func()) {
	return r.Strips.RanBefore(w, ran)
}

// RollbackBegins notes a rollback of w about to be sent (Restarts.RollbackBegins): the awaits of
// the configs w uses are forgotten (Strips.RolledBack) and what the pods put back run is noted
// (Strips.PutBack). undo takes both notes back, in the reverse order, for a rollback not sent.
func (r Rollbacks) RollbackBegins(w workload.Key, uses []policy.ConfigRef) (undo func()) {
	putBack := r.Restarts.RollbackBegins(w)
	undoAwaits := r.Strips.RolledBack(w, uses)
	undoPutBack := r.Strips.PutBack(w, putBack)
	return func() {
		undoPutBack()
		undoAwaits()
	}
}

// RollbackEnded is Restarts.RollbackEnded.
func (r Rollbacks) RollbackEnded(w workload.Key, rv string) {
	r.Restarts.RollbackEnded(w, rv)
}
