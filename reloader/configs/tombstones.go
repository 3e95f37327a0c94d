package configs

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/reloader/reloader/coalesce"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// Tombstones is the part that keeps the state entry of a config that does not exist: its last
// content, so that a recreation is judged against it, or none with --reload-on-create and
// --reload-on-delete; and that prunes it once nothing references the config for the retention
// period.
type Tombstones struct {
	store                          *state.Configs
	names                          entrykeys.Names
	clock                          coalesce.Clock
	log                            *slog.Logger
	retention                      time.Duration
	reloadOnCreate, reloadOnDelete bool
	namespace                      string // --namespace: the namespace of an entry that names none
	watched                        Watched
	queue                          Queue
	// unreached: config key → bool, whether a deletion could not reach a dependent (NoteReach).
	unreached sync.Map
}

// TombstoneDeps is what Tombstones needs: the config entries, and the options and parts of the
// rest of the reloader it reads.
type TombstoneDeps struct {
	Store                          *state.Configs
	Names                          entrykeys.Names
	Clock                          coalesce.Clock
	Log                            *slog.Logger
	Retention                      time.Duration // --tombstone-retention
	ReloadOnCreate, ReloadOnDelete bool
	Namespace                      string // --namespace: the namespace of an entry that names none
	Watched                        Watched
	Queue                          Queue
}

// NewTombstones returns the tombstones of the config entries in d.Store.
func NewTombstones(d TombstoneDeps) *Tombstones {
	return &Tombstones{store: d.Store, names: d.Names, clock: d.Clock, log: d.Log, retention: d.Retention,
		reloadOnCreate: d.ReloadOnCreate, reloadOnDelete: d.ReloadOnDelete, namespace: d.Namespace,
		watched: d.Watched, queue: d.Queue}
}

// Queue is the controller's workqueue: a config key to sync now, or after a while.
type Queue interface {
	Add(k workload.Key)
	AddAfter(k workload.Key, d time.Duration)
}

// Watched says whether configs of a kind are watched (the caches).
type Watched interface {
	Watched(configKind string) bool
}

// Settle keeps a tombstone for a config that does not exist: its last content, so that a
// recreation is judged against it, or none. It is pruned once nothing references the config for
// the retention period. A config whose deletion could not reach a dependent keeps its content
// (NoteReach).
func (ts *Tombstones) Settle(k workload.Key, referenced bool) {
	unreached, _ := ts.unreached.Load(k)
	untouched := unreached == true
	skey := ts.names.Config(k)
	e, known := ts.store.Get(skey)
	now := ts.clock.Now()
	switch {
	case known && !e.Deleted:
		ts.Deleted(k)
	case !known && referenced && ts.reloadOnCreate:
		// Absent but referenced: its appearance will be a creation.
		ts.store.Tombstone(skey, "", now)
		return
	case !known:
		return
	}
	e, _ = ts.store.Get(skey)
	if referenced && ts.reloadOnDelete && e.Hash != "" && !untouched {
		// The deletion reached every dependent: they run without the config now. One that
		// carried no marker was not restarted and still runs the content: the tombstone keeps
		// it, so that a recreation with other content reloads that one.
		ts.store.Delete(skey)
		ts.store.Tombstone(skey, "", e.Since)
		return
	}
	if referenced {
		return
	}
	if age := now.Sub(e.Since); age < ts.retention {
		ts.queue.AddAfter(k, ts.retention-age)
		return
	}
	ts.store.Delete(skey)
	ts.unreached.Delete(k)
}

// Deleted tombstones config k, seen deleted now, keeping the content the state holds: a
// workload without a marker that existed then ran it, and with --reload-on-delete is reloaded
// for the deletion; one created later never read it (policy.Reload). Seen deleted again before
// its recreation was recorded, its tombstone takes the new time.
func (ts *Tombstones) Deleted(k workload.Key) {
	skey, now := ts.names.Config(k), ts.clock.Now()
	switch e, known := ts.store.Get(skey); {
	case !known:
	case e.Deleted && e.Hash == "" && ts.reloadOnDelete:
		// Its recreation, not yet recorded (a dependent's reload was held), was run by the
		// dependents that existed then: some content, to reload them for (policy.Reload).
		ts.store.Tombstone(skey, policy.UnrecordedContent, now)
		ts.store.Redate(skey, now)
	case e.Deleted:
		ts.store.Redate(skey, now)
	default:
		ts.store.Tombstone(skey, e.Hash, now)
		ts.log.Info("config deleted", "kind", k.Kind, "namespace", k.Namespace, "name", k.Name)
	}
}

// Entered tombstones config k, found deleted when its namespace entered the selection: with
// policy.UnrecordedContent where unseen (policy.UnseenOnEntry) and the state holds a content of
// it, so that its recreation reloads a dependent without a marker; else deleted does, as for a
// deletion seen.
func (ts *Tombstones) Entered(k workload.Key, unseen bool) {
	skey := ts.names.Config(k)
	e, known := ts.store.Get(skey)
	if !known || e.Hash == "" || !unseen {
		return
	}
	ts.store.Tombstone(skey, policy.UnrecordedContent, ts.clock.Now())
	ts.log.Info("config deleted while its namespace was out of the selection", "kind", k.Kind,
		"namespace", k.Namespace, "name", k.Name)
}

// Missing tombstones, now, the config entries that are not live (by their state keys): their
// configs were deleted while no reloader ran. It returns how many it tombstoned.
func (ts *Tombstones) Missing(live func(skey string) bool) int {
	return ts.store.TombstoneMissing(live, ts.clock.Now())
}

// QueueAll queues the config of every tombstone, to settle or prune it.
func (ts *Tombstones) QueueAll() {
	for skey := range ts.store.Tombstones() {
		kind, ns, name, ok := state.ParseKey(skey)
		if !ok {
			continue
		}
		if ns == "" {
			ns = ts.namespace
		}
		if ts.watched.Watched(kind) {
			ts.queue.Add(workload.Key{Kind: kind, Namespace: ns, Name: name})
		}
	}
}

// Sweep re-queues the tombstones now and then, so those whose last reference went
// are pruned after the retention period.
func (ts *Tombstones) Sweep(ctx context.Context) {
	t := time.NewTicker(min(ts.retention, time.Hour))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ts.QueueAll()
		}
	}
}

// NoteReach remembers, when this process first sees a deletion (live, or at its start for a
// config deleted before), whether a dependent is left untouched by it (without a marker and not
// reloaded: created after the deletion, or without --reload-on-delete): the tombstone then
// keeps the content, so that a recreation with other content reloads that one. A dependent the
// deletion reached carries a marker saying so, so a later process tells the two apart. In
// memory only.
func (ts *Tombstones) NoteReach(k workload.Key, rec *Record, deps []workload.Dependent, fresh bool) {
	if rec != nil {
		ts.unreached.Delete(k)
		return
	}
	if _, judged := ts.unreached.Load(k); judged && !fresh {
		return
	}
	ts.unreached.Store(k, slices.ContainsFunc(deps, func(d workload.Dependent) bool { return d.Untouched }))
}
