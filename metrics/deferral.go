package metrics

import "github.com/prometheus/client_golang/prometheus"

// newDeferred counts the workloads whose due reload is held, by why: a maintenance window, a
// minimum interval, a pause period, a schedule that does not parse, or a config the pods read
// whose content does not validate.
func newDeferred() *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "reloader_reloads_deferred",
		Help: "Workloads whose due reload is held, by reason (window, min-interval, pause-period, invalid-schedule, invalid-config).",
	}, []string{"reason"})
}

// newInvalidChanges counts config changes not rolled out because a key declared by the
// reloader/validate annotation does not parse.
func newInvalidChanges() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reloader_invalid_config_changes_total",
		Help: "Config changes not rolled out because a key declared in reloader/validate does not parse, by config kind.",
	}, []string{"kind"})
}
