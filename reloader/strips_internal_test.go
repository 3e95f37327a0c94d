package reloader

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/reloader/reloader/policy"
)

// The rules of what a workload without a marker runs (strips.go), in process: what memory
// says, what the state says after a restart, and what a config change leaves of either.
func TestAStripSaysWhatAWorkloadWithoutAMarkerRuns(t *testing.T) {
	var (
		w       = key{"Deployment", "ns", "web"}
		r       = policy.ConfigRef{Kind: policy.KindSecret, Name: "db"}
		cfg     = key{policy.KindSecret, "ns", "db"}
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
		{"runs the content", func(s *strips) { s.remember(w, r, a, nil) }, false, a, policy.Current},
		{"runs another content", func(s *strips) { s.remember(w, r, a, nil) }, false, b, policy.Stale},
		{"runs some other content", func(s *strips) { s.remember(w, r, otherContent, nil) }, false, a, policy.Stale},
		{"the config changed since", func(s *strips) {
			s.remember(w, r, a, nil)
			s.configChanged(cfg, nil)
		}, false, a, policy.Stale},
		{"a change left the keys it reads alone", func(s *strips) {
			s.remember(w, r, a, []string{"password"})
			s.configChanged(cfg, func([]string) bool { return true })
		}, false, a, policy.Current},
		{"a change of a config in another namespace", func(s *strips) {
			s.remember(w, r, a, nil)
			s.configChanged(key{policy.KindSecret, "other", "db"}, nil)
		}, false, a, policy.Current},
		{"forgotten", func(s *strips) {
			s.remember(w, r, a, nil)
			s.forget(w, r)
		}, true, a, policy.NoMarker},
		{"after a restart, runs the content", func(s *strips) { s.remember(w, r, a, nil) }, true, a, policy.Current},
		{"after a restart, runs another content", func(s *strips) { s.remember(w, r, a, nil) }, true, b, policy.Stale},
		{"after a restart, a value under a lost hash key says nothing", func(s *strips) { s.remember(w, r, lostKey, nil) }, true, a, policy.NoMarker},
		{"a deleted workload is forgotten in memory; its state entry stays until workloadEntries.lift", func(s *strips) {
			s.remember(w, r, a, nil)
			s.configChanged(cfg, nil) // memory says: unknown since
			s.workloadGone(w)         // so only the state's entry is left to say a
		}, false, a, policy.Current},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newStore(nil, "ns", "reloader-state", slog.New(slog.DiscardHandler))
			s := newStrips(store, entryKeys{single: true})
			tc.act(s)
			if tc.restarted {
				s = newStrips(store, entryKeys{single: true})
			}
			if got := s.marker(w, r, tc.want); got != tc.marker {
				t.Errorf("marker = %v, want %v", got, tc.marker)
			}
		})
	}
}
