package state_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/reloader/reloader/state"
)

func TestHoldsAreStoredLoadedBackAndNeverTombstoned(t *testing.T) {
	ctx := context.Background()
	ns := cluster.NewNamespace(t)
	var log bytes.Buffer
	s := newStore(cluster.Client(), ns, &log)
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	cmHold := state.HoldKey("Deployment", "", "web", "ConfigMap", "app")
	secretHold := state.HoldKey("StatefulSet", "prod", "db", "Secret", "creds")
	long := state.HoldKey("Deployment", "", strings.Repeat("w", 200), "ConfigMap", strings.Repeat("c", 200))
	s.Hold(cmHold, hashOf("bad"))
	s.Hold(secretHold, keyedOf("bad"))
	s.Hold(long, hashOf("bad"))
	s.Hold(state.HoldKey("Deployment", "", "web", "ConfigMap", "other"), keyedOf("x")) // refused: keyed under a ConfigMap
	if !strings.Contains(log.String(), "refusing") {
		t.Errorf("a keyed hash held for a ConfigMap was not refused; log: %s", log.String())
	}
	if len(long) > 253 {
		t.Errorf("hold key is %d bytes, over the ConfigMap key limit", len(long))
	}
	if n := s.TombstoneMissing(func(string) bool { return false }, time.Now()); n != 0 {
		t.Errorf("TombstoneMissing tombstoned %d holds", n)
	}
	if _, _, _, ok := state.ParseKey(cmHold); ok {
		t.Error("ParseKey reads a hold as a config entry")
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	again := newStore(cluster.Client(), ns, nil)
	if _, err := again.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{cmHold: hashOf("bad"), secretHold: keyedOf("bad"), long: hashOf("bad")} {
		if got, ok := again.Held(key); !ok || got != want {
			t.Errorf("hold %s after a restart = %q, %v; want %q", key, got, ok, want)
		}
	}
	if _, ok := again.Held(state.Key("ConfigMap", "", "app")); ok {
		t.Error("a config entry reads as a hold")
	}
	again.DeleteEntry(cmHold)
	if err := again.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	third := newStore(cluster.Client(), ns, nil)
	if _, err := third.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := third.Held(cmHold); ok {
		t.Error("a lifted hold came back after a restart")
	}
}
