package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// workqueueProvider exposes client-go's workqueue metrics under reloader_workqueue_*.
type workqueueProvider struct{ m *Metrics }

// WorkqueueProvider returns the provider to pass in a workqueue's config. The reloader has one
// queue, so the queue name is not a label.
func (m *Metrics) WorkqueueProvider() workqueue.MetricsProvider { return workqueueProvider{m} }

func (p workqueueProvider) NewDepthMetric(string) workqueue.GaugeMetric { return p.m.QueueDepth }
func (p workqueueProvider) NewAddsMetric(string) workqueue.CounterMetric {
	return p.m.QueueAdds
}
func (p workqueueProvider) NewLatencyMetric(string) workqueue.HistogramMetric {
	return queueLatency{ours: p.m.QueueLatency, theirs: p.m.Stakater.QueueLatency}
}
func (p workqueueProvider) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return p.m.QueueWorkDuration
}
func (p workqueueProvider) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return p.m.QueueUnfinished
}
func (p workqueueProvider) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return p.m.QueueLongest
}
func (p workqueueProvider) NewRetriesMetric(string) workqueue.CounterMetric { return p.m.QueueRetries }

// queueCollectors are created with the rest in New.
func newQueueCollectors(m *Metrics) []prometheus.Collector {
	m.QueueDepth = prometheus.NewGauge(prometheus.GaugeOpts{Name: "reloader_workqueue_depth", Help: "Keys waiting in the work queue."})
	m.QueueAdds = prometheus.NewCounter(prometheus.CounterOpts{Name: "reloader_workqueue_adds_total", Help: "Keys added to the work queue."})
	m.QueueRetries = prometheus.NewCounter(prometheus.CounterOpts{Name: "reloader_workqueue_retries_total", Help: "Keys re-queued after a failed sync."})
	m.QueueLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "reloader_workqueue_queue_duration_seconds",
		Help: "Time a key waits in the queue before a worker takes it.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)})
	m.QueueWorkDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "reloader_workqueue_work_duration_seconds",
		Help: "Time one sync takes.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)})
	m.QueueUnfinished = prometheus.NewGauge(prometheus.GaugeOpts{Name: "reloader_workqueue_unfinished_work_seconds",
		Help: "Seconds of work in progress not yet observed by work_duration; large values mean a stuck sync."})
	m.QueueLongest = prometheus.NewGauge(prometheus.GaugeOpts{Name: "reloader_workqueue_longest_running_processor_seconds",
		Help: "How long the longest running sync has been running."})
	return []prometheus.Collector{m.QueueDepth, m.QueueAdds, m.QueueRetries, m.QueueLatency, m.QueueWorkDuration, m.QueueUnfinished, m.QueueLongest}
}
