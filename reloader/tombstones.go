package reloader

import (
	"context"
	"log/slog"
	"time"

	"github.com/reloader/reloader/coalesce"
	"github.com/reloader/reloader/state"
)

// tombstones is the part that keeps the state entry of a config that does not exist: its last
// content, so that a recreation is judged against it, or none with --reload-on-create and
// --reload-on-delete; and that prunes it once nothing references the config for the retention
// period.
type tombstones struct {
	store                          *state.Store
	names                          entryKeys
	clock                          coalesce.Clock
	log                            *slog.Logger
	retention                      time.Duration
	reloadOnCreate, reloadOnDelete bool
	namespace                      string // --namespace: the namespace of an entry that names none
	watched                        func(configKind string) bool
	enqueue                        func(key)
	enqueueAfter                   func(key, time.Duration)
}

// settle keeps a tombstone for a config that does not exist: its last content, so that a
// recreation is judged against it, or none. It is pruned once nothing references the config for
// the retention period.
func (ts *tombstones) settle(k key, referenced, untouched bool) (pruned bool) {
	skey := ts.names.config(k)
	e, known := ts.store.Get(skey)
	now := ts.clock.Now()
	switch {
	case known && !e.Deleted:
		ts.store.Tombstone(skey, e.Hash, now)
		ts.log.Info("config deleted", "kind", k.kind, "namespace", k.namespace, "name", k.name)
	case !known && referenced && ts.reloadOnCreate:
		// Absent but referenced: its appearance will be a creation.
		ts.store.Tombstone(skey, "", now)
		return false
	case !known:
		return false
	}
	e, _ = ts.store.Get(skey)
	if referenced && ts.reloadOnDelete && e.Hash != "" && !untouched {
		// The deletion reached every dependent: they run without the config now. One that
		// carried no marker was not restarted and still runs the content: the tombstone keeps
		// it, so that a recreation with other content reloads that one.
		ts.store.Delete(skey)
		ts.store.Tombstone(skey, "", e.Since)
		return false
	}
	if referenced {
		return false
	}
	if age := now.Sub(e.Since); age < ts.retention {
		ts.enqueueAfter(k, ts.retention-age)
		return false
	}
	ts.store.Delete(skey)
	return true
}

// queueAll queues the config of every tombstone, to settle or prune it.
func (ts *tombstones) queueAll() {
	for skey := range ts.store.Tombstones() {
		kind, ns, name, ok := state.ParseKey(skey)
		if !ok {
			continue
		}
		if ns == "" {
			ns = ts.namespace
		}
		if ts.watched(kind) {
			ts.enqueue(key{kind, ns, name})
		}
	}
}

// sweep re-queues the tombstones now and then, so those whose last reference went
// are pruned after the retention period.
func (ts *tombstones) sweep(ctx context.Context) {
	t := time.NewTicker(min(ts.retention, time.Hour))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ts.queueAll()
		}
	}
}
