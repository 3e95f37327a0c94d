package reloader

import (
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/state"
)

// entryKeys is the one rule that names entries in the state: a config's, a pending reload's, a
// hold's and a strip's name the namespace only when the reloader watches all namespaces.
type entryKeys struct{ single bool }

func (e entryKeys) ns(namespace string) string {
	if e.single {
		return ""
	}
	return namespace
}

// config is the state key of config k's entry.
func (e entryKeys) config(k key) string { return state.Key(k.kind, e.ns(k.namespace), k.name) }

// pending is the state key of the reload of workload k a gate holds.
func (e entryKeys) pending(k key) string { return state.PendingKey(k.kind, e.ns(k.namespace), k.name) }

// hold is the state key of a hold on workload w for config r.
func (e entryKeys) hold(w key, r policy.ConfigRef) string {
	return state.HoldKey(w.kind, e.ns(w.namespace), w.name, r.Kind, r.Name)
}

// strip is the state key of what workload w runs of config r without a marker (strips.go).
func (e entryKeys) strip(w key, r policy.ConfigRef) string {
	return state.StripKey(w.kind, e.ns(w.namespace), w.name, r.Kind, r.Name)
}
