package reloader

import (
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/workload"
)

// syncConfig opens a window for every dependent that does not hold the config's current content
// and, once none is left, records that content as fully rolled out.
func (c *Controller) syncConfig(k workload.Key) error {
	fresh := c.changes.take(k)
	if !c.caches.allowed(k.Namespace) {
		c.changes.forget(k)
		c.validation.Forget(k)
		return nil
	}
	rec := c.caches.lookup(k)
	left, entered := c.entered.take(k)
	if entered && rec != nil {
		// The namespace was out of the selection: a config that came back meanwhile is judged
		// as at a start, which could not judge the dependents there (rule.view).
		c.strips.Unsure(k, c.rule.Dependents(k, rec))
	}
	if rec != nil && rec.Invalid() != "" {
		c.validation.Invalid(k, rec, fresh) // safe/validate.go
		// After invalid, which judges the last valid content with the holds still in place.
		c.tracker.LiftStale(c.rule.staleHolds(k, rec))
		c.changes.forget(k)
		return nil
	}
	c.validation.Valid(rec)
	if rec == nil && fresh {
		c.tombstones.Deleted(k) // before judging: the time says which dependents ran the content
	}
	if rec == nil && entered {
		c.tombstones.Entered(k, policy.UnseenOnEntry(left, c.rule.created(k)))
	}
	deps := c.rule.Dependents(k, rec)
	if rec != nil && c.strips.Reappeared(k, deps) {
		// The pods that waited for it started on this content: judged again with that note.
		deps = c.rule.Dependents(k, rec)
	}
	c.markSpare(k, len(deps) == 0)
	c.tracker.LiftStale(deps)
	c.strips.WatchDue(k, deps)
	c.tombstones.NoteReach(k, rec, deps, fresh)
	c.gates.Wake(deps) // safe/gates.go
	var due []workload.Key
	scanned, matched := map[string]int{}, map[string]int{}
	for _, d := range deps {
		scanned[d.Workload.Kind]++
		if d.Reload {
			due = append(due, d.Workload)
			matched[d.Workload.Kind]++
		}
	}
	if fresh {
		c.metrics.Stakater.Judged(scanned, matched)
	}
	c.validation.Wake(k, due) // safe/validate.go
	if c.jobs != nil {
		c.jobs.WakeHeld(k.Namespace) // reloader/jobs
	}
	if len(due) > 0 {
		c.records.Baseline(k, rec, deps)
		c.validation.RollingOut(k, rec) // safe/validate.go
		if fresh {
			c.metrics.Changes.WithLabelValues(k.Kind).Inc()
			c.log.Info("config changed", "kind", k.Kind, "namespace", k.Namespace, "name", k.Name,
				"hash", workload.Short(rec.Hash()), "dependents", len(due))
		}
		c.openWindows(due, fresh)
		return nil
	}
	if c.restarts.AwaitPatches(deps, k) {
		// A dependent was judged by its patch in flight, which may yet fail: nothing is
		// recorded until it has landed or failed, when k is judged again
		// (TestADeletionReloadWhosePatchFailsWhileItsConfigIsJudgedIsRetried).
		return nil
	}
	c.changes.forget(k)
	c.validation.Forget(k)
	if rec != nil {
		c.records.RolledOut(k, rec, deps)
		return nil
	}
	c.tombstones.Settle(k, len(deps) > 0 || c.caches.referenced(k))
	return nil
}

// openWindows adds the workloads to their coalescing windows. A fresh change extends an open
// window (the trailing debounce); a re-check only opens windows that are not open yet, so that
// the progress of other dependents does not hold one back.
func (c *Controller) openWindows(due []workload.Key, fresh bool) {
	for _, w := range due {
		if !fresh && c.coalescer.Open(w) {
			continue
		}
		if c.coalescer.Add(w) && fresh {
			c.metrics.Coalesced.Inc()
		}
	}
}

// startupPass runs once the caches have synced. A config whose content the state holds needs
// nothing: each dependent's own sync catches a stale marker. One never seen that nobody reads is
// recorded here; every other is queued. Not queueing every config keeps the queue's maps, which
// never shrink, small. Entries of configs deleted while the reloader was down become tombstones.
func (c *Controller) startupPass() {
	c.fold()
	if !c.opts.IgnoreSecrets {
		configs.ReportStateHashes(c.state.Configs(), c.opts.HashKey.key.ID(), c.log)
	}
	live := map[string]bool{}
	for kind, inf := range c.caches.configs {
		for _, obj := range inf.GetStore().List() {
			r := obj.(*configs.Record)
			k := workload.Key{Kind: kind, Namespace: r.Namespace(), Name: r.Name}
			skey := c.names.Config(k)
			live[skey] = true
			e, known := c.state.Configs().Get(skey)
			spare := c.markSpare(k, true)
			switch {
			case known && !e.Deleted && e.Hash == r.Hash():
			case !known && spare && c.caches.allowed(k.Namespace):
				c.records.FirstSeen(k, r)
			default:
				c.strips.Unsure(k, c.rule.Dependents(k, r))
				c.backlog.add(k)
			}
		}
	}
	if n := c.tombstones.Missing(func(k string) bool { return live[k] }); n > 0 {
		c.log.Info("configs deleted while the reloader was down", "entries", n)
	}
	c.tombstones.QueueAll()
}

// markSpare tells the state whether config k is spare: no workload reads or names it (unread:
// none of its dependents was found), so that a full state gives its entry's room to a read
// config's. A config turns read as soon as a workload's sync queues it, before its entry is
// needed at a restart. It reports the mark.
func (c *Controller) markSpare(k workload.Key, unread bool) bool {
	spare := unread && !c.caches.referenced(k)
	c.records.MarkSpare(k, spare)
	return spare
}
