package reloader

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"

	"github.com/reloader/reloader/confighash"
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
func (e entryKeys) config(k key) string { return state.Key(k.Kind, e.ns(k.Namespace), k.Name) }

// pending is the state key of the reload of workload k a gate holds (gates.go):
// "pending.<Kind>_[<namespace>_]<name>", hashed past the key limit.
func (e entryKeys) pending(k key) string { return e.workload(pendingPrefix, k) }

// pause is the state key of a pause period of ours on workload k (pauses.go):
// "pause.<Kind>_[<namespace>_]<name>", hashed past the key limit.
func (e entryKeys) pause(k key) string { return e.workload(pausePrefix, k) }

// workload is the key of a workload's entry of the kind prefix names.
func (e entryKeys) workload(prefix string, k key) string {
	ns := e.ns(k.Namespace)
	s := prefix + k.Kind + "_" + k.Name
	if ns != "" {
		s = prefix + k.Kind + "_" + ns + "_" + k.Name
	}
	if len(s) <= maxKeyLen {
		return s
	}
	sum := sha1.Sum([]byte(ns + "/" + k.Name))
	return prefix + k.Kind + "__" + hex.EncodeToString(sum[:])
}

// hold is the state key of a hold on workload w for config r (track.go).
func (e entryKeys) hold(w key, r policy.ConfigRef) string {
	return workloadEntryKey(holdPrefix, w.Kind, e.ns(w.Namespace), w.Name, r.Kind, r.Name)
}

// strip is the state key of what workload w runs of config r without a marker (strips.go).
func (e entryKeys) strip(w key, r policy.ConfigRef) string {
	return workloadEntryKey(stripPrefix, w.Kind, e.ns(w.Namespace), w.Name, r.Kind, r.Name)
}

// rollbackRead is the state key of the content of config r that the pods a rollback of workload
// w started read, though its marker says another (track.go).
func (e entryKeys) rollbackRead(w key, r policy.ConfigRef) string {
	return workloadEntryKey(rollbackReadPrefix, w.Kind, e.ns(w.Namespace), w.Name, r.Kind, r.Name)
}

// maxKeyLen is the longest key a ConfigMap accepts.
const maxKeyLen = 253

// The prefixes of the entries the parts keep in the state (state.EntryKind).
const (
	holdPrefix    = "hold."
	stripPrefix   = "strip."
	pendingPrefix = "pending."
	pausePrefix   = "pause."
	// rollbackReadPrefix: "rbread.", what the pods a rollback started read.
	rollbackReadPrefix = "rbread."
)

// workloadEntryKey is the key of a workload's entry for a config (a hold, a strip):
// "<prefix><config kind>.<workload kind>_[<namespace>_]<workload>_<config>"; names never contain
// '_'. An over-long key becomes "<prefix><config kind>.-<sha1>". The config kind stays readable:
// it decides which hashes the entry may hold (keyed only for a Secret).
func workloadEntryKey(prefix, workloadKind, namespace, name, configKind, config string) string {
	parts := []string{workloadKind, name, config}
	if namespace != "" {
		parts = []string{workloadKind, namespace, name, config}
	}
	k := prefix + configKind + "." + strings.Join(parts, "_")
	if len(k) <= maxKeyLen {
		return k
	}
	sum := sha1.Sum([]byte(strings.Join(parts, "/")))
	return prefix + configKind + ".-" + hex.EncodeToString(sum[:])
}

// configKindOf is the kind of config a state key belongs to: a config's entries, a hold's, a
// strip's and a rollback read's; "" for any other.
func configKindOf(key string) string {
	for _, p := range []string{holdPrefix, stripPrefix, rollbackReadPrefix} {
		if rest, ok := strings.CutPrefix(key, p); ok {
			kind, _, _ := strings.Cut(rest, ".")
			return kind
		}
	}
	return state.KindOf(key)
}

// contentEntries is the kind of state entry of a workload and a config that holds a content hash
// (a hold, a strip, a rollback read): keyed only for a Secret, and as long as such a hash may be.
func contentEntries(prefix string) state.EntryKind {
	return state.EntryKind{
		Prefix: prefix,
		MaxLen: func(k string) int {
			if configKindOf(k) == policy.KindSecret {
				return confighash.KeyedLen
			}
			return confighash.PlainLen
		},
		Valid: func(k, v string) error {
			if err := confighash.ParseValue(v); err != nil {
				return err
			}
			if _, keyed := confighash.KeyIDOf(v); keyed && configKindOf(k) != policy.KindSecret {
				return errors.New("only a Secret's entries hold keyed hashes")
			}
			return nil
		},
	}
}

// newStore is the state over client, with the entries the parts keep: holds, strips, rollback
// reads, pending reloads and pauses of ours.
func newStore(client state.ConfigMapClient, namespace, name string, log *slog.Logger) *state.Store {
	return state.New(client, namespace, name, log, contentEntries(holdPrefix), contentEntries(stripPrefix),
		contentEntries(rollbackReadPrefix), pendingEntries(), pauseEntries())
}
