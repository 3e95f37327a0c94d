package state_test

import (
	"bytes"
	"context"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/state"
	"github.com/reloader/reloader/state/statetest"
)

// loaded returns a Store that has loaded the state c holds.
func loaded(t *testing.T, c *statetest.ConfigMaps, log *bytes.Buffer) *state.Store {
	t.Helper()
	s := newStore(c, log)
	if _, err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func flush(t *testing.T, s *state.Store) {
	t.Helper()
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// stored returns the data of the first state ConfigMap c holds.
func stored(t *testing.T, c *statetest.ConfigMaps) map[string]string {
	t.Helper()
	cm, err := c.Get(context.Background(), "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(cm.Data, state.FlushedAtKey) // each write's stamp
	return cm.Data
}

func TestSetRevivesATombstone(t *testing.T) {
	c := statetest.NewConfigMaps()
	s := loaded(t, c, nil)
	k := state.Key("ConfigMap", "", "app")
	s.Configs().Tombstone(k, hashOf("old"), time.Unix(1795000000, 0))
	flush(t, s)
	s.Configs().Set(k, hashOf("new"))
	if e, _ := s.Configs().Get(k); e != (state.Entry{Hash: hashOf("new")}) {
		t.Fatalf("after Set, Get = %+v, want live with the new hash", e)
	}
	flush(t, s)
	if v := stored(t, c)[k]; v != hashOf("new") {
		t.Fatalf("stored %q, want the bare new hash", v)
	}
	if n := len(loaded(t, c, nil).Configs().Tombstones()); n != 0 {
		t.Fatalf("reloaded state has %d tombstones, want none", n)
	}
}

func TestTombstoneMissingKeepsAnExistingTombstonesSince(t *testing.T) {
	c := statetest.NewConfigMaps()
	s := loaded(t, c, nil)
	old, gone, live := state.Key("ConfigMap", "", "old"), state.Key("ConfigMap", "", "gone"), state.Key("ConfigMap", "", "live")
	t1, t2 := time.Unix(1795000000, 0), time.Unix(1795000600, 0)
	s.Configs().Set(old, hashOf("old"))
	s.Configs().Tombstone(old, "", t1)
	s.Configs().Set(gone, hashOf("gone"))
	s.Configs().Set(state.KeyOf(gone, "k"), hashOf("k"))
	s.Configs().Set(live, hashOf("live"))
	if n := s.Configs().TombstoneMissing(func(config string) bool { return config == live }, t2); n != 1 {
		t.Fatalf("TombstoneMissing = %d, want 1: only %s was live until now", n, gone)
	}
	flush(t, s)

	again := loaded(t, c, nil)
	for k, want := range map[string]state.Entry{
		old:                    {Hash: hashOf("old"), Deleted: true, Since: t1},
		gone:                   {Hash: hashOf("gone"), Deleted: true, Since: t2},
		state.KeyOf(gone, "k"): {Hash: hashOf("k")},
		live:                   {Hash: hashOf("live")},
	} {
		got, ok := again.Configs().Get(k)
		if !ok || got.Hash != want.Hash || got.Deleted != want.Deleted || !got.Since.Equal(want.Since) {
			t.Errorf("%s = %+v, %v; want %+v", k, got, ok, want)
		}
	}
}

func TestTombstoneKeepsSinceAndAKnownHash(t *testing.T) {
	s := state.New(nil, "", "reloader-state", slog.New(slog.DiscardHandler))
	k := state.Key("Secret", "", "db")
	t1, t2 := time.Unix(1795000000, 0), time.Unix(1795000600, 0)
	steps := []struct {
		name string
		do   func()
		want state.Entry
	}{
		{"absent config", func() { s.Configs().Tombstone(k, "", t1) }, state.Entry{Deleted: true, Since: t1}},
		{"hash learnt later", func() { s.Configs().Tombstone(k, hashOf("a"), t2) }, state.Entry{Hash: hashOf("a"), Deleted: true, Since: t1}},
		{"no hash keeps it", func() { s.Configs().Tombstone(k, "", t2) }, state.Entry{Hash: hashOf("a"), Deleted: true, Since: t1}},
		{"revived", func() { s.Configs().Set(k, hashOf("b")) }, state.Entry{Hash: hashOf("b")}},
		{"deleted again", func() { s.Configs().Tombstone(k, "", t2) }, state.Entry{Hash: hashOf("b"), Deleted: true, Since: t2}},
		{"delete then tombstone clears the hash", func() { s.Configs().Delete(k); s.Configs().Tombstone(k, "", t1) }, state.Entry{Deleted: true, Since: t1}},
	}
	for _, st := range steps {
		st.do()
		got, _ := s.Configs().Get(k)
		if got.Hash != st.want.Hash || got.Deleted != st.want.Deleted || !got.Since.Equal(st.want.Since) {
			t.Fatalf("%s: Get = %+v, want %+v", st.name, got, st.want)
		}
	}
}

func TestValuesThatWouldNotLoadBackAreRefused(t *testing.T) {
	config := state.Key("ConfigMap", "", "app")
	dataKey := state.KeyOf(config, "x")
	at := time.Unix(1795000000, 0)
	tests := []struct {
		name string
		do   func(*state.Store)
		key  string
	}{
		{"a tombstone value set as a hash", func(s *state.Store) { s.Configs().Set(config, "deleted@1795000000:") }, config},
		{"an upper-case hash", func(s *state.Store) { s.Configs().Set(config, strings.ToUpper(hashOf("a"))) }, config},
		{"a data-key tombstone", func(s *state.Store) { s.Configs().Tombstone(dataKey, "", at) }, dataKey},
		{"a tombstone with a bad hash", func(s *state.Store) { s.Configs().Tombstone(config, "nope", at) }, config},
		{"a keyed hash under a ConfigMap", func(s *state.Store) { s.Configs().Set(config, keyedOf("a")) }, config},
		{"a keyed hash under a ConfigMap's data key", func(s *state.Store) { s.Configs().Set(dataKey, keyedOf("a")) }, dataKey},
		{"a tombstone with a keyed hash under a ConfigMap", func(s *state.Store) { s.Configs().Tombstone(config, keyedOf("a"), at) }, config},
		{"a malformed keyed hash under a Secret", func(s *state.Store) { s.Configs().Set("v1.Secret_db", "hmac-0000-"+hashOf("a")) }, "v1.Secret_db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			s := state.New(nil, "", "reloader-state", textLog(&log))
			tt.do(s)
			if e, ok := s.Configs().Get(tt.key); ok {
				t.Fatalf("recorded %+v", e)
			}
			if !strings.Contains(log.String(), "refusing to record") || !strings.Contains(log.String(), "key="+tt.key) {
				t.Fatalf("no log line naming the refused key:\n%s", log.String())
			}
		})
	}
}

func TestTombstoneMissingTombstonesAConfigWithOnlyDataKeyEntriesLeft(t *testing.T) {
	s := state.New(nil, "", "reloader-state", slog.New(slog.DiscardHandler))
	config := state.Key("ConfigMap", "", "app")
	s.Configs().Set(state.KeyOf(config, "x"), hashOf("x"))
	at := time.Unix(1795000000, 0)
	if n := s.Configs().TombstoneMissing(func(string) bool { return false }, at); n != 1 {
		t.Fatalf("TombstoneMissing = %d, want 1", n)
	}
	if e, _ := s.Configs().Get(config); !e.Deleted || e.Hash != "" || !e.Since.Equal(at) {
		t.Fatalf("config entry = %+v, want a tombstone without a hash since %v", e, at)
	}
	s.Configs().Delete(config)
	if _, ok := s.Configs().Get(state.KeyOf(config, "x")); ok {
		t.Fatal("pruning the tombstone left its data-key entry")
	}
}

func TestCorruptTombstoneIsDroppedOnLoad(t *testing.T) {
	ctx := context.Background()
	c := statetest.NewConfigMaps()
	good := "deleted@1795000000:" + hashOf("g")
	corrupt := map[string]string{
		"v1.ConfigMap_bad-time":      "deleted@soon:" + hashOf("t"),
		"v1.ConfigMap_bad-hash":      "deleted@1795000000:zz",
		"v1.ConfigMap_no-colon":      "deleted@1795000000",
		"v1.ConfigMap_prefix":        "removed@1795000000:",
		"v1.ConfigMap_app__data-key": "deleted@1795000000:",
		"v1.ConfigMap_keyed":         keyedOf("k"),
		"v1.ConfigMap_keyed-tomb":    "deleted@1795000000:" + keyedOf("k"),
		"v1.Secret_bad-keyed":        "hmac-" + hashOf("b"),
	}
	// A Secret's entries hold keyed hashes, live or in a tombstone.
	data := map[string]string{"v1.ConfigMap_good": good, "v1.Secret_keyed": keyedOf("s"),
		"v1.Secret_keyed__pw": keyedOf("p"), "v1.Secret_keyed-tomb": "deleted@1795000000:" + keyedOf("t")}
	want := maps.Clone(data)
	for k, v := range corrupt {
		data[k] = v
	}
	_, err := c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "reloader-state"}, Data: data}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	s := loaded(t, c, &log)
	for k := range corrupt {
		if e, ok := s.Configs().Get(k); ok {
			t.Errorf("corrupt %s loaded as %+v", k, e)
		}
		if !strings.Contains(log.String(), "key="+k) {
			t.Errorf("no log line names corrupt %s", k)
		}
	}
	if e, ok := s.Configs().Get("v1.ConfigMap_good"); !ok || !e.Deleted {
		t.Errorf("good tombstone = %+v, %v", e, ok)
	}
	flush(t, s)
	if got := stored(t, c); !maps.Equal(got, want) {
		t.Fatalf("after flush the state holds %v, want only the good entries %v", got, want)
	}
}
