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
		if rec := c.caches.lookup(k); rec == nil || rec.Invalid() == "" {
			// A resume of a pause of ours held for invalid content goes on (safe/pauses.go).
			c.validation.Wake(k, nil)
		}
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
	unread := c.markSpare(k, len(deps) == 0, rec)
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
		c.rule.unrecorded.recorded(k)
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
	c.rule.unrecorded.recorded(k)
	if rec != nil {
		if !unread {
			c.records.RolledOut(k, rec, deps)
		}
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
// nothing: each dependent's own sync catches a stale marker. One that nobody reads gets no entry
// (an entry left by an earlier version goes, which restarts nothing); every other is queued. Not
// queueing every config keeps the queue's maps, which never shrink, small. Entries of configs
// deleted while the reloader was down become tombstones.
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
			unread := c.markSpare(k, true, r)
			switch {
			case known && !e.Deleted && e.Hash == r.Hash():
			case unread && c.caches.allowed(k.Namespace) && c.webhook == nil:
			case !known && unread && c.caches.allowed(k.Namespace):
				c.records.FirstSeen(k, r) // --webhook-url calls for every config's change
			default:
				if !known && !c.state.DroppedAsCorrupt(skey) {
					c.rule.unrecorded.found(k, r)
				}
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

// markSpare tells the state whether config k, as rec (nil: absent), is read: a workload reads or
// names it (unread: none of its dependents was found). An unread config that exists has no entry:
// one left goes (a tombstone too: no dependent is there to judge its recreation), which restarts
// nothing, and the state's watermark is to cover its write instead
// (state.Store.Seen; policy.UnrecordedFacts). A config turns read as soon as a workload's sync
// queues it, and its entry appears at its sync. With --webhook-url every config keeps its entry:
// the URL is called for any config's change. It reports whether k is unread.
func (c *Controller) markSpare(k workload.Key, unread bool, rec *configs.Record) bool {
	spare := unread && !c.caches.referenced(k)
	c.records.MarkSpare(k, spare)
	if spare && rec != nil && c.caches.allowed(k.Namespace) && c.webhook == nil {
		c.records.Unread(k)
		c.state.Seen(rec.ResourceVersion())
	}
	return spare
}
