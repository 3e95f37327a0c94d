// Package metrics owns the reloader's Prometheus metrics: one registry per process, no globals.
// Every name starts with reloader_; labels are low-cardinality kinds and results.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Reload results.
const (
	ResultSuccess = "success"
	ResultFailure = "failure"
	ResultDryRun  = "dry-run" // a reload --dry-run reported instead of doing
)

// Metrics holds every collector the reloader updates.
type Metrics struct {
	Registry *prometheus.Registry

	Reloads         *prometheus.CounterVec   // kind, result
	Coalesced       prometheus.Counter       // changes that joined an open window
	Pending         prometheus.Gauge         // workloads with an open window or queued reload
	Latency         *prometheus.HistogramVec // kind: change observed → workload patched
	Changes         *prometheus.CounterVec   // kind: config content changes detected
	StateEntries    *prometheus.GaugeVec     // configmap
	StateBytes      *prometheus.GaugeVec     // configmap
	StateWrites     *prometheus.CounterVec   // configmap, result
	StateMemoryOnly *prometheus.GaugeVec     // spare: entries no state shard had room for
	Leader          prometheus.Gauge
	OnDeleteSkipped *prometheus.CounterVec // kind: template changed but OnDelete strategy restarts nothing
	APIRequests     *prometheus.CounterVec // verb, resource: requests this process sent to the API server
	Rollouts        *Rollouts              // rollout outcomes and rollbacks (safe reloads)

	// Safe reloads (deferral.go).
	Deferred       *prometheus.GaugeVec   // reason: workloads whose due reload is held
	InvalidChanges *prometheus.CounterVec // kind: changes not rolled out because a declared key does not parse
	Stakater       *Stakater              // stakater Reloader's names for the same events (stakater.go)
	Alerts         *prometheus.CounterVec // result: sent, failed, dropped (package alert)

	byNamespace bool

	QueueDepth, QueueUnfinished, QueueLongest prometheus.Gauge
	QueueAdds, QueueRetries                   prometheus.Counter
	QueueLatency, QueueWorkDuration           prometheus.Histogram
}

// Option adjusts New.
type Option func(*Metrics)

// ByNamespace adds a namespace label to the reload counter and latency histogram
// (--metrics-by-namespace). Without it the label does not exist, keeping series few.
func ByNamespace() Option { return func(m *Metrics) { m.byNamespace = true } }

// New registers every collector, with the Go and process collectors and build info, on a fresh
// registry.
func New(version string, opts ...Option) *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{Registry: r}
	for _, o := range opts {
		o(m)
	}
	ns := func(labels ...string) []string {
		if m.byNamespace {
			return append(labels, "namespace")
		}
		return labels
	}
	*m = Metrics{
		Registry:    r,
		byNamespace: m.byNamespace,
		Stakater:    newStakater(),
		Alerts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_alerts_total", Help: "Reload alerts (ALERT_ON_RELOAD) by result: sent, failed (an error answer or no answer within the timeout), dropped (the queue was full).",
		}, []string{"result"}),
		Reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_reloads_total", Help: "Workload reloads by workload kind and result (and namespace with --metrics-by-namespace).",
		}, ns("kind", "result")),
		Coalesced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "reloader_coalesced_total", Help: "Config changes that joined an open coalescing window instead of causing a restart of their own.",
		}),
		Pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "reloader_pending_reloads", Help: "Workloads with a reload waiting in a coalescing window or the queue.",
		}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "reloader_reload_latency_seconds",
			Help:    "Time from a config change being observed to the workload being patched, coalescing window included.",
			Buckets: []float64{.005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, ns("kind")),
		Changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_config_changes_total", Help: "Content changes of ConfigMaps and Secrets detected against the stored state, by config kind.",
		}, []string{"kind"}),
		StateEntries: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reloader_state_entries", Help: "Entries in each state ConfigMap.",
		}, []string{"configmap"}),
		StateBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reloader_state_bytes", Help: "Bytes each state ConfigMap counts against its 800 KiB budget: every entry's key twice (managedFields name it again), its largest value and 16 (the API server limit is 1 MiB of data).",
		}, []string{"configmap"}),
		StateWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_state_writes_total", Help: "Batched writes of a state ConfigMap, by result (success, failure).",
		}, []string{"configmap", "result"}),
		StateMemoryOnly: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reloader_state_memory_only_entries",
			Help: "State entries no state ConfigMap has room for, kept in memory only and lost at a restart; spare=\"true\" for configs no workload reads.",
		}, []string{"spare"}),
		Leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "reloader_leader", Help: "1 while this replica acts (leader, or leader election off), else 0.",
		}),
		OnDeleteSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_ondelete_not_restarted_total", Help: "Reloads whose template change restarts no pod because the workload uses the OnDelete update strategy.",
		}, []string{"kind"}),
		APIRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_api_requests_total", Help: "Requests sent to the Kubernetes API server, by verb (get, list, watch, create, update, patch, delete) and resource.",
		}, []string{"verb", "resource"}),
	}
	m.Deferred, m.InvalidChanges = newDeferred(), newInvalidChanges()
	r.MustRegister(m.Deferred, m.InvalidChanges)
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "reloader_build_info", Help: "Always 1; the version label names the build.",
		ConstLabels: prometheus.Labels{"version": version},
	})
	build.Set(1)
	r.MustRegister(m.Reloads, m.Coalesced, m.Pending, m.Latency, m.Changes, m.StateEntries, m.StateBytes,
		m.StateWrites, m.StateMemoryOnly, m.Leader, m.OnDeleteSkipped, m.APIRequests, m.Alerts, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.MustRegister(newQueueCollectors(m)...)
	m.Rollouts = newRollouts(r)
	r.MustRegister(m.Stakater.collectors(m.byNamespace)...)
	return m
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// ObserveReload records one patched workload and how long after the change it happened.
func (m *Metrics) ObserveReload(kind, namespace string, since time.Time) {
	latency := time.Since(since)
	m.Reloads.WithLabelValues(m.labels(namespace, kind, ResultSuccess)...).Inc()
	m.Latency.WithLabelValues(m.labels(namespace, kind)...).Observe(latency.Seconds())
	m.Stakater.reload(kind, ResultSuccess, namespace, latency)
}

// CountReload records a reload attempt's result.
func (m *Metrics) CountReload(kind, result, namespace string) {
	m.Reloads.WithLabelValues(m.labels(namespace, kind, result)...).Inc()
	m.Stakater.reload(kind, result, namespace, -1)
}

// CountDryRun records a reload that --dry-run reported and did not do; stakater's counters,
// which count reloads done, are left alone.
func (m *Metrics) CountDryRun(kind, namespace string) {
	m.Reloads.WithLabelValues(m.labels(namespace, kind, ResultDryRun)...).Inc()
}

// ObserveStateWrite counts one write of a state ConfigMap (shard) and its result.
func (m *Metrics) ObserveStateWrite(shard string, err error) {
	result := ResultSuccess
	if err != nil {
		result = ResultFailure
	}
	m.StateWrites.WithLabelValues(shard, result).Inc()
}

func (m *Metrics) labels(namespace string, values ...string) []string {
	if m.byNamespace {
		return append(values, namespace)
	}
	return values
}

// Zero exports at 0, before their first event, the counter series a reloader serving these
// workload and config kinds can have: reloads and rollbacks by result, rollouts by outcome and
// config changes, so that a rate or an alert over them has a value from the start. Reloads
// labelled by namespace are left out: the namespaces are not known in advance.
func (m *Metrics) Zero(workloadKinds, configKinds, outcomes []string) {
	for _, kind := range workloadKinds {
		for _, result := range []string{ResultSuccess, ResultFailure} {
			if !m.byNamespace {
				m.Reloads.WithLabelValues(kind, result)
			}
			m.Rollouts.Rollbacks.WithLabelValues(kind, result)
		}
		for _, o := range outcomes {
			m.Rollouts.Outcomes.WithLabelValues(kind, o)
		}
	}
	for _, kind := range configKinds {
		m.Changes.WithLabelValues(kind)
	}
}
