package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// postSink records the bodies posted to it.
type postSink struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newPostSink(t *testing.T) *postSink {
	s := &postSink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.bodies = append(s.bodies, string(b))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *postSink) posts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

// The binary reads stakater's ALERT_* variables: a reload posts one Slack message, counted in
// reloader_alerts_total, and the webhook URL (its token) appears in no log line.
func TestTheBinaryPostsAnAlertPerReloadFromStakatersVariables(t *testing.T) {
	t.Parallel()
	ns := setup(t)
	sink := newPostSink(t)
	p := launchContainer(t, corev1.Container{Args: []string{"--port=0", "--namespace=" + ns, "--coalesce-period=0"}}, map[string]string{
		"ALERT_ON_RELOAD": "true", "ALERT_SINK": "slack", "ALERT_WEBHOOK_URL": sink.srv.URL + "/services/T0/B0/SECRET-TOKEN",
		"ALERT_ADDITIONAL_INFO": "e2e-cluster"}, cluster.Kubeconfig)
	p.waitReady(t)
	waitFor(t, 10*time.Second, "first hashes recorded", func() (bool, error) { return stateRecorded(t, ns), nil })
	waitReloaded(t, ns, update(t, ns, "1"))
	waitFor(t, 10*time.Second, "the alert", func() (bool, error) { return len(sink.posts()) > 0, nil })
	waitFor(t, 10*time.Second, "the alert counted", func() (bool, error) {
		return strings.Contains(p.metrics(t), `reloader_alerts_total{result="sent"} 1`), nil
	})
	posts := sink.posts()
	if len(posts) != 1 || !strings.Contains(posts[0], `"text":"e2e-cluster : Reloader detected changes in *app-config* of type *CONFIGMAP* in namespace *`+ns) {
		t.Fatalf("posts %v", posts)
	}
	if strings.Contains(p.stderr.String(), "SECRET-TOKEN") {
		t.Fatalf("the webhook URL is in the log:\n%s", p.stderr.String())
	}
}

// --webhook-url: a change calls the URL with stakater's body, and the Deployment is not touched.
func TestTheBinaryWithWebhookURLCallsItInsteadOfReloading(t *testing.T) {
	t.Parallel()
	ns := setup(t)
	sink := newPostSink(t)
	start(t, ns, "--coalesce-period", "0", "--webhook-url", sink.srv.URL+"/hook")
	waitFor(t, 10*time.Second, "first hashes recorded", func() (bool, error) { return stateRecorded(t, ns), nil })
	before := deployment(t, ns).Generation
	hash := update(t, ns, "1")
	waitFor(t, 10*time.Second, "the webhook called", func() (bool, error) { return len(sink.posts()) > 0, nil })
	// The state records the change once the call is answered: the change is fully handled.
	waitFor(t, 10*time.Second, "the change recorded", func() (bool, error) {
		cm, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "reloader-state", metav1.GetOptions{})
		return err == nil && cm.Data["v1.ConfigMap_app-config"] == hash, nil
	})
	if posts := sink.posts(); len(posts) != 1 || posts[0] != `{"webhook":"update successful"}` {
		t.Fatalf("posts %v", posts)
	}
	if d := deployment(t, ns); d.Generation != before || envVar(d) != "" {
		t.Fatalf("the Deployment was reloaded (generation %d → %d)", before, d.Generation)
	}
}
