package reloader_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	clientfeatures "k8s.io/client-go/features"
)

// configRequests counts the list and watch requests for ConfigMaps and Secrets that pass the
// transport: a list ends "/configmaps" without watch=true, a streamed list is a watch that asks
// for the initial events.
type configRequests struct {
	next http.RoundTripper

	mu              sync.Mutex
	lists, streamed int
}

func (c *configRequests) RoundTrip(req *http.Request) (*http.Response, error) {
	p, q := req.URL.Path, req.URL.Query()
	if req.Method == http.MethodGet && (strings.HasSuffix(p, "/configmaps") || strings.HasSuffix(p, "/secrets")) {
		c.mu.Lock()
		switch {
		case q.Get("watch") != "true":
			c.lists++
		case q.Get("sendInitialEvents") == "true":
			c.streamed++
		}
		c.mu.Unlock()
	}
	return c.next.RoundTrip(req)
}

func (c *configRequests) counts() (lists, streamed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lists, c.streamed
}

// noWatchList is client-go's feature gates with WatchListClient off: informers list, as they do
// against an API server that cannot stream (before Kubernetes 1.34).
type noWatchList struct{ clientfeatures.Gates }

func (g noWatchList) Enabled(f clientfeatures.Feature) bool {
	return f != clientfeatures.WatchListClient && g.Gates.Enabled(f)
}

// The config informers stream their initial lists (a watch with sendInitialEvents): each config
// is decoded, hashed and stripped as it arrives, where a list would be decoded whole before the
// transform saw any of it, the start-up's largest memory. Streamed or listed, a start records
// every config.
func TestAStartRecordsEveryConfigWhetherItsListIsStreamedOrListed(t *testing.T) {
	// Not parallel: client-go's feature gates are the process's.
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			if !stream {
				gates := clientfeatures.FeatureGates()
				clientfeatures.ReplaceFeatureGates(noWatchList{gates})
				t.Cleanup(func() { clientfeatures.ReplaceFeatureGates(gates) })
			}
			ns := cluster.NewNamespace(t)
			const configMaps, secrets = 30, 10
			var names []string
			for i := range configMaps {
				names = append(names, fmt.Sprintf("cm-%02d", i))
				createConfigMap(t, ns, names[i], map[string]string{"k": strings.Repeat("v", 4<<10)})
			}
			for i := range secrets {
				createSecret(t, ns, fmt.Sprintf("s-%02d", i), map[string]string{"k": "v"})
			}
			// Auto: app reads every config, and the state keeps entries only for read ones.
			createDeployment(t, ns, "app", 0, map[string]string{"reloader.stakater.com/auto": "true"}, func(s *corev1.PodSpec) {
				for _, n := range names {
					s.Containers[0].EnvFrom = append(s.Containers[0].EnvFrom,
						corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: n}}})
				}
				for i := range secrets {
					s.Containers[0].EnvFrom = append(s.Containers[0].EnvFrom, corev1.EnvFromSource{
						SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("s-%02d", i)}}})
				}
			})
			reqs := &configRequests{}
			r := startController(t, ns, controllerOpts{wrap: func(rt http.RoundTripper) http.RoundTripper {
				reqs.next = rt
				return reqs
			}})
			r.settle()
			for _, n := range names {
				if r.ctrl.Recorded("v1.ConfigMap_"+n) == "" {
					t.Fatalf("ConfigMap %s is not recorded after the start", n)
				}
			}
			for i := range secrets {
				if n := fmt.Sprintf("s-%02d", i); r.ctrl.Recorded("v1.Secret_"+n) == "" {
					t.Fatalf("Secret %s is not recorded after the start", n)
				}
			}
			lists, streamed := reqs.counts()
			if stream && (lists != 0 || streamed != 2) {
				t.Fatalf("the config informers made %d lists and %d streamed lists, want 0 and 2 (one per kind)", lists, streamed)
			}
			if !stream && (lists != 2 || streamed != 0) {
				t.Fatalf("without WatchListClient the config informers made %d lists and %d streamed lists, want 2 and 0", lists, streamed)
			}
		})
	}
}
