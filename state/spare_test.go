package state_test

import (
	"bytes"
	"testing"

	"github.com/reloader/reloader/state"
	"github.com/reloader/reloader/state/statetest"
)

// When the state is full, entries that are not spare take the room of spare ones, never the
// reverse; what the shards hold stays within budget, once per key, and loads back after a
// restart.
func TestAFullStateGivesSpareEntriesRoomToReadOnes(t *testing.T) {
	capacity := perShard * state.MaxShards
	spare := func(i int) string { return entryKey(i) }
	read := func(i int) string { return entryKey(500 + i) }
	set := func(s *state.Store, key string, isSpare bool) {
		s.Configs().SetSpare(key, isSpare)
		s.Configs().Set(key, hashOf(key))
	}
	cases := []struct {
		name string
		run  func(t *testing.T, s *state.Store)
		// read entries that must be saved; how many entries stay in memory only, of them spare
		saved                 []string
		unsaved, unsavedSpare int
	}{{
		name: "read entries added to a state full of spare ones evict spare ones",
		run: func(t *testing.T, s *state.Store) {
			for i := range capacity {
				set(s, spare(i), true)
			}
			flush(t, s)
			for i := range 5 {
				set(s, read(i), false)
			}
		},
		saved:   []string{read(0), read(1), read(2), read(3), read(4)},
		unsaved: 5, unsavedSpare: 5,
	}, {
		name: "spare entries added to a state full of read ones stay in memory",
		run: func(t *testing.T, s *state.Store) {
			for i := range capacity {
				set(s, read(i), false)
			}
			for i := range 5 {
				set(s, spare(i), true)
			}
		},
		saved:   []string{read(0), read(capacity - 1)},
		unsaved: 5, unsavedSpare: 5,
	}, {
		name: "a spare entry in memory only that becomes read is saved at the next flush",
		run: func(t *testing.T, s *state.Store) {
			for i := range capacity + 3 {
				set(s, spare(i), true)
			}
			flush(t, s)
			s.Configs().SetSpare(spare(capacity+1), false)
		},
		saved:   []string{spare(capacity + 1)},
		unsaved: 3, unsavedSpare: 3,
	}, {
		name: "saved entries marked spare later give up their room",
		run: func(t *testing.T, s *state.Store) {
			for i := range capacity {
				set(s, read(i), false)
			}
			flush(t, s)
			for i := range 2 {
				s.Configs().SetSpare(read(i), true)
			}
			set(s, read(capacity), false)
		},
		saved:   []string{read(2), read(capacity)},
		unsaved: 1, unsavedSpare: 1,
	}, {
		name: "read entries past the ceiling stay in memory when no spare one is saved",
		run: func(t *testing.T, s *state.Store) {
			for i := range capacity + 2 {
				set(s, read(i), false)
			}
		},
		saved:   []string{read(0)},
		unsaved: 2, unsavedSpare: 0,
	}, {
		name: "a deleted spare config's mark goes with it",
		run: func(t *testing.T, s *state.Store) {
			set(s, spare(0), true)
			s.Configs().Delete(spare(0))
			s.Configs().Set(spare(0), hashOf("again")) // not marked: kept like a read entry
			for i := range capacity {
				set(s, read(i), false)
			}
		},
		saved:   []string{read(0), spare(0)},
		unsaved: 1, unsavedSpare: 0,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := statetest.NewConfigMaps()
			var log bytes.Buffer
			s, budget := smallStore(t, c, &log)
			tc.run(t, s)
			flush(t, s)
			if n, sp := s.Unsaved(), s.Configs().UnsavedSpare(); n != tc.unsaved || sp != tc.unsavedSpare {
				t.Fatalf("Unsaved = %d, of them spare %d; want %d and %d", n, sp, tc.unsaved, tc.unsavedSpare)
			}
			values := storedValues(t, storedShards(t, c, budget))
			if len(values) != capacity {
				t.Errorf("%d entries stored, want the %d the shards hold", len(values), capacity)
			}
			for _, k := range tc.saved {
				if _, ok := values[k]; !ok {
					t.Errorf("%s is not stored", k)
				}
			}
			for k := range values { // what is stored is what memory holds
				if e, ok := s.Configs().Get(k); !ok || values[k] != e.Hash {
					t.Errorf("stored %s = %q, in memory %+v (%v)", k, values[k], e, ok)
				}
			}
			restarted, _ := smallStore(t, c, &log)
			for _, k := range tc.saved {
				if _, ok := restarted.Configs().Get(k); !ok {
					t.Errorf("%s is lost at a restart", k)
				}
			}
		})
	}
}
