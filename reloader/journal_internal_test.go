package reloader

import (
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/reloader/reloader/coalesce"
	"github.com/reloader/reloader/internal/dev/clocktest"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/internal/report"
	"github.com/reloader/reloader/reloader/runs"
	"github.com/reloader/reloader/reloader/safe"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
	"github.com/reloader/reloader/state/statetest"
)

// journalFixture is a controller with only the parts a delta writes, over an in-memory state,
// a ConfigMap cache the test fills and a Deployment kind, and the handlers of their events.
type journalFixture struct {
	c        *Controller
	events   *events
	queued   []workload.Key
	recorder *record.FakeRecorder
	cms      cache.SharedIndexInformer
	kind     *workload.Kind
	entries  *state.KindView // the state's strip and pending entries
}

func newJournalFixture() *journalFixture {
	log := slog.New(slog.DiscardHandler)
	an := policy.DefaultAnnotations()
	store := newStore(statetest.NewConfigMaps(), "ns", "reloader-state", log)
	names := entrykeys.Names{Single: true}
	clock := clocktest.New(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	f := &journalFixture{recorder: record.NewFakeRecorder(10)}
	c := &Controller{journal: &journal{}, restarts: runs.NewRestarts(), names: names}
	c.ready.Store(true)
	c.strips = runs.NewStrips(store.Kind(entrykeys.StripPrefix), names)
	c.records = configs.NewRecords(an, &c.opts.HashKey, store.Configs(), names, c.strips)
	f.cms = cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	f.kind = &workload.Kind{Name: "Deployment", ByConfig: workload.NewDependents(),
		Informer: cache.NewSharedIndexInformer(&cache.ListWatch{}, &appsv1.Deployment{}, 0, cache.Indexers{}),
		Template: func(obj any) (metav1.Object, *corev1.PodTemplateSpec) {
			d := obj.(*appsv1.Deployment)
			return d, &d.Spec.Template
		},
		Paused: func(obj any) bool { return obj.(*appsv1.Deployment).Spec.Paused }}
	c.caches = &caches{annotations: an, configs: map[string]cache.SharedIndexInformer{policy.KindConfigMap: f.cms},
		kinds: map[string]*workload.Kind{"Deployment": f.kind}}
	c.reports = report.New(f.recorder, log)
	c.tracker = safe.NewTracker(safe.TrackerDeps{Clock: clock, Store: store.Kind(entrykeys.HoldPrefix, entrykeys.RollbackReadPrefix),
		Flusher: store, Names: names, Reports: c.reports, Log: log, Metrics: metrics.New("test"),
		Runs: runs.Rollbacks{Restarts: c.restarts, Strips: c.strips}, Queue: f})
	c.rule = &rule{annotations: an, caches: c.caches, records: c.records, store: store.Configs(), names: names, tracker: c.tracker,
		restarts: c.restarts, strips: c.strips, stakater: &c.stakater, unrecorded: &unrecorded{state: store}}
	c.notes = runs.NewNotes(c.rule, c.strips, c.restarts, c.records, c.records)
	c.annotationCheck = &annotationCheck{annotations: an, caches: c.caches, reports: c.reports, log: log, ready: c.ready.Load}
	c.entries = &workloadEntries{annotations: an, caches: c.caches,
		store: store.Kind(entrykeys.HoldPrefix, entrykeys.StripPrefix, entrykeys.RollbackReadPrefix), names: names}
	f.entries = store.Kind(entrykeys.StripPrefix, entrykeys.PendingPrefix)
	c.gates = safe.NewGates(safe.GatesDeps{Annotations: an, Clock: clock, Store: store.Kind(entrykeys.PendingPrefix, entrykeys.PausePrefix),
		Names: names, Reports: c.reports, Log: log, Gauge: metrics.New("test").Deferred, Queue: f, Deferrals: safe.NewDeferrals(clock, f)})
	c.rehearsal = newRehearsal(c.reports, metrics.New("test"), log, clock.Now)
	f.c = c
	f.events = &events{enqueue: f.Add, journal: c.journal, changes: newChangeLog(), clock: clock, metrics: metrics.New("test"),
		caches: c.caches, coalescer: coalesce.New(0, 0, clock, f.Add), rollouts: c.tracker, unknownKeys: c.annotationCheck,
		entries: c.entries, decisiveAnnotations: an.OnWorkload()}
	return f
}

// Add records a queued key (the handlers' queue and the tracker's).
func (f *journalFixture) Add(k workload.Key) { f.queued = append(f.queued, k) }

// AddAfter records nothing: the tracker's timeouts are not what these tests follow.
func (f *journalFixture) AddAfter(workload.Key, time.Duration) {}

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

// cached puts obj in the Deployments' cache, as the informer does before it calls a handler,
// and returns it.
func (f *journalFixture) cached(obj *appsv1.Deployment) *appsv1.Deployment {
	if err := f.kind.Informer.GetIndexer().Update(obj); err != nil {
		panic(err)
	}
	return obj
}

// webDeployment is Deployment web at resourceVersion rv and generation gen, reading all of
// ConfigMap app from a container whose environment is env, with reload annotations ann.
func webDeployment(rv string, gen int64, ann map[string]string, env ...corev1.EnvVar) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", ResourceVersion: rv, Generation: gen, Annotations: ann},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Env: env,
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}},
		}}}}},
	}
}

// A handler writes nothing but the journal, the index and the queue (issue 51): what a
// workload's creation or change tells the strips, and the Warnings its annotations earn, land
// when a sync folds the journal.
func TestAWorkloadEventNotesNothingAndWarnsNothingBeforeTheFold(t *testing.T) {
	app := policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app"}
	web := workload.Key{Kind: "Deployment", Namespace: "ns", Name: "web"}
	an := policy.DefaultAnnotations()
	misspelt := map[string]string{an.Auto: "true", "reloader.stakater.com/atuo": "true"}
	for _, ev := range []struct {
		name string
		// send delivers the event; value is the content of app that web runs.
		send  func(f *journalFixture, value string)
		strip bool // the fold notes that web runs value without a marker
	}{
		{"created", func(f *journalFixture, _ string) {
			f.events.workloadAdded(f.kind, f.cached(webDeployment("9", 1, misspelt)), false)
		}, true},
		{"marker stripped by another actor", func(f *journalFixture, value string) {
			marked := webDeployment("8", 1, map[string]string{an.Auto: "true"}, corev1.EnvVar{Name: policy.EnvVarName(app), Value: value})
			f.events.workloadUpdated(f.kind, marked, f.cached(webDeployment("9", 2, misspelt)))
		}, true},
		{"unknown key added by a status update", func(f *journalFixture, _ string) {
			f.events.workloadUpdated(f.kind, webDeployment("8", 1, map[string]string{an.Auto: "true"}), f.cached(webDeployment("9", 1, misspelt)))
		}, false},
	} {
		t.Run(ev.name, func(t *testing.T) {
			f := newJournalFixture()
			rec := f.record("5", "1")
			if err := f.cms.GetIndexer().Add(rec); err != nil {
				t.Fatal(err)
			}
			value := f.c.records.Content(rec, nil).Value

			ev.send(f, value)
			if len(f.queued) == 0 || f.queued[0] != web {
				t.Fatalf("queued %v, want %v first", f.queued, web)
			}
			if m := f.c.strips.Marker(web, app, value); m != policy.NoMarker {
				t.Errorf("before the fold, the strips say %v of web's content of app; want nothing noted", m)
			}
			if len(f.recorder.Events) != 0 {
				t.Errorf("before the fold, the handler said %q", <-f.recorder.Events)
			}
			if f.c.journal.Pending() != 1 {
				t.Fatalf("%d deltas pending, want 1", f.c.journal.Pending())
			}

			f.c.fold()
			if m := f.c.strips.Marker(web, app, value); (m == policy.Current) != ev.strip {
				t.Errorf("after the fold, the strips say %v of web's content of app; noted: want %t", m, ev.strip)
			}
			if len(f.recorder.Events) != 1 {
				t.Fatalf("after the fold, %d Events, want the unknown annotation's Warning", len(f.recorder.Events))
			}
			if e := <-f.recorder.Events; !strings.Contains(e, "UnknownAnnotation") {
				t.Errorf("after the fold, the Event %q, want an UnknownAnnotation Warning", e)
			}
		})
	}
}

// deleted removes obj from the Deployments' cache, as the informer does before it calls the
// delete handler, and calls it.
func (f *journalFixture) deleted(obj *appsv1.Deployment) {
	if err := f.kind.Informer.GetIndexer().Delete(obj); err != nil {
		panic(err)
	}
	f.events.workloadDeleted(f.kind, obj)
}

// A workload deleted, or deleted and created again under its name, before its creation is
// folded: the fold applies its creation, then its deletion, then the new object's creation, in
// arrival order. The deletion forgets what the creation noted, and nothing of the new object.
func TestAWorkloadGoneBeforeTheFoldIsForgottenInArrivalOrder(t *testing.T) {
	app := policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app"}
	web := workload.Key{Kind: "Deployment", Namespace: "ns", Name: "web"}
	misspelt := map[string]string{policy.DefaultAnnotations().Auto: "true", "reloader.stakater.com/atuo": "true"}
	for _, gone := range []struct {
		name  string
		again bool // created again after the deletion
	}{{"deleted", false}, {"created again", true}} {
		t.Run(gone.name, func(t *testing.T) {
			f := newJournalFixture()
			rec := f.record("5", "1")
			if err := f.cms.GetIndexer().Add(rec); err != nil {
				t.Fatal(err)
			}
			obj := f.cached(webDeployment("9", 1, misspelt))
			f.events.workloadAdded(f.kind, obj, false)
			f.deleted(obj)
			warnings := 1 // the deleted object's, said before its deletion is folded
			if gone.again {
				again := webDeployment("11", 1, misspelt)
				again.UID = "u2"
				f.events.workloadAdded(f.kind, f.cached(again), false)
				warnings++
			}

			f.c.fold()
			if m := f.c.strips.Marker(web, app, f.c.records.Content(rec, nil).Value); (m == policy.Current) != gone.again {
				t.Errorf("after the fold, the strips say %v of web's content of app; noted: want %t", m, gone.again)
			}
			if _, ok := f.entries.Value(f.c.names.Strip(web, app)); ok != gone.again {
				t.Errorf("after the fold, the state's strip entry of web exists: %t, want %t", ok, gone.again)
			}
			if len(f.recorder.Events) != warnings {
				t.Errorf("after the fold, %d Events, want %d UnknownAnnotation Warnings", len(f.recorder.Events), warnings)
			}
		})
	}
}

// A deletion is journaled like any other event (issue 51): what the workload's pods were noted
// to run, its state entries and its gate are forgotten when a sync folds the journal, after
// every event that arrived before it; the handler only unfiles it and queues it and its configs.
func TestAWorkloadDeletionForgetsNothingBeforeTheFold(t *testing.T) {
	app := policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app"}
	web := workload.Key{Kind: "Deployment", Namespace: "ns", Name: "web"}
	f := newJournalFixture()
	rec := f.record("5", "1")
	if err := f.cms.GetIndexer().Add(rec); err != nil {
		t.Fatal(err)
	}
	value := f.c.records.Content(rec, nil).Value
	obj := f.cached(webDeployment("9", 1, map[string]string{policy.DefaultAnnotations().Auto: "true"}))
	f.events.workloadAdded(f.kind, obj, false)
	f.c.fold()
	if m := f.c.strips.Marker(web, app, value); m != policy.Current {
		t.Fatalf("the creation noted %v of web's content of app, want %v", m, policy.Current)
	}
	f.entries.SetValue(f.c.names.Pending(web), "pending@1796212800") // a reload held by its gate
	f.queued = nil

	f.deleted(obj)
	if got, want := f.queued, []workload.Key{workload.ConfigKey(app, "ns"), web}; !slices.Equal(got, want) {
		t.Errorf("queued %v, want %v", got, want)
	}
	if deps := f.kind.ByConfig.Of(workload.ConfigKey(app, "ns")); len(deps) != 0 {
		t.Errorf("web is still filed under app: %v", deps)
	}
	if m := f.c.strips.Marker(web, app, value); m != policy.Current {
		t.Errorf("before the fold, the strips say %v of web's content of app; want it still noted", m)
	}
	for _, e := range []string{f.c.names.Strip(web, app), f.c.names.Pending(web)} {
		if _, ok := f.entries.Value(e); !ok {
			t.Errorf("before the fold, the state's entry %s is gone", e)
		}
	}
	if f.c.journal.Pending() != 1 {
		t.Fatalf("%d deltas pending, want 1", f.c.journal.Pending())
	}

	f.c.fold()
	if m := f.c.strips.Marker(web, app, value); m != policy.NoMarker {
		t.Errorf("after the fold, the strips say %v of the deleted web; want nothing", m)
	}
	for _, e := range []string{f.c.names.Strip(web, app), f.c.names.Pending(web)} {
		if _, ok := f.entries.Value(e); ok {
			t.Errorf("after the fold, the state's entry %s is left", e)
		}
	}
}

// The handlers hold the queue, the indexes, and what they only read or queue through of other
// parts (issue 51): a part they could write would let a handler write before the fold again.
func TestTheHandlersHoldOnlyTheQueueTheIndexesAndWhatTheyRead(t *testing.T) {
	want := map[string]string{
		"enqueue":             "func(workload.Key)",
		"backlog":             "*reloader.backlog",
		"coalescer":           "*coalesce.Coalescer[github.com/reloader/reloader/reloader/workload.Key]",
		"clock":               "coalesce.Clock",
		"reloadOnCreate":      "bool",
		"metrics":             "*metrics.Metrics",
		"decisiveAnnotations": "[]string",
		"caches":              "*reloader.caches",
		"changes":             "*reloader.changeLog",
		"journal":             "*arrivals.Journal[github.com/reloader/reloader/reloader/workload.Key,github.com/reloader/reloader/reloader.delta]",
		"entered":             "*reloader.enteredConfigs",
		"namespace":           "string",
		// read, or queue, only
		"rollouts":    "reloader.rolloutQueue",
		"unknownKeys": "reloader.unknownKeys",
		"entries":     "reloader.entryNames",
		"state":       "reloader.stateKeys",
	}
	typ := reflect.TypeFor[events]()
	got := map[string]string{}
	for i := range typ.NumField() {
		got[typ.Field(i).Name] = typ.Field(i).Type.String()
	}
	for name, ty := range got {
		if want[name] != ty {
			t.Errorf("events.%s is a %s: not on the list of the queue, the indexes and what the handlers only read", name, ty)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("events.%s is on the list but not a field: take it off", name)
		}
	}
}

// A Job's reload deletes it and creates it again under its key, and notes the restart from its
// sync, not the journal: the old object's deletion, folded after that restart, keeps what the
// new object's pods run; a deletion written after the restart forgets it.
func TestADeletionFoldedAfterARecreationKeepsTheRecreationsRestart(t *testing.T) {
	app := policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app"}
	web := workload.Key{Kind: "Deployment", Namespace: "ns", Name: "web"}
	for _, del := range []struct {
		name, rv string
		kept     bool
	}{{"the old object's", "10", true}, {"a later one", "13", false}} {
		t.Run(del.name, func(t *testing.T) {
			f := newJournalFixture()
			f.c.restarts.Begin(web, map[policy.ConfigRef]*runs.Read{app: {Value: "v", Vouched: true}},
				func(policy.ConfigRef, *runs.Read) (runs.Version, bool) { return runs.Version{}, false })
			f.c.restarts.Finished(web, "12", false)

			f.deleted(webDeployment(del.rv, 1, nil))
			f.c.fold()
			if _, _, ok := f.c.restarts.Runs(web, app); ok != del.kept {
				t.Errorf("after the deletion at %s was folded, the restart written at 12 is kept: %t, want %t", del.rv, ok, del.kept)
			}
		})
	}
}

// What arrives after the last sync is folded at exit, before the state's last flush: our own
// patch's update event forgets the strip the patch replaced, and a stop right after the patch
// must not leave that strip in the state for the next process to reload by.
func TestShutdownFoldsWhatArrivedAfterTheLastSync(t *testing.T) {
	app := policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app"}
	web := workload.Key{Kind: "Deployment", Namespace: "ns", Name: "web"}
	an := policy.DefaultAnnotations()
	for _, stop := range []struct {
		name string
		fold bool // the controller folds before it stops (a positive control: a sync ran)
	}{{"stopped right after the patch", false}, {"a sync after the patch", true}} {
		t.Run(stop.name, func(t *testing.T) {
			f := newJournalFixture()
			f.c.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[workload.Key]())
			rec := f.record("5", "1")
			if err := f.cms.GetIndexer().Add(rec); err != nil {
				t.Fatal(err)
			}
			value := f.c.records.Content(rec, nil).Value
			stripped := f.cached(webDeployment("8", 1, map[string]string{an.Auto: "true"}))
			f.c.strips.Remember(web, app, value, nil)
			if _, ok := f.entries.Value(f.c.names.Strip(web, app)); !ok {
				t.Fatal("the strip is not in the state before the patch")
			}

			marked := webDeployment("9", 2, map[string]string{an.Auto: "true"}, corev1.EnvVar{Name: policy.EnvVarName(app), Value: value})
			f.events.workloadUpdated(f.kind, stripped, f.cached(marked))
			if _, ok := f.entries.Value(f.c.names.Strip(web, app)); !ok {
				t.Fatal("the patch's event forgot the strip before a fold")
			}
			if stop.fold {
				f.c.fold()
			}
			var workers sync.WaitGroup
			f.c.shutdown(&workers, func() {})
			if n := f.c.journal.Pending(); n != 0 {
				t.Errorf("%d deltas left unfolded at exit", n)
			}
			if _, ok := f.entries.Value(f.c.names.Strip(web, app)); ok {
				t.Error("the strip our patch replaced is still in the state at exit")
			}
		})
	}
}
