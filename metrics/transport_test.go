package metrics

import (
	"net/http"
	"net/url"
	"testing"
)

func TestClassifyNamesVerbAndResource(t *testing.T) {
	tests := []struct {
		method, url    string
		verb, resource string
	}{
		{"GET", "/api/v1/namespaces/a/configmaps?limit=500", "list", "configmaps"},
		{"GET", "/api/v1/configmaps?watch=true&resourceVersion=5", "watch", "configmaps"},
		{"GET", "/api/v1/namespaces/a/configmaps/reloader-state", "get", "configmaps"},
		{"PATCH", "/apis/apps/v1/namespaces/a/deployments/web", "patch", "deployments"},
		{"POST", "/api/v1/namespaces/a/events", "create", "events"},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/a/leases/reloader", "update", "leases"},
		{"GET", "/api/v1/namespaces/a", "get", "namespaces"},
		{"GET", "/api/v1/namespaces", "list", "namespaces"},
		{"GET", "/version", "get", "other"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			verb, resource := classify(&http.Request{Method: tt.method, URL: u})
			if verb != tt.verb || resource != tt.resource {
				t.Fatalf("classify = (%s, %s), want (%s, %s)", verb, resource, tt.verb, tt.resource)
			}
		})
	}
}
