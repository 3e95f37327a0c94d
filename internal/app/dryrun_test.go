package app

import (
	"net/http"
	"testing"
)

// The dry run's guard lets reads, Events and self-reviews through and refuses every other write:
// workloads, Jobs, the state ConfigMap (even one named "events"), the hash key Secret, the Lease.
func TestTheDryRunGuardRefusesEveryWriteButEvents(t *testing.T) {
	cases := []struct {
		method, path string
		sent         bool
	}{
		{http.MethodGet, "/apis/apps/v1/namespaces/shop/deployments/web", true},
		{http.MethodGet, "/api/v1/namespaces/shop/configmaps?watch=true", true},
		{http.MethodPost, "/api/v1/namespaces/shop/events", true},
		{http.MethodPatch, "/api/v1/namespaces/shop/events/web.1a2b", true},
		{http.MethodPost, "/apis/events.k8s.io/v1/namespaces/shop/events", true},
		{http.MethodPost, "/k8s/clusters/c-1/api/v1/namespaces/shop/events", true},
		{http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", true},
		{http.MethodPatch, "/apis/apps/v1/namespaces/shop/deployments/web", false},
		{http.MethodDelete, "/apis/batch/v1/namespaces/shop/jobs/migrate", false},
		{http.MethodPost, "/apis/batch/v1/namespaces/shop/jobs", false},
		{http.MethodPost, "/api/v1/namespaces/shop/configmaps", false},
		{http.MethodPatch, "/api/v1/namespaces/shop/configmaps/reloader-state", false},
		{http.MethodPatch, "/api/v1/namespaces/shop/configmaps/events", false},
		{http.MethodPost, "/api/v1/namespaces/shop/secrets", false},
		{http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/shop/leases/reloader", false},
		{http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", false},
	}
	for _, c := range cases {
		sent := false
		rt := dryRunGuard(roundTripFunc(func(*http.Request) (*http.Response, error) {
			sent = true
			return &http.Response{StatusCode: http.StatusOK}, nil
		}))
		req, err := http.NewRequest(c.method, "https://api.example"+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = rt.RoundTrip(req)
		if sent != c.sent || (err != nil) == c.sent {
			t.Errorf("%s %s: sent %v (err %v), want sent %v", c.method, c.path, sent, err, c.sent)
		}
	}
}
