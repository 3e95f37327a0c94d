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

// Every metric name stakater Reloader serves (internal/pkg/metrics/prometheus.go at its main
// branch, 2026-11) is served here, with its labels, once the events it counts happen; the
// workqueue depth and adds are ours under the same name. A dashboard built on stakater finds
// each one.
func TestEveryStakaterMetricNameIsServedWithItsLabels(t *testing.T) {
	m := New("test", ByNamespace())
	m.ObserveReload("Deployment", "team-a", time.Now())
	m.Stakater.SyncFailed()
	m.Stakater.Reconciled(false, time.Millisecond)
	m.Stakater.Reconciled(true, time.Millisecond)
	m.Stakater.ConfigEvent("update", "ConfigMap", true)
	m.Stakater.ConfigEvent("add", "Secret", false)
	m.Stakater.ConfigSynced("Secret")
	m.Stakater.Judged(map[string]int{"Deployment": 3}, map[string]int{"Deployment": 1})
	m.WorkqueueProvider().NewLatencyMetric("").Observe(0.01)
	m.QueueAdds.Inc()
	body := serve(m)
	for _, want := range []string{
		`reloader_reload_executed_total{success="true"} 1`,
		`reloader_reload_executed_total_by_namespace{namespace="team-a",success="true"} 1`,
		`reloader_reconcile_total{result="success"} 1`,
		`reloader_reconcile_total{result="error"} 1`,
		`reloader_reconcile_duration_seconds_count{result="success"} 1`,
		`reloader_action_total{result="success",workload_kind="Deployment"} 1`,
		`reloader_action_latency_seconds_count{workload_kind="Deployment"} 1`,
		`reloader_skipped_total{reason="ignored_or_not_selected"} 1`,
		`reloader_workqueue_depth 0`,
		`reloader_workqueue_adds_total 1`,
		`reloader_workqueue_latency_seconds_count 1`,
		`reloader_errors_total{type="handler_error"} 1`,
		`reloader_retries_total 1`,
		`reloader_events_received_total{event_type="update",resource_type="configmaps"} 1`,
		`reloader_events_received_total{event_type="add",resource_type="secrets"} 1`,
		`reloader_events_processed_total{event_type="unknown",resource_type="secrets",result="success"} 1`,
		`reloader_workloads_scanned_total{kind="Deployment"} 3`,
		`reloader_workloads_matched_total{kind="Deployment"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
