package metrics

import (
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
	cs := []prometheus.Collector{s.Executed, s.Actions, s.ActionLatency, s.Errors, s.Retries, s.QueueLatency}
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

// queueLatency observes both our queue-wait histogram and stakater's.
type queueLatency struct{ ours, theirs prometheus.Observer }

func (q queueLatency) Observe(v float64) {
	q.ours.Observe(v)
	q.theirs.Observe(v)
}
