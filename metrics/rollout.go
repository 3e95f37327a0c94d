package metrics

import "github.com/prometheus/client_golang/prometheus"

// Rollouts counts the outcomes of followed rollouts and the rollbacks made.
type Rollouts struct {
	Outcomes  *prometheus.CounterVec // kind, outcome: succeeded, failed, timed-out, superseded
	Rollbacks *prometheus.CounterVec // kind, result: success, failure
	Duration  *prometheus.HistogramVec
}

// newRollouts registers the rollout collectors on r.
func newRollouts(reg *prometheus.Registry) *Rollouts {
	r := &Rollouts{
		Outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_rollouts_total",
			Help: "Rollouts followed after a reload, by workload kind and outcome (succeeded, failed, timed-out, superseded).",
		}, []string{"kind", "outcome"}),
		Rollbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_rollbacks_total",
			Help: "Reloads undone after a failed or timed-out rollout, by workload kind and result (success, failure).",
		}, []string{"kind", "result"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "reloader_rollout_duration_seconds",
			Help:    "Time from a reload's patch to its rollout's outcome, by workload kind and outcome.",
			Buckets: []float64{1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800},
		}, []string{"kind", "outcome"}),
	}
	reg.MustRegister(r.Outcomes, r.Rollbacks, r.Duration)
	return r
}
