package reloader_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reloader/reloader/alert"
	"github.com/reloader/reloader/reloader"
)

// alertSink stands in for Slack: it records the bodies it is posted, optionally after hanging.
type alertSink struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newAlertSink(t *testing.T, hang <-chan struct{}) *alertSink {
	s := &alertSink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, string(body))
		s.mu.Unlock()
		if hang != nil {
			<-hang
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *alertSink) posts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

func withAlerts(t *testing.T, url string, timeout time.Duration) func(*reloader.Options) {
	return func(o *reloader.Options) {
		s, err := alert.New(alert.Config{Sink: alert.SinkSlack, URL: url, AdditionalInfo: "test-cluster"},
			alert.Options{Timeout: timeout, Log: o.Log, Count: func(r string) { o.Metrics.Alerts.WithLabelValues(r).Inc() }})
		if err != nil {
			t.Fatal(err)
		}
		o.Alerts = s
	}
}

func TestAReloadPostsOneAlertNamingTheWorkloadAndConfigButNoValue(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	sink := newAlertSink(t, nil)
	createSecret(t, ns, "db", map[string]string{"password": "hunter2-initial"})
	createDeployment(t, ns, "web", 0, named("secret", "db"), nil)
	startController(t, ns, controllerOpts{tweak: withAlerts(t, sink.srv.URL, 5*time.Second)})
	settle(t)
	if n := len(sink.posts()); n != 0 {
		t.Fatalf("%d alerts before any change, want none: %v", n, sink.posts())
	}

	hash := updateSecret(t, ns, "db", map[string]string{"password": "hunter2-rotated"})
	waitEnv(t, ns, "web", "_RELOADER_-secret-db", hash)
	waitFor(t, 10*time.Second, "an alert", func() (bool, error) { return len(sink.posts()) > 0, nil })
	settle(t)
	posts := sink.posts()
	if len(posts) != 1 {
		t.Fatalf("%d alerts for one reload, want 1: %v", len(posts), posts)
	}
	want := "test-cluster : Reloader detected changes in *db* of type *SECRET* in namespace *" + ns + "*. Hence reloaded *web* of type *Deployment*"
	if !strings.Contains(posts[0], want) {
		t.Fatalf("alert %s\nwant it to contain %s", posts[0], want)
	}
	if strings.Contains(posts[0], "hunter2") || strings.Contains(posts[0], hash) {
		t.Fatalf("the alert carries the Secret's value or hash: %s", posts[0])
	}
}

// A sink that never answers holds up no reload: three changes in a row each reload while the
// first alert is still hanging.
func TestAHangingAlertSinkDelaysNoReload(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	hang := make(chan struct{})
	sink := newAlertSink(t, hang)
	t.Cleanup(func() { close(hang) })
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	startController(t, ns, controllerOpts{tweak: withAlerts(t, sink.srv.URL, time.Hour)})
	settle(t)
	for _, v := range []string{"1", "2", "3"} {
		began := time.Now()
		waitEnv(t, ns, "web", cmVar, updateConfigMap(t, ns, "app-config", map[string]string{"v": v}))
		if took := time.Since(began); took > 5*time.Second {
			t.Fatalf("reload %s took %s with a hanging alert sink", v, took)
		}
	}
	if n := len(sink.posts()); n != 1 {
		t.Fatalf("the sink got %d posts; want exactly 1, still hanging (the positive control that it hangs)", n)
	}
}
