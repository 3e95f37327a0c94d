package runs

import (
	"log/slog"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
	"github.com/reloader/reloader/state/statetest"
)

// The rules of what a workload without a marker runs (strips.go), in process: what memory
// says, what the state says after a restart, and what a config change leaves of either.
func TestAStripSaysWhatAWorkloadWithoutAMarkerRuns(t *testing.T) {
	var (
		w       = workload.Key{Kind: "Deployment", Namespace: "ns", Name: "web"}
		r       = policy.ConfigRef{Kind: policy.KindSecret, Name: "db"}
		cfg     = workload.Key{Kind: policy.KindSecret, Namespace: "ns", Name: "db"}
		keyed   = func(id, sum string) string { return "hmac-" + id + "-" + strings.Repeat(sum, 40) }
		a, b    = keyed("0000000a", "a"), keyed("0000000a", "b")
		lostKey = keyed("0000000f", "a") // made under a key the reloader no longer has
	)
	for _, tc := range []struct {
		name      string
		act       func(s *Strips)
		restarted bool // judged by a new strips over the same state, as after a restart
		want      string
		marker    policy.MarkerState
	}{
		{"nothing remembered", func(*Strips) {}, false, a, policy.NoMarker},
		{"runs the content", func(s *Strips) { s.Remember(w, r, a, nil) }, false, a, policy.Current},
		{"runs another content", func(s *Strips) { s.Remember(w, r, a, nil) }, false, b, policy.Stale},
		{"runs some other content", func(s *Strips) { s.Remember(w, r, OtherContent, nil) }, false, a, policy.Stale},
		{"the config changed since", func(s *Strips) {
			s.Remember(w, r, a, nil)
			s.ConfigChanged(cfg, nil)
		}, false, a, policy.Stale},
		{"a change left the keys it reads alone", func(s *Strips) {
			s.Remember(w, r, a, []string{"password"})
			s.ConfigChanged(cfg, func([]string) bool { return true })
		}, false, a, policy.Current},
		{"a change of a config in another namespace", func(s *Strips) {
			s.Remember(w, r, a, nil)
			s.ConfigChanged(workload.Key{Kind: policy.KindSecret, Namespace: "other", Name: "db"}, nil)
		}, false, a, policy.Current},
		{"forgotten", func(s *Strips) {
			s.Remember(w, r, a, nil)
			s.forget(w, r)
		}, true, a, policy.NoMarker},
		{"after a restart, runs the content", func(s *Strips) { s.Remember(w, r, a, nil) }, true, a, policy.Current},
		{"after a restart, runs another content", func(s *Strips) { s.Remember(w, r, a, nil) }, true, b, policy.Stale},
		{"after a restart, a value under a lost hash key says nothing", func(s *Strips) { s.Remember(w, r, lostKey, nil) }, true, a, policy.NoMarker},
		{"a deleted workload is forgotten in memory; its state entry stays until workloadEntries.lift", func(s *Strips) {
			s.Remember(w, r, a, nil)
			s.ConfigChanged(cfg, nil) // memory says: unknown since
			s.WorkloadGone(w)         // so only the state's entry is left to say a
		}, false, a, policy.Current},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := state.New(statetest.NewConfigMaps(), "ns", "reloader-state", slog.New(slog.DiscardHandler), entrykeys.ContentEntries(entrykeys.StripPrefix))
			s := NewStrips(store.Kind(entrykeys.StripPrefix), entrykeys.Names{Single: true})
			tc.act(s)
			if tc.restarted {
				s = NewStrips(store.Kind(entrykeys.StripPrefix), entrykeys.Names{Single: true})
			}
			if got := s.Marker(w, r, tc.want); got != tc.marker {
				t.Errorf("marker = %v, want %v", got, tc.marker)
			}
		})
	}
}

// Pods restarted while a config was absent wait for it (Awaits): they run what it comes back
// with, and its next deletion is a change to them (RanSince), once a sync has seen it back
// (Reappeared). A rollback of that restart puts back pods that never waited (RolledBack), and
// its undo, for a rollback not sent, puts the note back.
func TestPodsThatWaitForAConfigRunWhatItComesBackWith(t *testing.T) {
	var (
		w   = workload.Key{Kind: "Deployment", Namespace: "ns", Name: "web"}
		r   = policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app"}
		cfg = workload.Key{Kind: policy.KindConfigMap, Namespace: "ns", Name: "app"}
		a   = strings.Repeat("a", 40)
		dep = []workload.Dependent{{Workload: w, Judgement: workload.Judgement{Change: policy.Change{Ref: r, Value: a}}}}
		// vouched: this process's restart memory knows the pods took a (Vouched).
		vouched = []workload.Dependent{{Workload: w, Judgement: workload.Judgement{Change: policy.Change{Ref: r, Value: a}, Vouched: true}}}
	)
	for _, tc := range []struct {
		name     string
		act      func(s *Strips)
		ranSince bool
		marker   policy.MarkerState // against a, for a workload without a marker
	}{
		{"waiting, nothing came back yet", func(s *Strips) { s.Awaits(w, []policy.ConfigRef{r}) }, false, policy.Current},
		{"came back with a", func(s *Strips) {
			s.Awaits(w, []policy.ConfigRef{r})
			s.Reappeared(cfg, dep)
		}, true, policy.Current},
		{"came back while no reloader watched: unknown", func(s *Strips) {
			s.Awaits(w, []policy.ConfigRef{r})
			s.Unsure(cfg, dep)
		}, true, policy.Stale},
		{"came back while out of the selection, seen taken by this process", func(s *Strips) {
			s.Awaits(w, []policy.ConfigRef{r})
			s.Unsure(cfg, vouched)
		}, true, policy.Current},
		{"rolled back before it came back", func(s *Strips) {
			s.Awaits(w, []policy.ConfigRef{r})
			s.RolledBack(w, []policy.ConfigRef{r})
			s.Reappeared(cfg, dep)
		}, false, policy.NoMarker},
		{"a rollback not sent keeps the note", func(s *Strips) {
			s.Awaits(w, []policy.ConfigRef{r})
			s.RolledBack(w, []policy.ConfigRef{r})()
			s.Reappeared(cfg, dep)
		}, true, policy.Current},
		{"a restart not sent keeps what was there", func(s *Strips) {
			s.Remember(w, r, a, nil)
			s.Awaits(w, []policy.ConfigRef{r})()
		}, true, policy.Current},
		{"a rollback put back pods that ran another content", func(s *Strips) {
			s.RanBefore(w, map[string]string{"ConfigMap/app": strings.Repeat("b", 40)})
		}, true, policy.Stale},
		{"a rollback retried and not sent keeps what the one sent noted", func(s *Strips) {
			s.RanBefore(w, map[string]string{"ConfigMap/app": a})
			s.RanBefore(w, map[string]string{"ConfigMap/app": a})()
		}, true, policy.Current},
		{"a rollback not sent notes nothing", func(s *Strips) {
			s.RanBefore(w, map[string]string{"ConfigMap/app": a})()
		}, false, policy.NoMarker},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := state.New(statetest.NewConfigMaps(), "ns", "reloader-state", slog.New(slog.DiscardHandler), entrykeys.ContentEntries(entrykeys.StripPrefix))
			s := NewStrips(store.Kind(entrykeys.StripPrefix), entrykeys.Names{Single: true})
			tc.act(s)
			s = NewStrips(store.Kind(entrykeys.StripPrefix), entrykeys.Names{Single: true}) // as a later process reads it
			if got := s.RanSince(w, r); got != tc.ranSince {
				t.Errorf("ranSince = %t, want %t", got, tc.ranSince)
			}
			if got := s.Marker(w, r, a); got != tc.marker {
				t.Errorf("marker = %v, want %v", got, tc.marker)
			}
		})
	}
}

// Pods restarted while a config they read only through optional key refs was absent run without
// it (RunNothing): a later process reads in the state that they started without it, which is no
// content they took (RanSince) and, once it is back, another content than its. A restart not
// sent notes nothing.
func TestPodsRestartedWithoutAnOptionalConfigAreNotedToHaveStartedWithoutIt(t *testing.T) {
	var (
		w = workload.Key{Kind: "Deployment", Namespace: "ns", Name: "web"}
		r = policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app"}
		a = strings.Repeat("a", 40)
	)
	for _, tc := range []struct {
		name    string
		act     func(s *Strips)
		without bool
		marker  policy.MarkerState // against a, for a workload without a marker
	}{
		{"restarted without it", func(s *Strips) { s.RunNothing(w, map[policy.ConfigRef][]string{r: {"k"}}) }, true, policy.Stale},
		{"a restart not sent notes nothing", func(s *Strips) { s.RunNothing(w, map[policy.ConfigRef][]string{r: {"k"}})() }, false, policy.NoMarker},
		{"another content is not none", func(s *Strips) { s.Remember(w, r, OtherContent, nil) }, false, policy.Stale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := state.New(statetest.NewConfigMaps(), "ns", "reloader-state", slog.New(slog.DiscardHandler), entrykeys.ContentEntries(entrykeys.StripPrefix))
			s := NewStrips(store.Kind(entrykeys.StripPrefix), entrykeys.Names{Single: true})
			tc.act(s)
			s = NewStrips(store.Kind(entrykeys.StripPrefix), entrykeys.Names{Single: true}) // as a later process reads it
			if got := s.StartedWithout(w, r); got != tc.without {
				t.Errorf("startedWithout = %t, want %t", got, tc.without)
			}
			if got, want := s.RanSince(w, r), tc.marker != policy.NoMarker && !tc.without; got != want {
				t.Errorf("ranSince = %t, want %t", got, want)
			}
			if got := s.Marker(w, r, a); got != tc.marker {
				t.Errorf("marker = %v, want %v", got, tc.marker)
			}
		})
	}
}

// A workload is taken as just created only as its creator made it, whatever its kind: an Argo
// Rollout or a DeploymentConfig (unstructured) by its observed generation, as a Deployment.
func TestAWorkloadIsJustCreatedOnlyBeforeItsControllerObservedIt(t *testing.T) {
	custom := func(generation int64, status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout"}}
		u.SetGeneration(generation)
		if status != nil {
			u.Object["status"] = status
		}
		return u
	}
	for name, c := range map[string]struct {
		obj  any
		want bool
	}{
		"a Deployment as created":                            {&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, true},
		"a Deployment its controller observed":               {&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Status: appsv1.DeploymentStatus{ObservedGeneration: 1}}, false},
		"a Rollout as created":                               {custom(1, nil), true},
		"a Rollout with a status but no observed generation": {custom(1, map[string]any{"phase": "Progressing"}), true},
		"a Rollout its controller observed":                  {custom(1, map[string]any{"observedGeneration": "1"}), false},
		"a DeploymentConfig its controller observed":         {custom(1, map[string]any{"observedGeneration": int64(1)}), false},
		"a Rollout changed since its creation":               {custom(2, nil), false},
		"a Pod":                                              {&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, false},
	} {
		if got := JustCreated(c.obj); got != c.want {
			t.Errorf("%s: just created %v, want %v", name, got, c.want)
		}
	}
}
