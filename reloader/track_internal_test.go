package reloader

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/reloader/reloader/internal/dev/clocktest"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/internal/report"
	"github.com/reloader/reloader/reloader/runs"
	"github.com/reloader/reloader/reloader/safe"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
	"github.com/reloader/reloader/state/statetest"
)

// trackerFixture is the tracker over an in-memory state, a fake Event recorder, a manual clock
// and a Deployment kind whose writes are recorded and whose live read is set by the test.
type trackerFixture struct {
	t      *safe.Tracker
	names  entrykeys.Names
	store  *state.Store
	events *record.FakeRecorder
	clock  *clocktest.Clock
	after  []time.Duration
	sent   []string
	live   *appsv1.Deployment
	kind   *workload.Kind
}

func newTrackerFixture(rollback bool) *trackerFixture {
	log := slog.New(slog.DiscardHandler)
	f := &trackerFixture{events: record.NewFakeRecorder(100), clock: clocktest.New(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))}
	f.store = newStore(statetest.NewConfigMaps(), "ns", "reloader-state", log)
	f.names = entrykeys.Names{Single: true}
	f.t = safe.NewTracker(safe.TrackerDeps{Defaults: policy.Follow{Track: true, Rollback: rollback, Timeout: 10 * time.Second}, Clock: f.clock,
		Store: f.store.Kind(entrykeys.HoldPrefix, entrykeys.RollbackReadPrefix), Flusher: f.store, Names: f.names, Reports: report.New(f.events, log), Log: log, Metrics: metrics.New("test"),
		Runs: runs.Rollbacks{Restarts: runs.NewRestarts(), Strips: runs.NewStrips(f.store.Kind(entrykeys.StripPrefix), f.names)}, Queue: f})
	f.kind = &workload.Kind{Name: "Deployment",
		Reload: func(_ context.Context, _, _ string, body []byte) (any, error) {
			f.sent = append(f.sent, string(body))
			return f.live, nil
		},
		Get: func(context.Context, string, string) (any, error) { return f.live, nil },
		Template: func(obj any) (metav1.Object, *corev1.PodTemplateSpec) {
			d := obj.(*appsv1.Deployment)
			return d, &d.Spec.Template
		}}
	return f
}

func (f *trackerFixture) Add(workload.Key) {}

func (f *trackerFixture) AddAfter(_ workload.Key, d time.Duration) { f.after = append(f.after, d) }

var appRef = policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app"}

// followed is Deployment web at generation gen, its reload of app to content "a…" (from "b…")
// made generation 2 with template tmplHash, started age ago, and its controller at observed.
func (f *trackerFixture) followed(gen, observed int64, age time.Duration, tmplHash string) workload.View {
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	entry := policy.Entry{At: f.clock.Now().Add(-age), Outcome: policy.OutcomeProgressing, Generation: 2, Template: tmplHash,
		Configs: []string{"ConfigMap/app@aaaaaaaa"}}
	restore := policy.Restore{Strategy: policy.StrategyEnvVars, Values: map[string]string{"ConfigMap/app": b},
		Applied: map[string]string{"ConfigMap/app": a}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", ResourceVersion: "9", Generation: gen,
		Annotations: map[string]string{policy.HistoryAnnotation: policy.FormatHistory([]policy.Entry{entry}), policy.RestoreAnnotation: restore.Encode()}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: observed}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: policy.EnvVarName(appRef), Value: a}}}}
	f.live = d
	return workload.View{Key: workload.Key{Kind: "Deployment", Namespace: "ns", Name: "web"}, Kind: f.kind, Obj: d, Meta: d, Tmpl: &d.Spec.Template,
		Target: policy.Target{Strategy: policy.StrategyEnvVars}}
}

func (f *trackerFixture) reasons() []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			out = append(out, strings.Fields(e)[1])
		default:
			return out
		}
	}
}

// The tracker's rules, in process: a rollout still rolling comes back at its deadline; one past
// it is timed out, undone with rollback on, and its content held; another actor's template
// change makes the rollout theirs: superseded, nothing undone or held.
func TestTheTrackerJudgesARolloutByItsStatusItsDeadlineAndWhoseTemplateItIs(t *testing.T) {
	ctx := context.Background()
	t.Run("rolling before its deadline", func(t *testing.T) {
		f := newTrackerFixture(true)
		w := f.followed(2, 1, 4*time.Second, "")
		if err := f.t.Sync(ctx, safe.RolloutKey(w.Key), w); err != nil {
			t.Fatal(err)
		}
		// The history keeps the second, so the deadline counts from the end of it: 10s + 1s - 4s.
		if len(f.sent) != 0 || len(f.after) != 1 || f.after[0] != 7*time.Second {
			t.Fatalf("sent %q, came back after %v; want nothing sent and 7s", f.sent, f.after)
		}
	})
	t.Run("past its deadline, rolled back and held", func(t *testing.T) {
		f := newTrackerFixture(true)
		w := f.followed(2, 2, 12*time.Second, "")
		if err := f.t.Sync(ctx, safe.RolloutKey(w.Key), w); err != nil {
			t.Fatal(err)
		}
		if len(f.sent) != 1 || !strings.Contains(f.sent[0], "timed-out+rolled-back") || !strings.Contains(f.sent[0], strings.Repeat("b", 40)) {
			t.Fatalf("sent %q, want one patch recording timed-out+rolled-back and putting b back", f.sent)
		}
		if !f.isHeld(w.Key, strings.Repeat("a", 40)) {
			t.Fatal("the rolled-back content is not held")
		}
		if got := strings.Join(f.reasons(), ","); got != "RolloutTimedOut,RolledBack" {
			t.Fatalf("events %s, want RolloutTimedOut,RolledBack", got)
		}
	})
	t.Run("a cache behind its rollback finishes nothing again", func(t *testing.T) {
		f := newTrackerFixture(true)
		w := f.followed(2, 2, 12*time.Second, "")
		written := f.live.DeepCopy()
		written.ResourceVersion = "12"
		f.live = written // what the rollback's patch returns
		if err := f.t.Sync(ctx, safe.RolloutKey(w.Key), w); err != nil || len(f.sent) != 1 {
			t.Fatalf("first sync: %v, sent %d patches; want the rollback", err, len(f.sent))
		}
		// The cache still shows the reload rolling out (resourceVersion 9): a second rollback
		// would be noted of the restart the first one put back (CI: a reload of the pods put
		// back for a content they run).
		if err := f.t.Sync(ctx, safe.RolloutKey(w.Key), w); !errors.Is(err, workload.ErrStale) || len(f.sent) != 1 {
			t.Fatalf("sync from the cache behind the rollback: %v, sent %d patches; want workload.ErrStale and nothing more", err, len(f.sent))
		}
	})
	t.Run("past its deadline without rollback", func(t *testing.T) {
		f := newTrackerFixture(false)
		w := f.followed(2, 2, 12*time.Second, "")
		if err := f.t.Sync(ctx, safe.RolloutKey(w.Key), w); err != nil {
			t.Fatal(err)
		}
		if len(f.sent) != 1 || strings.Contains(f.sent[0], "rolled-back") || f.isHeld(w.Key, strings.Repeat("a", 40)) {
			t.Fatalf("sent %q; want the outcome alone, nothing rolled back or held", f.sent)
		}
	})
	t.Run("another actor replaced the template", func(t *testing.T) {
		f := newTrackerFixture(true)
		w := f.followed(3, 3, 12*time.Second, "0123abcd") // generation 3: a change after the reload's
		if err := f.t.Sync(ctx, safe.RolloutKey(w.Key), w); err != nil {
			t.Fatal(err)
		}
		if len(f.sent) != 1 || !strings.Contains(f.sent[0], "superseded") || strings.Contains(f.sent[0], "rolled-back") {
			t.Fatalf("sent %q, want one patch recording superseded, nothing rolled back", f.sent)
		}
		if f.isHeld(w.Key, strings.Repeat("a", 40)) {
			t.Fatal("another actor's failure held our content")
		}
	})
	t.Run("a hold ends once other content is seen, and only a sync lifts it", func(t *testing.T) {
		f := newTrackerFixture(true)
		w := f.followed(2, 2, 12*time.Second, "")
		a, c := strings.Repeat("a", 40), strings.Repeat("c", 40)
		f.store.Kind(entrykeys.HoldPrefix).SetValue(f.names.Hold(w.Key, appRef), a)
		held, stale := f.t.HeldAfterRollback(w.Key, appRef, policy.Content{Value: c})
		if held || !stale {
			t.Fatalf("other content: held %v, stale %v; want the hold ended", held, stale)
		}
		if !f.isHeld(w.Key, a) {
			t.Fatal("judging lifted the hold: a read wrote")
		}
		f.t.LiftStale([]workload.Dependent{{Workload: w.Key, Judgement: workload.Judgement{Change: policy.Change{Ref: appRef, Value: c}, StaleHold: true}}})
		if f.isHeld(w.Key, a) {
			t.Fatal("a hold outlived other content: the held content applied again must be a change")
		}
	})
	t.Run("a hold written for the judged content since is not lifted", func(t *testing.T) {
		f := newTrackerFixture(true)
		w := f.followed(2, 2, 12*time.Second, "")
		c := strings.Repeat("c", 40)
		f.store.Kind(entrykeys.HoldPrefix).SetValue(f.names.Hold(w.Key, appRef), c) // a rollback of c's reload, after the judgement
		f.t.LiftStale([]workload.Dependent{{Workload: w.Key, Judgement: workload.Judgement{Change: policy.Change{Ref: appRef, Value: c}, StaleHold: true}}})
		if !f.isHeld(w.Key, c) {
			t.Fatal("a hold of the judged content was lifted")
		}
	})
}

// isHeld reports whether the tracker holds value of appRef for workload w.
func (f *trackerFixture) isHeld(w workload.Key, value string) bool {
	held, _ := f.t.HeldAfterRollback(w, appRef, policy.Content{Value: value})
	return held
}
