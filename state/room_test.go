package state_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reloader/reloader/state"
	"github.com/reloader/reloader/state/statetest"
)

// The room issue 52 asks for, at the real budget: the 500,000-config mix's 100,000 read configs
// (half ConfigMaps, half Secrets), 10,000 data-key entries, 35,000 spare configs and 5,000
// tombstones. The entries average 104 counted bytes, as the mix bench measured, and need 20
// shards; eight held about 63,000 of them, and kept the rest in memory only.
type roomMix struct{}

func (roomMix) read(i int) string {
	if i%2 == 0 {
		return state.Key("ConfigMap", fmt.Sprintf("team-%03d", i%400), fmt.Sprintf("app-config-%06d", i))
	}
	return state.Key("Secret", fmt.Sprintf("team-%03d", i%400), fmt.Sprintf("app-secret-%06d", i))
}

func (roomMix) spare(i int) string {
	return state.Key("Secret", fmt.Sprintf("team-%03d", i%400), fmt.Sprintf("tls-%06d", i))
}

func (roomMix) gone(i int) string {
	return state.Key("ConfigMap", fmt.Sprintf("team-%03d", i%400), fmt.Sprintf("old-%06d", i))
}

func hashFor(key string) string {
	if state.KindOf(key) == "Secret" {
		return keyedOf(key)
	}
	return hashOf(key)
}

// fill sets the mix's 150,000 entries and returns their keys.
func (m roomMix) fill(s *state.Store) []string {
	var keys []string
	set := func(k string, spare bool) {
		s.Configs().SetSpare(state.ConfigOf(k), spare)
		s.Configs().Set(k, hashFor(k))
		keys = append(keys, k)
	}
	for i := range 100000 {
		set(m.read(i), false)
		if i%10 == 0 {
			set(state.KeyOf(m.read(i), "settings.yaml"), false)
		}
	}
	for i := range 35000 {
		set(m.spare(i), true)
	}
	for i := range 5000 {
		s.Configs().Tombstone(m.gone(i), hashOf(m.gone(i)), time.Unix(1795000000, 0))
		keys = append(keys, m.gone(i))
	}
	return keys
}

// The mix's entries are all saved and loaded back at a restart; past the new ceiling spare
// entries still give their room to read ones: read configs added until every one of the 32
// shards is full evict every spare entry, and no shard passes its budget.
func TestTheStateHoldsTheHalfMillionMixAndGivesSpareRoomPastIt(t *testing.T) {
	c := statetest.NewConfigMaps()
	var log bytes.Buffer
	s := newStore(c, &log)
	if _, err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := roomMix{}
	keys := m.fill(s)
	flush(t, s)
	if n := s.Unsaved(); n != 0 {
		t.Fatalf("%d of %d entries are kept in memory only, want none", n, len(keys))
	}
	if strings.Contains(log.String(), "state is full") {
		t.Errorf("the state said it was full:\n%s", log.String())
	}
	if stored := storedValues(t, storedShards(t, c, state.ShardBudget)); len(stored) != len(keys) {
		t.Fatalf("%d entries stored, want %d", len(stored), len(keys))
	}
	restarted := newStore(c, nil)
	if _, err := restarted.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if e, ok := restarted.Configs().Get(k); !ok || (e.Hash != hashFor(k) && !e.Deleted) {
			t.Fatalf("%s after a restart: %+v, %v", k, e, ok)
		}
	}

	// 150,000 more read configs: the shards left hold about 100,000 of them, the spare ones'
	// room 35,000 more.
	for i := 100000; i < 250000; i++ {
		s.Configs().Set(m.read(i), hashFor(m.read(i)))
	}
	flush(t, s)
	if n := strings.Count(log.String(), "state is full"); n != 1 {
		t.Errorf("%d log lines about the full state, want 1", n)
	}
	if n := s.Configs().UnsavedSpare(); n != 35000 {
		t.Errorf("%d spare entries in memory only, want all 35,000 evicted", n)
	}
	for _, st := range s.Stats() {
		if st.Bytes > state.ShardBudget {
			t.Errorf("%s counts %d bytes, past the %d budget", st.Name, st.Bytes, state.ShardBudget)
		}
	}
	shards := storedShards(t, c, state.ShardBudget)
	if len(shards) != state.MaxShards {
		t.Errorf("%d shards written, want all %d", len(shards), state.MaxShards)
	}
	stored := storedValues(t, shards)
	for i := range 35000 {
		if _, ok := stored[m.spare(i)]; ok {
			t.Fatalf("spare %s is still stored in a full state", m.spare(i))
		}
	}
	for i := range 100000 {
		if _, ok := stored[m.read(i)]; !ok {
			t.Fatalf("read %s is not stored", m.read(i))
		}
	}
	if want := len(keys) + 150000 - s.Unsaved(); len(stored) != want || want < 200000 {
		t.Errorf("%d entries stored, want %d, and at least 200,000", len(stored), want)
	}
}
