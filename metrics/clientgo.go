package metrics

import (
	"context"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// ClientGo returns adapters for client-go's rest-client metrics (rest_client_requests_total,
// rest_client_request_duration_seconds). client-go keeps them in a process-wide hook, so the
// caller registers them once, from main.
func (m *Metrics) ClientGo() clientmetrics.RegisterOpts {
	results := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total", Help: "HTTP requests to the API server, by status code, method and host.",
	}, []string{"code", "method", "host"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "rest_client_request_duration_seconds", Help: "API request latency, by verb and host.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	}, []string{"verb", "host"})
	m.Registry.MustRegister(results, latency)
	return clientmetrics.RegisterOpts{
		RequestResult:  resultAdapter{results},
		RequestLatency: latencyAdapter{latency},
	}
}

type resultAdapter struct{ c *prometheus.CounterVec }

func (a resultAdapter) Increment(_ context.Context, code, method, host string) {
	a.c.WithLabelValues(code, method, host).Inc()
}

type latencyAdapter struct{ h *prometheus.HistogramVec }

func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	a.h.WithLabelValues(verb, u.Host).Observe(d.Seconds())
}
