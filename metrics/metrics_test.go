package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestNamespaceLabelIsOptIn(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		want string
	}{
		{"off by default", nil, `reloader_reloads_total{kind="Deployment",result="success"} 1`},
		{"on with ByNamespace", []Option{ByNamespace()}, `reloader_reloads_total{kind="Deployment",namespace="team-a",result="success"} 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New("test", tt.opts...)
			m.ObserveReload("Deployment", "team-a", time.Now())
			rec := httptest.NewRecorder()
			m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			body, _ := io.ReadAll(rec.Body)
			if !strings.Contains(string(body), tt.want) {
				t.Fatalf("/metrics lacks %s:\n%s", tt.want, body)
			}
		})
	}
}

// A counter a dashboard or an alert reads must exist before its first event; reloads by
// namespace cannot, since the namespaces are not known.
func TestZeroExportsTheCountersBeforeTheirFirstEvent(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      []Option
		want, not []string
	}{
		{"without namespaces", nil, []string{
			`reloader_reloads_total{kind="StatefulSet",result="failure"} 0`,
			`reloader_rollouts_total{kind="Deployment",outcome="timed-out"} 0`,
			`reloader_rollbacks_total{kind="StatefulSet",result="success"} 0`,
			`reloader_config_changes_total{kind="Secret"} 0`,
		}, nil},
		{"with namespaces", []Option{ByNamespace()}, []string{
			`reloader_rollbacks_total{kind="Deployment",result="failure"} 0`,
		}, []string{"reloader_reloads_total{"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New("test", tc.opts...)
			before := serve(m)
			if strings.Contains(before, "reloader_rollbacks_total{") {
				t.Fatalf("the control: reloader_rollbacks_total is served before Zero:\n%s", before)
			}
			m.Zero([]string{"Deployment", "StatefulSet"}, []string{"ConfigMap", "Secret"}, []string{"succeeded", "timed-out"})
			body := serve(m)
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("/metrics lacks %s", w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(body, n) {
					t.Errorf("/metrics serves %s… before a reload", n)
				}
			}
		})
	}
}
