package reloader_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads /metrics as Prometheus would and returns the value of the series of family name
// whose labels include want, and whether it exists.
func scrape(t *testing.T, r *running, name string, want map[string]string) (float64, bool) {
	t.Helper()
	rec := httptest.NewRecorder()
	r.metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	f, ok := families[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		return counterValue(m), true
	}
	return 0, false
}

func counterValue(m *dto.Metric) float64 {
	if m.Counter != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// stakater users alert on reloader_reload_executed_total{success="false"} > 0. It must have a
// series from the start (at 0, so the alert is quiet), count a reload that worked under
// success="true" (the positive control), and a refused one under success="false".
func TestStakaterFailureAlertFiresOnARefusedReload(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	r := startController(t, ns, controllerOpts{})
	settle(t)
	failed := map[string]string{"success": "false"}
	if v, ok := scrape(t, r, "reloader_reload_executed_total", failed); !ok || v != 0 {
		t.Fatalf(`reloader_reload_executed_total{success="false"} = %v (exists: %v) at start, want a series at 0`, v, ok)
	}

	waitEnv(t, ns, "web", cmVar, updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"}))
	settle(t)
	if v, _ := scrape(t, r, "reloader_reload_executed_total", map[string]string{"success": "true"}); v != 1 {
		t.Fatalf(`reloader_reload_executed_total{success="true"} = %v after one reload, want 1`, v)
	}
	if v, _ := scrape(t, r, "reloader_action_total", map[string]string{"workload_kind": "Deployment", "result": "success"}); v != 1 {
		t.Fatalf(`reloader_action_total{workload_kind="Deployment",result="success"} = %v, want 1`, v)
	}
	if v, _ := scrape(t, r, "reloader_reload_executed_total", failed); v != 0 {
		t.Fatalf(`the alert fired without a failure: success="false" is %v`, v)
	}

	refusePatches(t, ns, "web")
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	waitFor(t, 30*time.Second, `reloader_reload_executed_total{success="false"} > 0`, func() (bool, error) {
		v, _ := scrape(t, r, "reloader_reload_executed_total", failed)
		return v > 0, nil
	})
	if v, _ := scrape(t, r, "reloader_action_total", map[string]string{"workload_kind": "Deployment", "result": "error"}); v < 1 {
		t.Fatalf(`reloader_action_total{result="error"} = %v after a refused reload, want at least 1`, v)
	}
	if v, _ := scrape(t, r, "reloader_errors_total", map[string]string{"type": "handler_error"}); v < 1 {
		t.Fatalf(`reloader_errors_total{type="handler_error"} = %v after a refused reload, want at least 1`, v)
	}
}
