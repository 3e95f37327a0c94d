package reloader

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
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

// validation is the part that keeps content that does not validate from being rolled out: its
// Warning, the workloads a replaced valid content did not reach, and the hold on a workload
// whose pods read such content. It judges dependents through the controller's rule
// (dependents) and reads configs through its cache (lookup).
type validation struct {
	underway   sync.Map         // config key → *configRecord: its valid content while reloads for it are due
	records    *configs.Records // records a config's first content
	reports    *reporter
	log        *slog.Logger
	counter    *prometheus.CounterVec // reloader_invalid_changes_total, by kind
	gates      *gates
	enqueue    func(key)
	dependents func(k key, rec *configRecord) []workload.Dependent
	lookup     func(k key) *configRecord
	watched    func(configKind string) bool
	webhook    bool // --webhook-url: a change calls the URL instead of restarting workloads
}

// invalid handles a config sync of a record that failed validation: one Warning per content,
// counted once; nothing reloads and the state stays. Rollback holds on other content end, as any
// content seen ends them: the config sync lifts them after this (tracker.liftStale). valid
// clears it, so that the same invalid content arriving again is said again.
//
// A config the state has never seen is recorded as it is, invalid or not, as the first start
// records every config: that is the content its dependents are taken to run, so the next valid
// change differs from it and reloads.
func (v *validation) invalid(k key, rec *configRecord, fresh bool) {
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
			v.enqueue(w) // its sync finds nothing due and drops the hold (gates.go)
		}
	}
}

// rollingOut remembers the valid content of a config whose reloads are due (rec nil: the
// config is deleted, and nothing is remembered), for invalid.
func (v *validation) rollingOut(k key, rec *configRecord) {
	if rec == nil {
		v.underway.Delete(k)
		return
	}
	v.underway.Store(k, rec)
}

// stranded returns the last valid content of config k that was being rolled out, and the
// workloads that had yet to reload for it, judged by the same rule as any change. Kept until a
// valid content replaces it, so that every sync of the invalid content says the same.
func (v *validation) stranded(k key) (*configRecord, []key) {
	got, ok := v.underway.Load(k)
	if !ok {
		return nil, nil
	}
	last := got.(*configRecord)
	var out []key
	for _, d := range v.dependents(k, last) {
		if d.Reload {
			out = append(out, d.Workload)
		}
	}
	return last, out
}

// workloadNames names a few workloads of one namespace, and how many more there are.
func workloadNames(ws []key) string {
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

// valid clears the Warning of a config whose content validates again, so that the same
// invalid content arriving again is said again.
func (v *validation) valid(rec *configRecord) {
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

// holds holds w's due reload, and reports whether it did, when its pods read a config
// whose current content does not validate.
func (v *validation) holds(w workloadView) bool {
	bad := v.invalidUsed(w)
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

// invalidUsed names, sorted, the watched configs w's pod spec uses whose current content does
// not validate.
func (v *validation) invalidUsed(w workloadView) []string {
	var out []string
	for r := range w.Uses {
		if !v.watched(r.Kind) {
			continue
		}
		if rec := v.lookup(workload.ConfigKey(r, w.Key.Namespace)); rec != nil && rec.Invalid() != "" {
			out = append(out, r.Kind+" "+r.Name)
		}
	}
	slices.Sort(out)
	return out
}

// wake syncs the workloads of k's namespace held by invalid content, now that k's
// content is valid or gone, so that they reload if nothing else holds them. Those due for k
// itself are left to their coalescing window, which syncs them.
func (v *validation) wake(k key, due []key) {
	for _, w := range v.gates.deferrals.heldFor(k.Namespace, policy.ReasonInvalidConfig) {
		if !slices.Contains(due, w) {
			v.enqueue(w)
		}
	}
}

// forget drops what was remembered of config k's rollout.
func (v *validation) forget(k key) { v.underway.Delete(k) }
