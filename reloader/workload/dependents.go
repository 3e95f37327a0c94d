package workload

import (
	"slices"
	"sync"
	"unique"

	"k8s.io/client-go/tools/cache"
)

// Dependents indexes one workload kind's cached objects by the configs whose change may reload
// them, and by pattern keys (reloader/caches.go). Its event handlers keep it
// (reloader/informers.go), in place of a client-go index: that one keeps a set (a Go map) per
// config, most of them with one workload, and computes every object's keys twice per update, old
// and new, each a decode of the packed workload (about 0.24 KB per config at 50,000,
// docs/lab/benchmarks-sessions.md). Here a config's workloads are a slice, and keys are
// computed once per event from the object the handler has already decoded.
//
// It lags the cache by the handler's delay: a workload in the cache whose add event is not yet
// handled is not listed. That event then syncs the workload and queues its configs, as before.
// At start, nothing reads it before synced (the handler's initial list) says so.
type Dependents struct {
	mu sync.RWMutex
	on map[indexKey][]string // config or pattern key → the workloads' cache keys (namespace/name)
	// Synced reports that the handler has seen the informer's initial list.
	Synced cache.InformerSynced
}

func NewDependents() *Dependents { return &Dependents{on: map[indexKey][]string{}} }

// indexKey is a key as the index files it, its kind and namespace interned: 32 bytes, not 48,
// in an entry kept per config that has a dependent.
type indexKey struct {
	name     string
	kind, ns unique.Handle[string]
}

func indexKeyOf(k Key) indexKey {
	return indexKey{name: k.Name, kind: unique.Make(k.Kind), ns: unique.Make(k.Namespace)}
}

// Move files workload w under keys to in place of from, the keys of the object it was filed
// with last (none for a new workload; to is none for a deleted one). It keeps no copy of a
// workload's keys: the handler has the old object, and a copy would cost more than the index.
func (d *Dependents) Move(w string, from, to []Key) {
	if slices.Equal(from, to) {
		return // a status update
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, k := range from {
		if !slices.Contains(to, k) {
			d.drop(indexKeyOf(k), w)
		}
	}
	for _, k := range to {
		if ik := indexKeyOf(k); !slices.Contains(d.on[ik], w) {
			d.on[ik] = append(d.on[ik], w)
		}
	}
}

// drop removes w from k's workloads. The caller holds d.mu.
func (d *Dependents) drop(k indexKey, w string) {
	ws := slices.DeleteFunc(d.on[k], func(v string) bool { return v == w })
	if len(ws) == 0 {
		delete(d.on, k)
		return
	}
	d.on[k] = slices.Clip(ws)
}

// Of returns the cache keys of the workloads indexed under k, a copy the caller may keep.
func (d *Dependents) Of(k Key) []string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return slices.Clone(d.on[indexKeyOf(k)])
}

// Any reports whether a workload is indexed under k.
func (d *Dependents) Any(k Key) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.on[indexKeyOf(k)]) > 0
}
