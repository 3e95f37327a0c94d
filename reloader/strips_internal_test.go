package reloader

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/workload"
)

// The rules of what a workload without a marker runs (strips.go), in process: what memory
// says, what the state says after a restart, and what a config change leaves of either.
func TestAStripSaysWhatAWorkloadWithoutAMarkerRuns(t *testing.T) {
	var (
		w       = key{Kind: "Deployment", Namespace: "ns", Name: "web"}
		r       = policy.ConfigRef{Kind: policy.KindSecret, Name: "db"}
		cfg     = key{Kind: policy.KindSecret, Namespace: "ns", Name: "db"}
		keyed   = func(id, sum string) string { return "hmac-" + id + "-" + strings.Repeat(sum, 40) }
		a, b    = keyed("0000000a", "a"), keyed("0000000a", "b")
		lostKey = keyed("0000000f", "a") // made under a key the reloader no longer has
	)
	for _, tc := range []struct {
		name      string
		act       func(s *strips)
		restarted bool // judged by a new strips over the same state, as after a restart
		want      string
		marker    policy.MarkerState
	}{
		{"nothing remembered", func(*strips) {}, false, a, policy.NoMarker},
		{"runs the content", func(s *strips) { s.Remember(w, r, a, nil) }, false, a, policy.Current},
		{"runs another content", func(s *strips) { s.Remember(w, r, a, nil) }, false, b, policy.Stale},
		{"runs some other content", func(s *strips) { s.Remember(w, r, otherContent, nil) }, false, a, policy.Stale},
		{"the config changed since", func(s *strips) {
			s.Remember(w, r, a, nil)
			s.configChanged(cfg, nil)
		}, false, a, policy.Stale},
		{"a change left the keys it reads alone", func(s *strips) {
			s.Remember(w, r, a, []string{"password"})
			s.configChanged(cfg, func([]string) bool { return true })
		}, false, a, policy.Current},
		{"a change of a config in another namespace", func(s *strips) {
			s.Remember(w, r, a, nil)
			s.configChanged(key{Kind: policy.KindSecret, Namespace: "other", Name: "db"}, nil)
		}, false, a, policy.Current},
		{"forgotten", func(s *strips) {
			s.Remember(w, r, a, nil)
			s.forget(w, r)
		}, true, a, policy.NoMarker},
		{"after a restart, runs the content", func(s *strips) { s.Remember(w, r, a, nil) }, true, a, policy.Current},
		{"after a restart, runs another content", func(s *strips) { s.Remember(w, r, a, nil) }, true, b, policy.Stale},
		{"after a restart, a value under a lost hash key says nothing", func(s *strips) { s.Remember(w, r, lostKey, nil) }, true, a, policy.NoMarker},
		{"a deleted workload is forgotten in memory; its state entry stays until workloadEntries.lift", func(s *strips) {
			s.Remember(w, r, a, nil)
			s.configChanged(cfg, nil) // memory says: unknown since
			s.workloadGone(w)         // so only the state's entry is left to say a
		}, false, a, policy.Current},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newStore(nil, "ns", "reloader-state", slog.New(slog.DiscardHandler))
			s := newStrips(store.Kind(entrykeys.StripPrefix), entrykeys.Names{Single: true})
			tc.act(s)
			if tc.restarted {
				s = newStrips(store.Kind(entrykeys.StripPrefix), entrykeys.Names{Single: true})
			}
			if got := s.marker(w, r, tc.want); got != tc.marker {
				t.Errorf("marker = %v, want %v", got, tc.marker)
			}
		})
	}
}

// Pods restarted while a config was absent wait for it (awaits): they run what it comes back
// with, and its next deletion is a change to them (ranSince), once a sync has seen it back
// (reappeared). A rollback of that restart puts back pods that never waited (rolledBack), and
// its undo, for a rollback not sent, puts the note back.
func TestPodsThatWaitForAConfigRunWhatItComesBackWith(t *testing.T) {
	var (
		w   = key{Kind: "Deployment", Namespace: "ns", Name: "web"}
		r   = policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app"}
		cfg = key{Kind: policy.KindConfigMap, Namespace: "ns", Name: "app"}
		a   = strings.Repeat("a", 40)
		dep = []workload.Dependent{{Workload: w, Judgement: workload.Judgement{Change: policy.Change{Ref: r, Value: a}}}}
	)
	for _, tc := range []struct {
		name     string
		act      func(s *strips)
		ranSince bool
		marker   policy.MarkerState // against a, for a workload without a marker
	}{
		{"waiting, nothing came back yet", func(s *strips) { s.awaits(w, []policy.ConfigRef{r}) }, false, policy.Current},
		{"came back with a", func(s *strips) {
			s.awaits(w, []policy.ConfigRef{r})
			s.reappeared(cfg, dep)
		}, true, policy.Current},
		{"rolled back before it came back", func(s *strips) {
			s.awaits(w, []policy.ConfigRef{r})
			s.rolledBack(w, []policy.ConfigRef{r})
			s.reappeared(cfg, dep)
		}, false, policy.NoMarker},
		{"a rollback not sent keeps the note", func(s *strips) {
			s.awaits(w, []policy.ConfigRef{r})
			s.rolledBack(w, []policy.ConfigRef{r})()
			s.reappeared(cfg, dep)
		}, true, policy.Current},
		{"a restart not sent keeps what was there", func(s *strips) {
			s.Remember(w, r, a, nil)
			s.awaits(w, []policy.ConfigRef{r})()
		}, true, policy.Current},
		{"a rollback put back pods that ran another content", func(s *strips) {
			s.ranBefore(w, map[string]string{"ConfigMap/app": strings.Repeat("b", 40)})
		}, true, policy.Stale},
		{"a rollback retried and not sent keeps what the one sent noted", func(s *strips) {
			s.ranBefore(w, map[string]string{"ConfigMap/app": a})
			s.ranBefore(w, map[string]string{"ConfigMap/app": a})()
		}, true, policy.Current},
		{"a rollback not sent notes nothing", func(s *strips) {
			s.ranBefore(w, map[string]string{"ConfigMap/app": a})()
		}, false, policy.NoMarker},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newStore(nil, "ns", "reloader-state", slog.New(slog.DiscardHandler))
			s := newStrips(store.Kind(entrykeys.StripPrefix), entrykeys.Names{Single: true})
			tc.act(s)
			s = newStrips(store.Kind(entrykeys.StripPrefix), entrykeys.Names{Single: true}) // as a later process reads it
			if got := s.ranSince(w, r); got != tc.ranSince {
				t.Errorf("ranSince = %t, want %t", got, tc.ranSince)
			}
			if got := s.marker(w, r, a); got != tc.marker {
				t.Errorf("marker = %v, want %v", got, tc.marker)
			}
		})
	}
}
