package metrics

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Stakater holds the metrics stakater Reloader serves, under its names and labels, so that
// alerts and dashboards written for it keep working. They count the same events as ours:
// one reload is one workload patched (or refused), as in stakater, where one config change
// reloading three Deployments counts three.
type Stakater struct {
	Executed            *prometheus.CounterVec   // success: "true", "false"
	ExecutedByNamespace *prometheus.CounterVec   // success, namespace; served only by namespace
	Actions             *prometheus.CounterVec   // workload_kind, result: "success", "error"
	ActionLatency       *prometheus.HistogramVec // workload_kind
	Errors              *prometheus.CounterVec   // type: "handler_error"
	Retries             prometheus.Counter
	QueueLatency        prometheus.Histogram
	Reconciles          *prometheus.CounterVec   // result: "success", "error"
	ReconcileDuration   *prometheus.HistogramVec // result
	Skipped             *prometheus.CounterVec   // reason: "ignored_or_not_selected"
	EventsReceived      *prometheus.CounterVec   // event_type: add, update, delete; resource_type: configmaps, secrets
	EventsProcessed     *prometheus.CounterVec   // event_type: "unknown", as stakater; resource_type; result: "success"
	Scanned             *prometheus.CounterVec   // kind: workloads judged for a config change
	Matched             *prometheus.CounterVec   // kind: workloads a config change made due
}

func newStakater() *Stakater {
	s := &Stakater{
		Executed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_reload_executed_total", Help: "Workload reloads by success (true, false), as stakater Reloader counts them.",
		}, []string{"success"}),
		ExecutedByNamespace: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_reload_executed_total_by_namespace", Help: "Workload reloads by success and namespace, as stakater Reloader counts them.",
		}, []string{"success", "namespace"}),
		Actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_action_total", Help: "Workload reloads by workload kind and result (success, error), as stakater Reloader counts them.",
		}, []string{"workload_kind", "result"}),
		ActionLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "reloader_action_latency_seconds",
			Help:    "Time from a config change being observed to the workload being patched, by workload kind (stakater Reloader's name).",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"workload_kind"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_errors_total", Help: "Failed syncs by type (handler_error), as stakater Reloader counts them.",
		}, []string{"type"}),
		Retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "reloader_retries_total", Help: "Syncs queued again after a failure (stakater Reloader's name).",
		}),
		QueueLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "reloader_workqueue_latency_seconds", Help: "Time a key waits in the work queue (stakater Reloader's name).",
			Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
		}),
		Reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_reconcile_total", Help: "Syncs of a queue key by result (success, error), as stakater Reloader counts its handler runs.",
		}, []string{"result"}),
		ReconcileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "reloader_reconcile_duration_seconds",
			Help:    "Time one sync takes, by result (stakater Reloader's name).",
			Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}, []string{"result"}),
		Skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_skipped_total", Help: "Config events not acted on, by reason (ignored_or_not_selected: the namespace is out of the selection), as stakater Reloader counts them.",
		}, []string{"reason"}),
		EventsReceived: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_events_received_total", Help: "ConfigMap and Secret watch events by type (add, update, delete) and resource (configmaps, secrets), as stakater Reloader counts them.",
		}, []string{"event_type", "resource_type"}),
		EventsProcessed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_events_processed_total", Help: "Config syncs finished, by event type (unknown, as stakater Reloader labels them), resource and result (success).",
		}, []string{"event_type", "resource_type", "result"}),
		Scanned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_workloads_scanned_total", Help: "Workloads judged for a config change, by kind (stakater Reloader's name; it counts every workload of the namespace, this reloader those that reference the config).",
		}, []string{"kind"}),
		Matched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_workloads_matched_total", Help: "Workloads a config change made due for a reload, by kind (stakater Reloader's name).",
		}, []string{"kind"}),
	}
	// stakater creates both series at zero, so an alert on success="false" has a series to
	// compare from the first scrape on, and increase() sees the first failure.
	s.Executed.WithLabelValues("true")
	s.Executed.WithLabelValues("false")
	return s
}

// collectors lists what New registers; the by-namespace counter only with byNamespace, as
// stakater registers it only with METRICS_COUNT_BY_NAMESPACE=enabled.
func (s *Stakater) collectors(byNamespace bool) []prometheus.Collector {
	cs := []prometheus.Collector{s.Executed, s.Actions, s.ActionLatency, s.Errors, s.Retries, s.QueueLatency,
		s.Reconciles, s.ReconcileDuration, s.Skipped, s.EventsReceived, s.EventsProcessed, s.Scanned, s.Matched}
	if byNamespace {
		cs = append(cs, s.ExecutedByNamespace)
	}
	return cs
}

// reload counts one workload reload attempt; latency is negative when unknown.
func (s *Stakater) reload(kind, result, namespace string, latency time.Duration) {
	success, action := "true", "success"
	if result != ResultSuccess {
		success, action = "false", "error"
	}
	s.Executed.WithLabelValues(success).Inc()
	s.ExecutedByNamespace.WithLabelValues(success, namespace).Inc()
	s.Actions.WithLabelValues(kind, action).Inc()
	if latency >= 0 {
		s.ActionLatency.WithLabelValues(kind).Observe(latency.Seconds())
	}
}

// SyncFailed counts a failed sync that will be retried, as stakater's handler_error and retry.
func (s *Stakater) SyncFailed() {
	s.Errors.WithLabelValues("handler_error").Inc()
	s.Retries.Inc()
}

// Reconciled counts one sync of a queue key and its duration; failed: it returned an error
// that will be retried.
func (s *Stakater) Reconciled(failed bool, d time.Duration) {
	result := "success"
	if failed {
		result = "error"
	}
	s.Reconciles.WithLabelValues(result).Inc()
	s.ReconcileDuration.WithLabelValues(result).Observe(d.Seconds())
}

// ConfigEvent counts a watch event of a config kind ("ConfigMap", "Secret"): add, update or
// delete; outside the selection, it is also skipped.
func (s *Stakater) ConfigEvent(eventType, kind string, selected bool) {
	s.EventsReceived.WithLabelValues(eventType, resourceOf(kind)).Inc()
	if !selected {
		s.Skipped.WithLabelValues("ignored_or_not_selected").Inc()
	}
}

// ConfigSynced counts a config sync that finished; the event type is unknown by then, as in
// stakater.
func (s *Stakater) ConfigSynced(kind string) {
	s.EventsProcessed.WithLabelValues("unknown", resourceOf(kind), ResultSuccess).Inc()
}

// Judged counts, for one config change, the workloads of each kind judged and those made due.
func (s *Stakater) Judged(scanned, matched map[string]int) {
	for kind, n := range scanned {
		s.Scanned.WithLabelValues(kind).Add(float64(n))
	}
	for kind, n := range matched {
		s.Matched.WithLabelValues(kind).Add(float64(n))
	}
}

// resourceOf is stakater's resource_type for a config kind: the API resource.
func resourceOf(kind string) string {
	switch kind {
	case "ConfigMap":
		return "configmaps"
	case "Secret":
		return "secrets"
	}
	return strings.ToLower(kind) + "s"
}

// queueLatency observes both our queue-wait histogram and stakater's.
type queueLatency struct{ ours, theirs prometheus.Observer }

func (q queueLatency) Observe(v float64) {
	q.ours.Observe(v)
	q.theirs.Observe(v)
}
