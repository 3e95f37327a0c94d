package metrics

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// instrumented counts every API request by verb and resource. client-go's own request metrics
// carry only method and host, which cannot tell a LIST of Deployments from a GET of a ConfigMap.
type instrumented struct {
	next     http.RoundTripper
	requests *prometheus.CounterVec
}

// InstrumentTransport wraps a Kubernetes client transport; use it with rest.Config.Wrap.
func (m *Metrics) InstrumentTransport(next http.RoundTripper) http.RoundTripper {
	return &instrumented{next: next, requests: m.APIRequests}
}

func (t *instrumented) RoundTrip(r *http.Request) (*http.Response, error) {
	verb, resource := classify(r)
	t.requests.WithLabelValues(verb, resource).Inc()
	return t.next.RoundTrip(r)
}

// classify maps a request to its Kubernetes verb and resource, in the way the API server's
// audit log names them: /api/v1/namespaces/ns/configmaps/x with GET is (get, configmaps).
func classify(r *http.Request) (verb, resource string) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return strings.ToLower(r.Method), "other"
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	if len(parts) == 0 {
		return strings.ToLower(r.Method), "other"
	}
	resource, named := parts[0], len(parts) > 1
	switch r.Method {
	case http.MethodGet:
		switch {
		case r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1":
			return "watch", resource
		case named:
			return "get", resource
		}
		return "list", resource
	case http.MethodPost:
		return "create", resource
	case http.MethodPut:
		return "update", resource
	case http.MethodPatch:
		return "patch", resource
	case http.MethodDelete:
		return "delete", resource
	}
	return strings.ToLower(r.Method), resource
}
