package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reloader/reloader/state"
)

// At the real budget, with every shard full: the entries that do not fit stay in memory, and the
// flush succeeds. The engine before tombstones put them all in the last shard, which grew to
// 2.15 MB and could never be written (reproduced with this sequence on d7ae632). The 32 shards
// hold more than 150,000 entries (issue 52: the 500,000-config mix's 100,000 read configs and
// the rest), written, and loaded back at a restart; eight held 61,824.
func TestAStateFullAtTheRealBudgetIsNeverWrittenPastIt(t *testing.T) {
	ctx := context.Background()
	ns := cluster.NewNamespace(t)
	var log bytes.Buffer
	s := newStore(cluster.Client(), ns, &log)
	start := time.Now()
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Load of no state (%d GETs and a create): %s", state.MaxShards, time.Since(start))
	// A 45-byte key and a 40-byte hash, each counted at its largest size (106 bytes): each
	// shard of 800 KiB holds 7,728 of them.
	key := func(i int) string { return fmt.Sprintf("v1.ConfigMap_config-with-a-long-name-%06d", i) }
	capacity := state.MaxShards * (state.ShardBudget / state.Reserved(key(0)))
	for i := range capacity + 5000 {
		s.Configs().Set(key(i), fmt.Sprintf("%040x", i))
	}
	start = time.Now()
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("flush of a full state: %v", err)
	}
	t.Logf("flush of %d shards: %s", state.MaxShards, time.Since(start))
	if n := s.Unsaved(); n != 5000 {
		t.Fatalf("%d entries are reported as kept in memory only, want 5,000", n)
	}
	for _, st := range s.Stats() {
		if st.Bytes > state.ShardBudget {
			t.Errorf("%s counts %d bytes, past the %d budget", st.Name, st.Bytes, state.ShardBudget)
		}
	}
	if n := strings.Count(log.String(), "state is full"); n != 1 {
		t.Errorf("%d log lines say the state is full, want 1", n)
	}

	restarted := newStore(cluster.Client(), ns, nil)
	start = time.Now()
	if _, err := restarted.Load(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Load of %d full shards: %s", state.MaxShards, time.Since(start))
	n := restarted.Configs().Count(func(string, state.Entry) bool { return true })
	if n != capacity || n < 150000 {
		t.Errorf("%d entries loaded after a restart, want the %d saved, and at least 150,000", n, capacity)
	}
}

// A full state on the API server: the entries of read configs added past its capacity take the
// room of spare ones, so a restart loads every read config's entry and loses only spare ones.
func TestAFullStateKeepsReadEntriesAcrossARestartAndDropsSpareOnes(t *testing.T) {
	ns := cluster.NewNamespace(t)
	key := func(i int) string { return fmt.Sprintf("v1.ConfigMap_c-%04d", i) }
	const perShard = 20
	capacity := perShard * state.MaxShards
	budget := perShard * state.Reserved(key(0))
	open := func() *state.Store {
		s := newStore(cluster.Client(), ns, nil)
		state.SetBudget(s, budget)
		if _, err := s.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	for i := range capacity {
		s.Configs().SetSpare(key(i), true)
		s.Configs().Set(key(i), hashOf(key(i)))
	}
	flush(t, s)
	const read = 30
	for i := capacity; i < capacity+read; i++ {
		s.Configs().Set(key(i), hashOf(key(i)))
	}
	flush(t, s)
	if n, spare := s.Unsaved(), s.Configs().UnsavedSpare(); n != read || spare != read {
		t.Fatalf("Unsaved = %d, of them spare %d; want %d spare ones", n, spare, read)
	}

	restarted := open()
	for i := capacity; i < capacity+read; i++ {
		if e, ok := restarted.Configs().Get(key(i)); !ok || e.Hash != hashOf(key(i)) {
			t.Errorf("read config %s after a restart: %+v, %v", key(i), e, ok)
		}
	}
	if n := restarted.Configs().Count(func(string, state.Entry) bool { return true }); n != capacity {
		t.Errorf("%d entries loaded, want the %d the shards hold", n, capacity)
	}
}
