package app

import (
	"errors"
	"net/http"
	"regexp"
	"strings"
)

// errDryRunWrite is the answer to a write a dry run would have sent.
var errDryRunWrite = errors.New("dry run: the reloader writes nothing but Events")

// dryRunGuard refuses, below every client, each request that could change the cluster, but
// Events and the start-up permission probe (a SelfSubjectAccessReview stores nothing): the
// controller's dry run (reloader.Options.DryRun) sends none, and this makes sure of it.
func dryRunGuard(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !dryRunMayWrite(r) {
			return nil, errDryRunWrite
		}
		return next.RoundTrip(r)
	})
}

// dryRunMayWrite: an Event (core or events.k8s.io), or a self-review of the reloader's rights.
// Contains, not HasPrefix: a kubeconfig may reach the API server under a path.
func dryRunMayWrite(r *http.Request) bool {
	p := r.URL.Path
	event := eventPath.MatchString(p)
	review := r.Method == http.MethodPost && strings.Contains(p, "/apis/authorization.k8s.io/") &&
		(strings.HasSuffix(p, "/selfsubjectaccessreviews") || strings.HasSuffix(p, "/selfsubjectrulesreviews"))
	return event || review
}

// eventPath is an Event's, or the Events', of a namespace, in the core or events.k8s.io API.
var eventPath = regexp.MustCompile(`(/api/v1|/apis/events\.k8s\.io/v1)/namespaces/[^/]+/events(/[^/]+)?$`)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
