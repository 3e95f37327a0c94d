package reloader

import (
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/internal/dev/clocktest"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/runs"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state/statetest"
)

// journalFixture is a controller with only the parts a config's delta writes, over an
// in-memory state, and the handlers of its config events.
type journalFixture struct {
	c      *Controller
	events *events
	queued []workload.Key
}

func newJournalFixture() *journalFixture {
	log := slog.New(slog.DiscardHandler)
	store := newStore(statetest.NewConfigMaps(), "ns", "reloader-state", log)
	names := entrykeys.Names{Single: true}
	c := &Controller{journal: &journal{}, restarts: runs.NewRestarts()}
	c.strips = runs.NewStrips(store.Kind(entrykeys.StripPrefix), names)
	c.records = configs.NewRecords(policy.DefaultAnnotations(), &c.opts.HashKey, store.Configs(), names, c.strips)
	c.notes = runs.NewNotes(nil, c.strips, c.restarts, c.records, c.records)
	f := &journalFixture{c: c}
	f.events = &events{enqueue: func(k workload.Key) { f.queued = append(f.queued, k) }, journal: c.journal, changes: newChangeLog(),
		clock: clocktest.New(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)), metrics: metrics.New("test"), caches: &caches{}}
	return f
}

// record is ConfigMap app's record at resourceVersion rv with data a.
func (f *journalFixture) record(rv, a string) *configs.Record {
	obj, err := f.c.records.Transform(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", ResourceVersion: rv},
		Data: map[string]string{"a": a}})
	if err != nil {
		panic(err)
	}
	return obj.(*configs.Record)
}

// A handler writes nothing but the journal, the change log and the queue (issue 51): what a
// config's event tells the strips and the restarts lands when a sync folds the journal.
func TestAConfigEventChangesNoStripOrRestartBeforeTheFold(t *testing.T) {
	app := policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app"}
	k := workload.Key{Kind: policy.KindConfigMap, Namespace: "ns", Name: "app"}
	for _, ev := range []struct {
		name string
		send func(f *journalFixture, old, obj *configs.Record)
	}{
		{"add", func(f *journalFixture, _, obj *configs.Record) {
			f.events.configAdded(policy.KindConfigMap, obj, false)
		}},
		{"update", func(f *journalFixture, old, obj *configs.Record) {
			f.events.configUpdated(policy.KindConfigMap, old, obj)
		}},
		{"delete", func(f *journalFixture, old, _ *configs.Record) { f.events.configDeleted(policy.KindConfigMap, old) }},
	} {
		t.Run(ev.name, func(t *testing.T) {
			f := newJournalFixture()
			old, obj := f.record("5", "1"), f.record("7", "2")
			stripped := workload.Key{Kind: "Deployment", Namespace: "ns", Name: "stripped"}
			f.c.strips.Remember(stripped, app, f.c.records.Content(old, nil).Value, nil)
			restarting := workload.Key{Kind: "Deployment", Namespace: "ns", Name: "restarting"}
			f.c.restarts.Begin(restarting, map[policy.ConfigRef]*runs.Read{app: {Value: f.c.records.Content(old, nil).Value}},
				func(policy.ConfigRef, *runs.Read) (runs.Version, bool) { return runs.Version{}, false })

			ev.send(f, old, obj)
			if len(f.queued) != 1 || f.queued[0] != k {
				t.Fatalf("queued %v, want %v", f.queued, k)
			}
			if m := f.c.strips.Marker(stripped, app, f.c.records.Content(old, nil).Value); m != policy.Current {
				t.Errorf("before the fold, the strip says %v of the content it was noted with; want it unchanged (%v)", m, policy.Current)
			}
			if f.c.restarts.Unseen(restarting, app) {
				t.Errorf("before the fold, the restart in flight has seen a version of app")
			}
			if f.c.journal.Pending() != 1 {
				t.Fatalf("%d deltas pending, want 1", f.c.journal.Pending())
			}

			f.c.fold()
			if m := f.c.strips.Marker(stripped, app, f.c.records.Content(old, nil).Value); m == policy.Current {
				t.Errorf("after the fold, the strip still vouches for the content before the %s", ev.name)
			}
			if unseen := f.c.restarts.Unseen(restarting, app); unseen != (ev.name != "delete") {
				t.Errorf("after the fold, the restart in flight has seen a new version: %t, want %t", unseen, ev.name != "delete")
			}
		})
	}
}
