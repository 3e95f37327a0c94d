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
