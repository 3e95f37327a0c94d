package state_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/state"
	"github.com/reloader/reloader/state/statetest"
)

const perShard = 5

// entryKey returns config entry keys that all have the same length.
func entryKey(i int) string { return fmt.Sprintf("v1.ConfigMap_e-%03d", i) }

// smallStore returns a loaded Store whose shards hold perShard config entries each.
func smallStore(t *testing.T, c *statetest.ConfigMaps, log *bytes.Buffer) (*state.Store, int) {
	t.Helper()
	s := newStore(c, log)
	budget := perShard * state.Reserved(entryKey(0))
	state.SetBudget(s, budget)
	if _, err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, budget
}

// storedShards returns the data of every state ConfigMap c holds, failing the test if one holds
// more than budget bytes of keys and values.
func storedShards(t *testing.T, c *statetest.ConfigMaps, budget int) map[string]map[string]string {
	t.Helper()
	cms, err := c.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, cm := range cms.Items {
		if !strings.HasPrefix(cm.Name, "reloader-state") {
			continue
		}
		delete(cm.Data, state.FlushedAtKey) // each write's stamp, outside the budget
		size := 0
		for k, v := range cm.Data {
			size += len(k) + len(v)
		}
		if size > budget {
			t.Errorf("%s holds %d bytes, over its budget of %d", cm.Name, size, budget)
		}
		out[cm.Name] = cm.Data
	}
	return out
}

// storedValues merges the shards, failing the test if a key is stored twice.
func storedValues(t *testing.T, shards map[string]map[string]string) map[string]string {
	t.Helper()
	out, where := map[string]string{}, map[string]string{}
	for name, data := range shards {
		for k, v := range data {
			if other, dup := where[k]; dup {
				t.Errorf("%s is stored twice: %q in %s and %q in %s", k, out[k], other, v, name)
			}
			out[k], where[k] = v, name
		}
	}
	return out
}

func TestAFullStateKeepsNewEntriesInMemoryAndWritesThemWhenRoomAppears(t *testing.T) {
	c := statetest.NewConfigMaps()
	var log bytes.Buffer
	s, budget := smallStore(t, c, &log)
	capacity := perShard * state.MaxShards
	for i := range capacity + 3 {
		s.Configs().Set(entryKey(i), hashOf(fmt.Sprint(i)))
	}
	flush(t, s)
	if n := s.Unsaved(); n != 3 {
		t.Fatalf("Unsaved = %d, want 3", n)
	}
	if n := strings.Count(log.String(), "state is full"); n != 1 {
		t.Fatalf("%d log lines about the full state, want 1 for the transition:\n%s", n, log.String())
	}
	if n := len(storedValues(t, storedShards(t, c, budget))); n != capacity {
		t.Fatalf("%d entries stored, want %d", n, capacity)
	}

	// Every entry turning into a tombstone still fits its shard.
	for i := range capacity + 3 {
		s.Configs().Tombstone(entryKey(i), "", time.Unix(1795000000, 0))
	}
	flush(t, s)
	storedShards(t, c, budget)

	// Deleting two stored entries makes room for two of the memory-only ones.
	s.Configs().Delete(entryKey(0))
	s.Configs().Delete(entryKey(1))
	flush(t, s)
	if n := s.Unsaved(); n != 1 {
		t.Fatalf("after two deletions Unsaved = %d, want 1", n)
	}
	values := storedValues(t, storedShards(t, c, budget))
	if len(values) != capacity {
		t.Fatalf("%d entries stored after two deletions, want %d", len(values), capacity)
	}
	for k, v := range values {
		if e, _ := s.Configs().Get(k); !e.Deleted || !strings.HasSuffix(v, ":"+e.Hash) {
			t.Errorf("stored %s = %q, in memory %+v", k, v, e)
		}
	}

	// Room for the last one ends the full state; filling it again is logged again, once.
	s.Configs().Delete(entryKey(2))
	flush(t, s)
	if n := s.Unsaved(); n != 0 || !strings.Contains(log.String(), "state has room again") {
		t.Fatalf("Unsaved = %d, log:\n%s", n, log.String())
	}
	s.Configs().Set(entryKey(900), hashOf("900"))
	s.Configs().Set(entryKey(901), hashOf("901"))
	if n := strings.Count(log.String(), "state is full"); n != 2 {
		t.Fatalf("%d log lines about the full state, want 2 for two transitions:\n%s", n, log.String())
	}
}

func TestAKeyReAddedBeforeTheFlushIsStoredOnce(t *testing.T) {
	tests := []struct {
		name string
		// reAdd deletes k, then re-adds it with v, given entries 0..9 filling shards 0 and 1
		// with k among them in shard 1.
		reAdd func(s *state.Store, k, v string)
	}{
		{"room back in a lower shard", func(s *state.Store, k, v string) {
			s.Configs().Delete(entryKey(0))
			s.Configs().Delete(k)
			s.Configs().Set(k, v)
		}},
		{"its shard filled meanwhile", func(s *state.Store, k, v string) {
			s.Configs().Delete(k)
			s.Configs().Set(entryKey(100), hashOf("took its place"))
			s.Configs().Delete(entryKey(0))
			s.Configs().Set(k, v)
		}},
		{"moved twice", func(s *state.Store, k, v string) {
			s.Configs().Delete(k)
			s.Configs().Set(entryKey(100), hashOf("took its place"))
			s.Configs().Delete(entryKey(0))
			s.Configs().Set(k, hashOf("in shard 0"))
			s.Configs().Delete(k)
			s.Configs().Set(entryKey(101), hashOf("took its place"))
			s.Configs().Delete(entryKey(5))
			s.Configs().Set(k, v)
		}},
		{"tombstoned in between", func(s *state.Store, k, v string) {
			s.Configs().Delete(entryKey(0))
			s.Configs().Delete(k)
			s.Configs().Tombstone(k, hashOf("tombstoned"), time.Unix(1795000000, 0))
			s.Configs().Set(k, v)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := statetest.NewConfigMaps()
			s, budget := smallStore(t, c, nil)
			k := entryKey(7)
			for i := range 2 * perShard {
				s.Configs().Set(entryKey(i), hashOf("old"))
			}
			flush(t, s)
			if shards := storedShards(t, c, budget); shards["reloader-state-1"][k] == "" {
				t.Fatalf("setup: %s is not in shard 1: %v", k, shards)
			}
			tt.reAdd(s, k, hashOf("new"))
			flush(t, s)
			if v := storedValues(t, storedShards(t, c, budget))[k]; v != hashOf("new") {
				t.Fatalf("stored %s = %q, want the new hash", k, v)
			}
			if e, _ := loaded(t, c, nil).Configs().Get(k); e.Hash != hashOf("new") {
				t.Fatalf("reloaded %s = %+v, want the new hash", k, e)
			}
		})
	}
}

func TestAnEntryStoredTwiceIsLoadedFromTheLowerShardAndRemovedFromTheOther(t *testing.T) {
	ctx := context.Background()
	c := statetest.NewConfigMaps()
	k := entryKey(1)
	for name, v := range map[string]string{"reloader-state": hashOf("lower"), "reloader-state-2": hashOf("higher")} {
		if _, err := c.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{k: v}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	s := loaded(t, c, &log)
	if e, _ := s.Configs().Get(k); e.Hash != hashOf("lower") {
		t.Fatalf("loaded %+v, want the lower shard's copy", e)
	}
	if !strings.Contains(log.String(), "state entry is stored twice") {
		t.Fatalf("no log line about the duplicate:\n%s", log.String())
	}
	flush(t, s)
	if v := storedValues(t, storedShards(t, c, state.ShardBudget))[k]; v != hashOf("lower") {
		t.Fatalf("stored %q, want the lower shard's copy only", v)
	}
}

// gets counts the GETs of a ConfigMap client.
type gets struct {
	*statetest.ConfigMaps
	n int
}

func (g *gets) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error) {
	g.n++
	return g.ConfigMaps.Get(ctx, name, opts)
}

// Shards are opened in order and never deleted by the store: a Load reads up to two missing in a
// row, so a small state costs three GETs, not MaxShards, and one deleted shard hides none after it.
func TestALoadReadsTheShardsUpToTwoMissingInARow(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shards []int // the shards that exist, one entry each
		loaded []int
		gets   int
	}{
		{name: "one shard", shards: []int{0}, loaded: []int{0}, gets: 3},
		{name: "three shards", shards: []int{0, 1, 2}, loaded: []int{0, 1, 2}, gets: 5},
		{name: "one deleted in the middle", shards: []int{0, 2, 3}, loaded: []int{0, 2, 3}, gets: 6},
		{name: "two deleted in a row hide the rest", shards: []int{0, 3}, loaded: []int{0}, gets: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &gets{ConfigMaps: statetest.NewConfigMaps()}
			names := state.New(nil, "", "reloader-state", nil)
			for _, i := range tc.shards {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: names.ShardName(i)},
					Data: map[string]string{entryKey(i): hashOf(fmt.Sprint(i))}}
				if _, err := c.ConfigMaps.Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			s := state.New(c, "default", "reloader-state", textLog(io.Discard))
			if _, err := s.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			var loaded []int
			for i := range state.MaxShards {
				if _, ok := s.Configs().Get(entryKey(i)); ok {
					loaded = append(loaded, i)
				}
			}
			if fmt.Sprint(loaded) != fmt.Sprint(tc.loaded) || c.n != tc.gets {
				t.Errorf("loaded the entries of shards %v with %d GETs; want %v with %d", loaded, c.n, tc.loaded, tc.gets)
			}
		})
	}
}
