package safe

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/internal/report"
	"github.com/reloader/reloader/reloader/workload"
)

// Change validation: a config whose reloader/validate annotation declares the format of some
// keys is checked in the informer transform, the one place its content is seen. A record whose
// content does not parse reloads nothing: the config sync says why once, in a Warning Event on
// the config, and leaves the state at the last content fully rolled out, so the next valid
// change reloads and a revert to that content reloads nothing.
//
// Pods read a config's current content when they start, so a valid content replaced by one
// that does not parse before its reloads were done can no longer be rolled out: a restart would
// load the invalid one. The Warning names it and the workloads it did not reach, and their held
// reloads are dropped at once.

// Validation is the part that keeps content that does not validate from being rolled out: its
// Warning, the workloads a replaced valid content did not reach, and the invalid-content hold on
// a workload whose pods read such content (HoldsInvalid). It judges dependents through the
// controller's rule (Dependents) and reads configs through its cache (Cache).
type Validation struct {
	underway   sync.Map // config key → *configs.Record: its valid content while reloads for it are due
	records    Records  // records a config's first content
	reports    *report.Reporter
	log        *slog.Logger
	counter    *prometheus.CounterVec // reloader_invalid_changes_total, by kind
	gates      *Gates
	queue      Queue
	dependents Dependents
	cache      Cache
	watched    Watched
	webhook    bool // --webhook-url: a change calls the URL instead of restarting workloads
}

// Records records the first content seen of a config (configs.Records).
type Records interface {
	FirstSeen(k workload.Key, rec *configs.Record)
}

// Dependents judges the workloads that use a config's content (the controller's rule).
type Dependents interface {
	Dependents(k workload.Key, rec *configs.Record) []workload.Dependent
}

// Cache reads a config's current record; nil when it is not cached.
type Cache interface {
	Lookup(k workload.Key) *configs.Record
}

// Watched says whether a kind of config is watched.
type Watched interface {
	Watched(configKind string) bool
}

// ValidationDeps is what Validation is built from. Counter is reloader_invalid_changes_total;
// Gates holds the reloads Validation holds; Webhook is whether --webhook-url is set.
type ValidationDeps struct {
	Records    Records
	Reports    *report.Reporter
	Log        *slog.Logger
	Counter    *prometheus.CounterVec
	Gates      *Gates
	Queue      Queue
	Dependents Dependents
	Cache      Cache
	Watched    Watched
	Webhook    bool
}

// NewValidation builds the validation part.
func NewValidation(d ValidationDeps) *Validation {
	return &Validation{records: d.Records, reports: d.Reports, log: d.Log, counter: d.Counter, gates: d.Gates, queue: d.Queue,
		dependents: d.Dependents, cache: d.Cache, watched: d.Watched, webhook: d.Webhook}
}

// Invalid handles a config sync of a record that failed validation: one Warning per content,
// counted once; nothing reloads and the state stays. Rollback holds on other content end, as any
// content seen ends them: the config sync lifts them after this (Tracker.LiftStale). Valid
// clears it, so that the same invalid content arriving again is said again.
//
// A config the state has never seen is recorded as it is, invalid or not, as the first start
// records every config: that is the content its dependents are taken to run, so the next valid
// change differs from it and reloads.
func (v *Validation) Invalid(k workload.Key, rec *configs.Record, fresh bool) {
	v.records.FirstSeen(k, rec)
	last, stranded := v.stranded(k)
	msg := "Content " + workload.Short(rec.Hash()) + " not rolled out: " + rec.Invalid() + "; no workload is restarted for it"
	if v.webhook {
		msg = "Content " + workload.Short(rec.Hash()) + " not notified: " + rec.Invalid() + "; --webhook-url is not called for it"
	}
	if len(stranded) > 0 {
		msg += ". The last valid content, " + workload.Short(last.Hash()) + ", was replaced before " + workloadNames(stranded) +
			" reloaded for it and is not rolled out either: a restart would now load content that does not validate"
	}
	if v.reports.Warn(rec, string(rec.UID()), "InvalidConfig", msg) && fresh {
		v.counter.WithLabelValues(k.Kind).Inc()
		v.log.Warn("config change not rolled out: it does not validate", "kind", k.Kind, "namespace", k.Namespace,
			"name", k.Name, "hash", workload.Short(rec.Hash()), "problem", rec.Invalid(), "stranded", len(stranded))
	}
	for _, w := range stranded {
		if v.gates.deferrals.isHeld(w) {
			v.queue.Add(w) // its sync finds nothing due and drops the hold (gates.go)
		}
	}
}

// RollingOut remembers the valid content of a config whose reloads are due (rec nil: the
// config is deleted, and nothing is remembered), for Invalid.
func (v *Validation) RollingOut(k workload.Key, rec *configs.Record) {
	if rec == nil {
		v.underway.Delete(k)
		return
	}
	v.underway.Store(k, rec)
}

// stranded returns the last valid content of config k that was being rolled out, and the
// workloads that had yet to reload for it, judged by the same rule as any change. Kept until a
// valid content replaces it, so that every sync of the invalid content says the same.
func (v *Validation) stranded(k workload.Key) (*configs.Record, []workload.Key) {
	got, ok := v.underway.Load(k)
	if !ok {
		return nil, nil
	}
	last := got.(*configs.Record)
	var out []workload.Key
	for _, d := range v.dependents.Dependents(k, last) {
		if d.Reload {
			out = append(out, d.Workload)
		}
	}
	return last, out
}

// workloadNames names a few workloads of one namespace, and how many more there are.
func workloadNames(ws []workload.Key) string {
	const shown = 3
	names := make([]string, 0, shown)
	for _, w := range ws[:min(len(ws), shown)] {
		names = append(names, w.Kind+" "+w.Name)
	}
	out := strings.Join(names, ", ")
	if len(ws) > shown {
		out += fmt.Sprintf(" and %d more", len(ws)-shown)
	}
	return out
}

// Valid clears the Warning of a config whose content validates again, so that the same
// invalid content arriving again is said again.
func (v *Validation) Valid(rec *configs.Record) {
	if rec != nil {
		v.reports.Clear(string(rec.UID()), "InvalidConfig")
	}
}

// A restart for one config is a restart for all: pods read every config's current content when
// they start, so reloading a workload for a valid change would load another config's content
// that does not validate. A workload whose pod spec uses such a config is held (not restarted, no
// Job run or recreated) for any config until that content is fixed, reverted or the config
// deleted; it then reloads once, with everything due. The whole config counts, not only the keys
// the pod reads: the record keeps which content failed, not which keys, and a hold too many is
// safe where a restart too many is not. The hold is derived from the caches alone, so a restart
// of the reloader finds it again; it keeps no state entry, and says its Warning again.

// HoldsInvalid holds w's due reload, and reports whether it did, when its pods read a config
// whose current content does not validate.
func (v *Validation) HoldsInvalid(w workload.View) bool {
	bad := v.InvalidUsed(w)
	if len(bad) == 0 {
		// Not held, or no longer for this: should it recur, that is news.
		v.reports.Clear(string(w.Meta.GetUID()), workload.ReasonHeldInvalid)
		return false
	}
	v.gates.holdInvalid(w)
	// Said once per set of configs, not per change: the message names no content.
	names := strings.Join(bad, ", ")
	msg := "Reload held: the pods read " + names + ", whose current content does not validate (see its InvalidConfig Event); " +
		"a restart would load it. The reload happens once that content is fixed, reverted or the config deleted"
	if v.reports.Warn(w.Obj, string(w.Meta.GetUID()), workload.ReasonHeldInvalid, msg) {
		v.log.Warn("reload held: the pods read a config whose content does not validate", "kind", w.Kind.Name,
			"namespace", w.Key.Namespace, "name", w.Key.Name, "configs", names)
	}
	return true
}

// InvalidUsed names, sorted, the watched configs w's pod spec uses whose current content does
// not validate.
func (v *Validation) InvalidUsed(w workload.View) []string {
	var out []string
	for r := range w.Uses {
		if !v.watched.Watched(r.Kind) {
			continue
		}
		if rec := v.cache.Lookup(workload.ConfigKey(r, w.Key.Namespace)); rec != nil && rec.Invalid() != "" {
			out = append(out, r.Kind+" "+r.Name)
		}
	}
	slices.Sort(out)
	return out
}

// Wake syncs the workloads of k's namespace held by invalid content, now that k's
// content is valid or gone, so that they reload if nothing else holds them. Those due for k
// itself are left to their coalescing window, which syncs them.
func (v *Validation) Wake(k workload.Key, due []workload.Key) {
	for _, w := range v.gates.deferrals.heldFor(k.Namespace, policy.ReasonInvalidConfig) {
		if !slices.Contains(due, w) {
			v.queue.Add(w)
		}
	}
}

// Forget drops what was remembered of config k's rollout.
func (v *Validation) Forget(k workload.Key) { v.underway.Delete(k) }
