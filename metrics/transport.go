package metrics

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reloader/reloader/internal/kube"
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
	p, ok := kube.ParseAPIPath(r.URL.Path)
	if !ok || p.Resource == "" {
		return strings.ToLower(r.Method), "other"
	}
	resource, named := p.Resource, p.Name != ""
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
