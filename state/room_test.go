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

// The room issue 52 asks for: the 500,000-config mix's 100,000 read configs (half ConfigMaps,
// half Secrets), 10,000 data-key entries, 35,000 spare configs and 5,000 tombstones. Counted at
// what they add to the stored object (about 157 bytes each: the key twice, as managedFields name
// it again) they need 29 shards; eight held about 41,000 of them, and kept the rest in memory
// only. The tests take a tenth of the mix at a tenth of the budget (roomScale), the same
// arithmetic at a tenth of the CPU; state/integration fills all 32 shards at the real budget.
type roomMix struct{}

// roomScale divides the mix and the budget.
const roomScale = 10

// scaled returns a store of a roomScale-th of the budget over c, loaded.
func scaled(t *testing.T, c *statetest.ConfigMaps, log *bytes.Buffer) *state.Store {
	t.Helper()
	s := newStore(c, log)
	state.SetBudget(s, state.ShardBudget/roomScale)
	if _, err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

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

// fill sets a roomScale-th of the mix's 150,000 entries and returns their keys.
func (m roomMix) fill(s *state.Store) []string {
	var keys []string
	set := func(k string, spare bool) {
		s.Configs().SetSpare(state.ConfigOf(k), spare)
		s.Configs().Set(k, hashFor(k))
		keys = append(keys, k)
	}
	for i := range 100000 / roomScale {
		set(m.read(i), false)
		if i%10 == 0 {
			set(state.KeyOf(m.read(i), "settings.yaml"), false)
		}
	}
	for i := range 35000 / roomScale {
		set(m.spare(i), true)
	}
	for i := range 5000 / roomScale {
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
	s := scaled(t, c, &log)
	m := roomMix{}
	keys := m.fill(s)
	flush(t, s)
	if n := s.Unsaved(); n != 0 {
		t.Fatalf("%d of %d entries are kept in memory only, want none", n, len(keys))
	}
	if strings.Contains(log.String(), "state is full") {
		t.Errorf("the state said it was full:\n%s", log.String())
	}
	if stored := storedValues(t, storedShards(t, c, state.ShardBudget/roomScale)); len(stored) != len(keys) {
		t.Fatalf("%d entries stored, want %d", len(stored), len(keys))
	}
	restarted := scaled(t, c, nil)
	for _, k := range keys {
		if e, ok := restarted.Configs().Get(k); !ok || (e.Hash != hashFor(k) && !e.Deleted) {
			t.Fatalf("%s after a restart: %+v, %v", k, e, ok)
		}
	}

	// 150,000 more read configs: the shards left and the spare ones' room hold about 15,000.
	for i := 100000 / roomScale; i < 250000/roomScale; i++ {
		s.Configs().Set(m.read(i), hashFor(m.read(i)))
	}
	flush(t, s)
	if n := strings.Count(log.String(), "state is full"); n != 1 {
		t.Errorf("%d log lines about the full state, want 1", n)
	}
	if n := s.Configs().UnsavedSpare(); n != 35000/roomScale {
		t.Errorf("%d spare entries in memory only, want all %d evicted", n, 35000/roomScale)
	}
	for _, st := range s.Stats() {
		if st.Bytes > state.ShardBudget/roomScale {
			t.Errorf("%s counts %d bytes, past the %d budget", st.Name, st.Bytes, state.ShardBudget/roomScale)
		}
	}
	shards := storedShards(t, c, state.ShardBudget/roomScale)
	if len(shards) != state.MaxShards {
		t.Errorf("%d shards written, want all %d", len(shards), state.MaxShards)
	}
	stored := storedValues(t, shards)
	for i := range 35000 / roomScale {
		if _, ok := stored[m.spare(i)]; ok {
			t.Fatalf("spare %s is still stored in a full state", m.spare(i))
		}
	}
	for i := range 100000 / roomScale {
		if _, ok := stored[m.read(i)]; !ok {
			t.Fatalf("read %s is not stored", m.read(i))
		}
	}
	if want := len(keys) + 150000/roomScale - s.Unsaved(); len(stored) != want || want < 160000/roomScale {
		t.Errorf("%d entries stored, want %d, and at least %d", len(stored), want, 160000/roomScale)
	}
}
