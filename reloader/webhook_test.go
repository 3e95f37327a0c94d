package reloader_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/reloader/reloader/alert"
	"github.com/reloader/reloader/reloader"
)

// webhookSink answers the first fail calls with 503, then 200, and records the bodies of all.
type webhookSink struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []string
	fail   int
}

func newWebhookSink(t *testing.T, fail int) *webhookSink {
	s := &webhookSink{fail: fail}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 200)
		n, _ := r.Body.Read(b)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.bodies = append(s.bodies, string(b[:n]))
		if len(s.bodies) <= s.fail {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *webhookSink) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

func withWebhook(url string) func(*reloader.Options) {
	return func(o *reloader.Options) { o.Webhook = alert.Webhook{URL: url, Timeout: 5 * time.Second} }
}

// --webhook-url, as in stakater: a config change calls the URL with stakater's body, and no
// workload is touched. A refused call is retried; a restart calls nothing for a config that did
// not change, and once for one that changed while the reloader was down.
func TestWebhookURLIsCalledOnAChangeInsteadOfReloading(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	sink := newWebhookSink(t, 1)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	before := getDeployment(t, ns, "web").Generation
	first := startController(t, ns, controllerOpts{tweak: withWebhook(sink.srv.URL)})
	settle(t)
	if n := sink.calls(); n != 0 {
		t.Fatalf("%d webhook calls at start with nothing changed, want 0", n)
	}

	updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitFor(t, 30*time.Second, "the webhook answered 200 after one 503", func() (bool, error) { return sink.calls() == 2, nil })
	settle(t)
	if n := sink.calls(); n != 2 {
		t.Fatalf("%d webhook calls for one change with one refusal, want 2", n)
	}
	if sink.bodies[1] != `{"webhook":"update successful"}` {
		t.Fatalf("webhook body %q", sink.bodies[1])
	}
	wantReloads(t, ns, "web", before, 0)

	first.stop(t)
	second := startController(t, ns, controllerOpts{tweak: withWebhook(sink.srv.URL)})
	settle(t)
	second.stop(t)
	if n := sink.calls(); n != 2 {
		t.Fatalf("a restart with nothing changed called the webhook (%d calls, want 2)", n)
	}
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"}) // while down
	startController(t, ns, controllerOpts{tweak: withWebhook(sink.srv.URL)})
	waitFor(t, 30*time.Second, "the change made while down notified", func() (bool, error) { return sink.calls() == 3, nil })
	settle(t)
	if n := sink.calls(); n != 3 {
		t.Fatalf("%d webhook calls, want 3", n)
	}
	wantReloads(t, ns, "web", before, 0)
}
