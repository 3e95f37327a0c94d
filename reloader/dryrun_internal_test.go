package reloader

import (
	"log/slog"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/report"
	"github.com/reloader/reloader/reloader/workload"
)

func TestADryRunReportsAgainForAWorkloadCreatedAgainUnderADeletedOnesName(t *testing.T) {
	events := record.NewFakeRecorder(10)
	log := slog.New(slog.DiscardHandler)
	r := newRehearsal(report.New(events, log), metrics.New("test"), log, nil)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "1"}}
	w := workload.View{Key: workload.Key{Kind: "Deployment", Namespace: "ns", Name: "web"}, Kind: &workload.Kind{Name: "Deployment"}, Obj: d, Meta: d, Tmpl: &d.Spec.Template}
	changes := []policy.Change{{Ref: policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app-config"}, Value: "abc"}}
	told := func() int { return len(events.Events) }

	r.report(w, changes)
	r.report(w, changes) // the same content: said once
	if got := told(); got != 1 {
		t.Fatalf("%d Events for one content, want 1", got)
	}
	r.forget(w.Key)
	r.report(w, changes)
	if got := told(); got != 2 {
		t.Fatalf("%d Events after the workload was deleted and created again, want 2", got)
	}
	if len(r.said) != 1 {
		t.Fatalf("said holds %d workloads, want 1", len(r.said))
	}
	r.forget(w.Key)
	if len(r.said) != 0 || len(r.as) != 0 {
		t.Fatalf("a deleted workload is still held: said %d, as %d", len(r.said), len(r.as))
	}
}
