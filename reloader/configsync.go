package reloader

import (
	"slices"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/state"
)

// dependent is a workload that reloads on a config, with what the rule says of it.
type dependent struct {
	workload key
	judgement
}

// syncConfig opens a window for every dependent that does not hold the config's current content
// and, once none is left, records that content as fully rolled out.
func (c *Controller) syncConfig(k key) error {
	fresh := c.changes.take(k)
	if !c.caches.allowed(k.namespace) {
		c.changes.forget(k)
		c.validation.forget(k)
		return nil
	}
	rec := c.caches.lookup(k)
	if rec != nil && rec.Invalid != "" {
		c.validation.invalid(k, rec, fresh) // validate.go
		c.changes.forget(k)
		return nil
	}
	c.validation.valid(rec)
	deps := c.rule.dependents(k, rec)
	c.noteUnreached(k, rec, deps, fresh)
	c.gates.wake(deps) // gates.go
	var due []key
	for _, d := range deps {
		if d.reload {
			due = append(due, d.workload)
		}
	}
	c.validation.wake(k, due) // validate.go
	if len(due) > 0 {
		c.recordBaseline(k, rec, deps)
		c.validation.rollingOut(k, rec) // validate.go
		if fresh {
			c.metrics.Changes.WithLabelValues(k.kind).Inc()
			c.log.Info("config changed", "kind", k.kind, "namespace", k.namespace, "name", k.name,
				"hash", short(rec.hash()), "dependents", len(due))
		}
		c.openWindows(due, fresh)
		return nil
	}
	c.changes.forget(k)
	c.validation.forget(k)
	if rec != nil {
		c.record(k, rec, deps)
		return nil
	}
	unreached, _ := c.unreached.Load(k)
	if c.tombstones.settle(k, len(deps) > 0 || c.caches.referenced(k), unreached == true) {
		c.unreached.Delete(k) // pruned
	}
	return nil
}

// noteUnreached remembers, when this process first sees a deletion (live, or at its start for a
// config deleted before), whether a dependent carried no marker of the config: the deletion
// cannot restart it (with env-vars, removing the variable is the restart), so it still runs the
// content. Judged then, not later: once the deletion has reached a dependent, it carries no
// marker either. In memory only: a process that starts after the deletion reached some
// dependents counts those as unreached too, so the tombstone keeps the content, and a
// recreation with other content restarts them once more; dropping it instead would lose the
// recreation for the dependents the deletion could never reach.
func (c *Controller) noteUnreached(k key, rec *configRecord, deps []dependent, fresh bool) {
	if rec != nil {
		c.unreached.Delete(k)
		return
	}
	if _, judged := c.unreached.Load(k); judged && !fresh {
		return
	}
	c.unreached.Store(k, slices.ContainsFunc(deps, func(d dependent) bool { return d.untouched }))
}

// openWindows adds the workloads to their coalescing windows. A fresh change extends an open
// window (the trailing debounce); a re-check only opens windows that are not open yet, so that
// the progress of other dependents does not hold one back.
func (c *Controller) openWindows(due []key, fresh bool) {
	for _, w := range due {
		if !fresh && c.coalescer.Open(w) {
			continue
		}
		if c.coalescer.Add(w) && fresh {
			c.metrics.Coalesced.Inc()
		}
	}
}

// recordBaseline records a config the state holds nothing comparable for (a first start, a
// corrupt entry, an entry made under a lost hash key) as it is now, though some dependents are
// still due by their markers. The workloads the state judges take it as what they run, and
// restart nothing for it; unrecorded, its next change would find nothing to compare with either
// and be taken as current again, lost for them, for as long as a dependent stays due (a refusal,
// a gate; soak seeds 1795657828041649806@4, a workload listed by a new leader never restarted
// while a closed window held a lagging one, and 1795691391691440064@4, the same under a lost
// key). A dependent the state judges that is due (a stakater variable that lags) is first noted
// as running another content (a strip), so that the entry does not hide its reload, after a
// restart too.
func (c *Controller) recordBaseline(k key, rec *configRecord, deps []dependent) {
	if rec == nil {
		return
	}
	if e, known := c.state.Get(c.names.config(k)); known && c.records.content(rec, nil).Match(e.Hash) != policy.OtherKey {
		return
	}
	r := policy.ConfigRef{Kind: k.kind, Name: k.name}
	for _, d := range deps {
		if d.reload && d.byState {
			c.strips.remember(d.workload, r, otherContent, d.keys)
		}
	}
	c.record(k, rec, deps)
}

// otherContent is a strip's value for a workload known to run another content than the
// config's, which one unknown: a well-formed hash that no content has.
const otherContent = "0000000000000000000000000000000000000000"

// record writes a config's content as fully rolled out, with the per-key values its key-level
// dependents need. A Secret's values are keyed, so this also re-records, under the current key,
// what an earlier version wrote plain or what was made under a lost key.
func (c *Controller) record(k key, rec *configRecord, deps []dependent) {
	skey := c.names.config(k)
	c.state.Set(skey, rec.Hash)
	read := map[string]bool{}
	for _, d := range deps {
		for _, dk := range d.keys {
			read[state.KeyOf(skey, dk)] = true
			c.state.Set(state.KeyOf(skey, dk), c.records.keyContent(rec, dk).Value)
		}
	}
	// A per-key entry left from an earlier content would vouch for a key it no longer
	// describes (policy.Content.Undecided relies on it): only this content's entries stay.
	c.state.KeepDataKeys(skey, read)
}

// startupPass runs once the caches have synced. A config whose content the state holds needs
// nothing: each dependent's own sync catches a stale marker. One never seen that nobody reads is
// recorded here; every other is queued. Not queueing every config keeps the queue's maps, which
// never shrink, small. Entries of configs deleted while the reloader was down become tombstones.
func (c *Controller) startupPass() {
	if !c.opts.IgnoreSecrets {
		reportStateHashes(c.state, c.opts.HashKey.key.ID(), c.log)
	}
	live := map[string]bool{}
	for kind, inf := range c.caches.configs {
		for _, obj := range inf.GetStore().List() {
			r := obj.(*configRecord)
			k := key{kind, r.Namespace, r.Name}
			skey := c.names.config(k)
			live[skey] = true
			e, known := c.state.Get(skey)
			switch {
			case known && !e.Deleted && e.Hash == r.Hash:
			case !known && !c.caches.referenced(k) && c.caches.allowed(k.namespace):
				c.state.Set(skey, r.Hash)
			default:
				c.backlog.add(k)
			}
		}
	}
	if n := c.state.TombstoneMissing(func(k string) bool { return live[k] }, c.opts.Clock.Now()); n > 0 {
		c.log.Info("configs deleted while the reloader was down", "entries", n)
	}
	c.tombstones.queueAll()
}

// short abbreviates a hash for logs and Events: its first 8 hex digits, of the HMAC for a keyed
// value.
func short(hash string) string {
	sum := confighash.SumOf(hash)
	return sum[:min(len(sum), 8)]
}
