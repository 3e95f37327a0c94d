package reloader

import (
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/reloader/reloader/alert"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/report"
	"github.com/reloader/reloader/reloader/workload"
)

// outcomes records how a reload's patch ended, in the metrics, Events, the log and alerts: the
// last step of a workload sync.
type outcomes struct {
	reports *report.Reporter
	metrics *metrics.Metrics
	log     *slog.Logger
	alerts  *alert.Sender // nil: no ALERT_ON_RELOAD
	view    func(kind *workload.Kind, obj any) (workload.View, bool)
}

// failed reports a failure once per workload and reason, counts it, and picks when to retry:
// soon for a transient error, later for a refusal.
func (o *outcomes) failed(w workload.View, reason, message string, err error) error {
	o.metrics.CountReload(w.Kind.Name, metrics.ResultFailure, w.Key.Namespace)
	o.reports.Warn(w.Obj, string(w.Meta.GetUID()), reason, message)
	err = fmt.Errorf("patch %s: %w", w.Key, err)
	if reason == "ReloadReverted" || workload.Refused(err) {
		return workload.RetryLater{Err: err}
	}
	return err
}

// reverted reports whether the object the patch returned still lacks a change: an admission
// webhook may have undone it.
func (o *outcomes) reverted(w workload.View, out any, changes []policy.Change) bool {
	if out == nil {
		return false
	}
	after, ok := o.view(w.Kind, out)
	if !ok {
		return false
	}
	for _, ch := range changes {
		m := after.Target.Marker(after.Meta.GetAnnotations(), after.Tmpl, ch.Ref, ch.Value)
		if m == policy.Stale || ch.Value != "" && m != policy.Current {
			return true
		}
	}
	return false
}

// reloaded records a successful patch: the metrics, the alert, the audit Event and a log line;
// since is when the oldest of its changes was seen, if known. A workload
// whose update strategy is OnDelete restarts nothing on a template change; that is said, not
// hidden.
func (o *outcomes) reloaded(w workload.View, changes []policy.Change, what, why string, since time.Time, known bool) {
	o.reports.Clear(string(w.Meta.GetUID()), "ReloadFailed", "ReloadReverted")
	if known {
		o.metrics.ObserveReload(w.Kind.Name, w.Key.Namespace, since)
	} else {
		o.metrics.CountReload(w.Kind.Name, metrics.ResultSuccess, w.Key.Namespace)
	}
	o.alert(w, changes)
	o.reports.Event(w.Obj, corev1.EventTypeNormal, "Reloaded", "Reloaded for "+what)
	o.log.Info("reloaded workload", "kind", w.Kind.Name, "namespace", w.Key.Namespace, "name", w.Key.Name, "configs", what, "why", why)
	if w.Kind.OnDelete(w.Obj) {
		o.metrics.OnDeleteSkipped.WithLabelValues(w.Kind.Name).Inc()
		o.reports.Event(w.Obj, corev1.EventTypeWarning, "ReloadNeedsPodDeletion",
			"The pod template was updated, but the OnDelete update strategy restarts no pod: delete the pods to load the new config")
		o.log.Warn("template updated but OnDelete strategy restarts no pod", "kind", w.Kind.Name, "namespace", w.Key.Namespace, "name", w.Key.Name)
	}
}

// alert queues an alert about a reload (ALERT_ON_RELOAD) naming the workload and the
// configs that caused it, never their content. Queuing never waits for the sink.
func (o *outcomes) alert(w workload.View, changes []policy.Change) {
	if o.alerts == nil {
		return
	}
	refs := make([]alert.ConfigRef, len(changes))
	for i, ch := range changes {
		refs[i] = alert.ConfigRef{Kind: ch.Ref.Kind, Name: ch.Ref.Name}
	}
	o.alerts.Send(alert.ReloadMessage(refs, w.Key.Namespace, w.Kind.Name, w.Key.Name))
}
