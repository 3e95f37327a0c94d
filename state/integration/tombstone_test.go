package integration_test

import (
	"testing"
	"time"

	"github.com/reloader/reloader/state"
)

func TestTombstonesRoundTripThroughTheAPIServer(t *testing.T) {
	ns := cluster.NewNamespace(t)
	s := loaded(t, ns, nil)
	deleted, absent := state.Key("ConfigMap", "", "deleted"), state.Key("Secret", "", "absent")
	at := time.Unix(1795000000, 123456789)
	s.Configs().Set(deleted, hashOf("last"))
	s.Configs().Set(state.KeyOf(deleted, "x"), hashOf("x"))
	s.Configs().Tombstone(deleted, "", at)
	s.Configs().Tombstone(absent, "", at)
	flush(t, s)

	data := stored(t, ns)
	for k, want := range map[string]string{
		deleted:                   "deleted@1795000000:" + hashOf("last"),
		absent:                    "deleted@1795000000:",
		state.KeyOf(deleted, "x"): hashOf("x"),
	} {
		if data[k] != want {
			t.Errorf("stored %s = %q, want %q", k, data[k], want)
		}
	}

	again := loaded(t, ns, nil)
	since := time.Unix(1795000000, 0)
	for k, want := range map[string]state.Entry{
		deleted:                   {Hash: hashOf("last"), Deleted: true, Since: since},
		absent:                    {Deleted: true, Since: since},
		state.KeyOf(deleted, "x"): {Hash: hashOf("x")},
	} {
		got, ok := again.Configs().Get(k)
		if !ok || got.Hash != want.Hash || got.Deleted != want.Deleted || !got.Since.Equal(want.Since) {
			t.Errorf("reloaded %s = %+v, %v; want %+v", k, got, ok, want)
		}
	}
	if got := again.Configs().Tombstones(); len(got) != 2 {
		t.Errorf("Tombstones() = %v, want %s and %s", got, deleted, absent)
	}
}
