package jobs

import (
	"log/slog"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/reloader/reloader/reloader/internal/report"
	"github.com/reloader/reloader/reloader/workload"
)

// A suspended CronJob (spec.suspend: true) runs no Job for a reload: its owner stopped it
// running. Its due reload is held with its markers unwritten, so the rule still finds it due;
// its resume is an update that syncs it, and it then reloads once with everything due, or not
// at all if its configs came back to what its markers say. The hold is derived from the cache
// alone, so a restart of the reloader finds it again (and says its Event again).

// reasonHeldSuspended is the Warning on a suspended CronJob whose reload is held.
const reasonHeldSuspended = "ReloadHeldSuspended"

// Suspensions is the part that holds the reloads of suspended CronJobs.
type Suspensions struct {
	reports *report.Reporter
	log     *slog.Logger
}

// NewSuspensions returns the part, which says its Warnings through reports.
func NewSuspensions(reports *report.Reporter, log *slog.Logger) *Suspensions {
	return &Suspensions{reports: reports, log: log}
}

// Holds reports whether w's reload, due says whether one is, waits for the resume of its
// CronJob. It is said once per suspension, not per change.
func (s *Suspensions) Holds(w workload.View, due bool) bool {
	if _, ok := w.Obj.(*batchv1.CronJob); !ok {
		return false
	}
	if !Suspended(w.Obj) {
		s.reports.Clear(string(w.Meta.GetUID()), reasonHeldSuspended) // a later suspension is news
		return false
	}
	if !due {
		return false
	}
	msg := "Reload held: the CronJob is suspended (spec.suspend), so no Job is run for a config change. " +
		"When it is resumed, one Job runs if its configs still differ from what its job template's markers say"
	if s.reports.Warn(w.Obj, string(w.Meta.GetUID()), reasonHeldSuspended, msg) {
		s.log.Info("reload held: the CronJob is suspended", "kind", w.Kind.Name, "namespace", w.Key.Namespace, "name", w.Key.Name)
	}
	return true
}

// Suspended reports a CronJob whose spec.suspend is true.
func Suspended(obj any) bool {
	cj, ok := obj.(*batchv1.CronJob)
	return ok && cj.Spec.Suspend != nil && *cj.Spec.Suspend
}
