package safe

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reloader/reloader/internal/dev/clocktest"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/internal/report"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// gatesFixture is the gates part over a state without a server, a fake Event recorder and a
// manual clock: what it holds, writes and says, in process.
type gatesFixture struct {
	g      *Gates
	store  *state.Store
	events *record.FakeRecorder
	clock  *clocktest.Clock
	queued chan workload.Key
}

func newGatesFixture(store *state.Store) *gatesFixture {
	f := &gatesFixture{store: store, queued: make(chan workload.Key, 10), events: record.NewFakeRecorder(100), clock: clocktest.New(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))}
	log := slog.New(slog.DiscardHandler)
	queue := queueFunc(func(k workload.Key) { f.queued <- k })
	f.g = NewGates(GatesDeps{Annotations: policy.DefaultAnnotations(), Clock: f.clock, Store: store.Kind(entrykeys.PendingPrefix, entrykeys.PausePrefix),
		Names: entrykeys.Names{Single: true}, Reports: report.New(f.events, log), Log: log, Gauge: metrics.New("test").Deferred, Queue: queue,
		Deferrals: NewDeferrals(f.clock, queue)})
	return f
}

// queueFunc is a Queue that calls itself.
type queueFunc func(workload.Key)

func (q queueFunc) Add(k workload.Key) { q(k) }

// newStore is a state without a server, with the entries of configs, pending reloads and pauses.
func newStore() *state.Store {
	return state.New(nil, "ns", "reloader-state", slog.New(slog.DiscardHandler), PendingEntries(), PauseEntries())
}

func gatedView(annotations map[string]string) workload.View {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", ResourceVersion: "7", Annotations: annotations}}
	return workload.View{Key: workload.Key{Kind: "Deployment", Namespace: "ns", Name: "web"}, Kind: &workload.Kind{Name: "Deployment"}, Obj: d, Meta: d, Tmpl: &d.Spec.Template}
}

func (f *gatesFixture) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// A held reload is said once (an Event naming its configs and time, not their content),
// remembered in the state (a pending entry) so that a restart neither says it again nor loses
// it, said again when its time changes, counted in the gauge, woken by its timer, and forgotten
// once released.
func TestAHeldReloadIsSaidOnceRememberedAndReleased(t *testing.T) {
	store := newStore()
	f := newGatesFixture(store)
	w := gatedView(map[string]string{policy.MinIntervalAnnotation: "1h", policy.LastReloadAnnotation: "2026-11-26T11:30:00Z"})
	changes := []policy.Change{{Ref: policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app"}, Value: strings.Repeat("a", 40)}}

	gate := f.g.Of(w)
	for range 2 {
		if _, held, err := f.g.Apply(context.Background(), w, gate, changes); !held || err != nil {
			t.Fatalf("apply = %v, %v; want held", held, err)
		}
	}
	if ev := f.drainEvents(); len(ev) != 1 || !strings.Contains(ev[0], "ReloadDeferred") || !strings.Contains(ev[0], "until 2026-11-26T12:30:00Z") {
		t.Fatalf("events %q, want one ReloadDeferred until 12:30", ev)
	}
	if _, pending := store.Kind(entrykeys.PendingPrefix).Value(f.g.names.Pending(w.Key)); !pending {
		t.Fatal("no pending entry for the held reload")
	}
	if got := testutil.ToFloat64(f.g.gauge.WithLabelValues(policy.ReasonMinInterval)); got != 1 {
		t.Fatalf("deferred gauge %v, want 1", got)
	}

	restarted := newGatesFixture(store) // a new process over the same state
	if _, held, _ := restarted.g.Apply(context.Background(), w, gate, changes); !held {
		t.Fatal("not held after a restart")
	}
	if ev := restarted.drainEvents(); len(ev) != 0 {
		t.Fatalf("a restart said the deferral again: %q", ev)
	}
	// Another config due, or another time (here a later last reload), is news: said once more,
	// after a restart too.
	later := gatedView(map[string]string{policy.MinIntervalAnnotation: "1h", policy.LastReloadAnnotation: "2026-11-26T11:40:00Z"})
	for range 2 {
		if _, held, _ := restarted.g.Apply(context.Background(), later, restarted.g.Of(later), changes); !held {
			t.Fatal("not held with a later last reload")
		}
	}
	if ev := restarted.drainEvents(); len(ev) != 1 || !strings.Contains(ev[0], "until 2026-11-26T12:40:00Z") || strings.Contains(ev[0], "aaaa") {
		t.Fatalf("events %q, want one ReloadDeferred until 12:40, naming no content", ev)
	}
	again := newGatesFixture(store)
	if _, held, _ := again.g.Apply(context.Background(), later, again.g.Of(later), changes); !held || len(again.drainEvents()) != 0 {
		t.Fatal("a second restart said the new deferral again, or did not hold")
	}

	f.clock.Advance(30 * time.Minute)
	select {
	case k := <-f.queued:
		if k != w.Key {
			t.Fatalf("queued %v when the interval ended, want %v", k, w.Key)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing queued when the interval ended")
	}
	f.g.Release(w)
	if _, pending := store.Kind(entrykeys.PendingPrefix).Value(f.g.names.Pending(w.Key)); pending {
		t.Fatal("the pending entry outlived the release")
	}
	if got := testutil.ToFloat64(f.g.gauge.WithLabelValues(policy.ReasonMinInterval)); got != 0 {
		t.Fatalf("deferred gauge %v after the release, want 0", got)
	}
}

// A schedule that does not parse holds every reload and warns once per problem, not per change.
func TestAnUnparsableScheduleHoldsAndWarnsOnce(t *testing.T) {
	f := newGatesFixture(newStore())
	w := gatedView(map[string]string{policy.WindowAnnotation: "someday"})
	gate := f.g.Of(w)
	for i := range 3 {
		changes := []policy.Change{{Ref: policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app"}, Value: strings.Repeat(string(rune('a'+i)), 40)}}
		if _, held, _ := f.g.Apply(context.Background(), w, gate, changes); !held {
			t.Fatalf("change %d not held", i)
		}
	}
	ev := f.drainEvents()
	if len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning ReloadScheduleInvalid") {
		t.Fatalf("events %q, want one ReloadScheduleInvalid warning", ev)
	}
	if f.clock.Pending() != 0 {
		t.Fatal("a schedule that does not parse set a timer: it holds until the annotation changes")
	}
}

// What a pending entry may hold: pending@<unix seconds>[#<digest>], never a content hash; and
// never more than the room the state reserves for it. Its time and digest load back.
func TestThePendingEntriesHoldOnlyTheirTimeAndDigest(t *testing.T) {
	plain := strings.Repeat("a", 40)
	pending := PendingEntries()
	for _, tc := range []struct {
		value string
		ok    bool
	}{
		{"pending@1795000000", true},
		{"pending@0", true},
		{"pending@01", false},
		{"pending@+1", false},
		{"pending@253402300800", false},
		{plain, false},
		{"pending@253402300799#0a1b2c3d", true},
		{"pending@1795000000#0a1b2c3", false},
		{"pending@1795000000#0a1b2c3g", false},
		{"pending@1795000000#", false},
	} {
		k := "pending.Deployment_web"
		err := pending.Valid(k, tc.value)
		if (err == nil) != tc.ok {
			t.Errorf("pending %s = %q: %v, want ok %v", k, tc.value, err, tc.ok)
		}
		if err == nil && len(tc.value) > pending.MaxLen(k) {
			t.Errorf("pending %s = %q is longer than the %d bytes reserved", k, tc.value, pending.MaxLen(k))
		}
	}
	for _, at := range []time.Time{{}, time.Unix(1795000000, 999), time.Date(20000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		for _, digest := range []string{"", messageDigest("Reload for ConfigMap/app deferred")} {
			v := encodePending(at, digest)
			if pending.Valid("pending.Deployment_web", v) != nil {
				t.Errorf("encodePending(%v, %q) = %q, which does not load back", at, digest, v)
			}
			if _, got := decodePending(v); got != digest {
				t.Errorf("decodePending(%q) gives the digest %q, want %q", v, got, digest)
			}
		}
	}
}
