// Package entrykeys is the one rule that names the entries the reloader's parts keep in the
// state (a config's record, a hold, a strip, a rollback read, a pending reload, a pause of ours),
// and the kind of entry that holds a content hash. The keys are a format: a process reads the
// entries an earlier one wrote, so they do not change.
package entrykeys

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// Names is the one rule that names entries in the state: a config's, a pending reload's, a
// hold's and a strip's name the namespace only when the reloader watches all namespaces, that
// is, unless Single (one namespace watched).
type Names struct{ Single bool }

func (e Names) ns(namespace string) string {
	if e.Single {
		return ""
	}
	return namespace
}

// Config is the state key of config k's entry.
func (e Names) Config(k workload.Key) string { return state.Key(k.Kind, e.ns(k.Namespace), k.Name) }

// Pending is the state key of the reload of workload k a gate holds (reloader/gates.go):
// "pending.<Kind>_[<namespace>_]<name>", hashed past the key limit.
func (e Names) Pending(k workload.Key) string { return e.workload(PendingPrefix, k) }

// Pause is the state key of a pause period of ours on workload k (reloader/pauses.go):
// "pause.<Kind>_[<namespace>_]<name>", hashed past the key limit.
func (e Names) Pause(k workload.Key) string { return e.workload(PausePrefix, k) }

// workload is the key of a workload's entry of the kind prefix names.
func (e Names) workload(prefix string, k workload.Key) string {
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

// Hold is the state key of a hold on workload w for config r (reloader/safe/track.go).
func (e Names) Hold(w workload.Key, r policy.ConfigRef) string {
	return workloadEntryKey(HoldPrefix, w.Kind, e.ns(w.Namespace), w.Name, r.Kind, r.Name)
}

// Strip is the state key of what workload w runs of config r without a marker (reloader/runs/strips.go).
func (e Names) Strip(w workload.Key, r policy.ConfigRef) string {
	return workloadEntryKey(StripPrefix, w.Kind, e.ns(w.Namespace), w.Name, r.Kind, r.Name)
}

// RollbackRead is the state key of the content of config r that the pods a rollback of workload
// w started read, though its marker says another (reloader/safe/track.go).
func (e Names) RollbackRead(w workload.Key, r policy.ConfigRef) string {
	return workloadEntryKey(RollbackReadPrefix, w.Kind, e.ns(w.Namespace), w.Name, r.Kind, r.Name)
}

// maxKeyLen is the longest key a ConfigMap accepts.
const maxKeyLen = 253

// The prefixes of the entries the parts keep in the state (state.EntryKind).
const (
	HoldPrefix    = "hold."
	StripPrefix   = "strip."
	PendingPrefix = "pending."
	PausePrefix   = "pause."
	// RollbackReadPrefix: "rbread.", what the pods a rollback started read.
	RollbackReadPrefix = "rbread."
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

// ConfigKindOf is the kind of config a state key belongs to: a config's entries, a hold's, a
// strip's and a rollback read's; "" for any other.
func ConfigKindOf(key string) string {
	for _, p := range []string{HoldPrefix, StripPrefix, RollbackReadPrefix} {
		if rest, ok := strings.CutPrefix(key, p); ok {
			kind, _, _ := strings.Cut(rest, ".")
			return kind
		}
	}
	return state.KindOf(key)
}

// ContentEntries is the kind of state entry of a workload and a config that holds a content hash
// (a hold, a strip, a rollback read): keyed only for a Secret, and as long as such a hash may be.
func ContentEntries(prefix string) state.EntryKind {
	return state.EntryKind{
		Prefix: prefix,
		MaxLen: func(k string) int {
			if ConfigKindOf(k) == policy.KindSecret {
				return confighash.KeyedLen
			}
			return confighash.PlainLen
		},
		Valid: func(k, v string) error {
			if err := confighash.ParseValue(v); err != nil {
				return err
			}
			if _, keyed := confighash.KeyIDOf(v); keyed && ConfigKindOf(k) != policy.KindSecret {
				return errors.New("only a Secret's entries hold keyed hashes")
			}
			return nil
		},
	}
}
