package state_test

import (
	"context"
	"testing"

	"github.com/reloader/reloader/state"
	"github.com/reloader/reloader/state/statetest"
)

// Only the data keys named stay, in memory and in the ConfigMap; other configs' are untouched.
func TestKeepDataKeysRemovesTheOthersOfThatConfigOnly(t *testing.T) {
	ctx := context.Background()
	c := statetest.NewConfigMaps()
	s := newStore(c, nil)
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	app, other := state.Key("ConfigMap", "", "app"), state.Key("ConfigMap", "", "other")
	for _, k := range []string{app, state.KeyOf(app, "a"), state.KeyOf(app, "b"), other, state.KeyOf(other, "a")} {
		s.Configs().Set(k, hashOf(k))
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	s.Configs().KeepDataKeys(app, map[string]bool{state.KeyOf(app, "b"): true})
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	again := newStore(c, nil)
	if _, err := again.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*state.Store{s, again} {
		for k, want := range map[string]bool{app: true, state.KeyOf(app, "a"): false, state.KeyOf(app, "b"): true, other: true, state.KeyOf(other, "a"): true} {
			if _, ok := st.Configs().Get(k); ok != want {
				t.Errorf("%s present = %v, want %v", k, ok, want)
			}
		}
	}
}
