package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func serve(m *Metrics) string {
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}

func TestStakaterMetricsCountEachReloadUnderStakatersNames(t *testing.T) {
	tests := []struct {
		name      string
		opts      []Option
		want      []string
		forbidden []string
	}{
		{"by default", nil, []string{
			`reloader_reload_executed_total{success="true"} 1`,
			`reloader_reload_executed_total{success="false"} 1`,
			`reloader_action_total{result="success",workload_kind="Deployment"} 1`,
			`reloader_action_total{result="error",workload_kind="StatefulSet"} 1`,
			`reloader_action_latency_seconds_count{workload_kind="Deployment"} 1`,
		}, []string{"reloader_reload_executed_total_by_namespace"}},
		{"by namespace", []Option{ByNamespace()}, []string{
			`reloader_reload_executed_total_by_namespace{namespace="team-a",success="true"} 1`,
			`reloader_reload_executed_total_by_namespace{namespace="team-b",success="false"} 1`,
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New("test", tt.opts...)
			m.ObserveReload("Deployment", "team-a", time.Now())
			m.CountReload("StatefulSet", ResultFailure, "team-b")
			body := serve(m)
			for _, want := range tt.want {
				if !strings.Contains(body, want) {
					t.Errorf("/metrics lacks %s", want)
				}
			}
			for _, no := range tt.forbidden {
				if strings.Contains(body, no) {
					t.Errorf("/metrics serves %s", no)
				}
			}
		})
	}
}

func TestStakaterFailureSeriesExistsAtZeroBeforeAnyReload(t *testing.T) {
	body := serve(New("test"))
	for _, want := range []string{`reloader_reload_executed_total{success="false"} 0`, `reloader_reload_executed_total{success="true"} 0`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
