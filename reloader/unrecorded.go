package reloader

import (
	"sync"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// unrecorded tells a config without a state entry that was written while no reloader recorded
// it (policy.UnrecordedFacts): the state keeps entries only for configs a workload reads, and
// its watermark says up to which write the configs were seen. The rule applies only to the
// configs the start-up pass found with dependents, no entry and a write above the watermark,
// until their sync records them: a config with no dependent then had each later write seen
// running, and a workload that reads it later takes it as first seen.
type unrecorded struct {
	state *state.Store

	mu      sync.Mutex
	pending map[workload.Key]struct{} // the configs the rule applies to; few: only those written while down
}

// found notes, at the start-up pass, config k (rec) that has dependents and no entry.
func (u *unrecorded) found(k workload.Key, rec *configs.Record) {
	if w, _ := u.state.Watermark(); w == "" || !policy.WrittenBefore(w, rec.ResourceVersion()) {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.pending == nil {
		u.pending = map[workload.Key]struct{}{}
	}
	u.pending[k] = struct{}{}
}

// recorded forgets config k: its sync recorded it, or found it unread.
func (u *unrecorded) recorded(k workload.Key) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.pending, k)
}

// facts are the rule's facts of config k (rec).
func (u *unrecorded) facts(k workload.Key, rec *configs.Record) policy.UnrecordedFacts {
	u.mu.Lock()
	_, pending := u.pending[k]
	u.mu.Unlock()
	if !pending {
		return policy.UnrecordedFacts{}
	}
	w, at := u.state.Watermark()
	return policy.UnrecordedFacts{Watermark: w, WatermarkAt: at, RV: rec.ResourceVersion(), Created: rec.Created()}
}
