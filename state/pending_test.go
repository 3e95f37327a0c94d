package state_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/state"
)

func TestPendingEntriesSurviveAReloadAndAreNotConfigs(t *testing.T) {
	ns := cluster.NewNamespace(t)
	s := loaded(t, ns, nil)
	held := state.PendingKey("Deployment", "", "web")
	at := time.Unix(1795000000, 999)
	s.SetPending(held, at)
	s.SetPending(held, at.Add(time.Hour)) // already pending: keeps its first time
	s.Set(state.Key("ConfigMap", "", "cfg"), hashOf("cfg"))
	flush(t, s)
	if got := stored(t, ns)[held]; got != "pending@1795000000" {
		t.Fatalf("stored %q, want pending@1795000000", got)
	}

	again := loaded(t, ns, nil)
	if got := again.PendingKeys(); len(got) != 1 || !got[held].Equal(time.Unix(1795000000, 0)) {
		t.Fatalf("pending after reload: %v", got)
	}
	// A pending entry is no config: it is never tombstoned as missing.
	if n := again.TombstoneMissing(func(string) bool { return false }, at); n != 1 {
		t.Fatalf("tombstoned %d entries, want only the config's", n)
	}
	if _, _, _, ok := state.ParseKey(held); ok {
		t.Fatal("a pending key parsed as a config key")
	}
	again.DeleteEntry(held)
	flush(t, again)
	if _, ok := stored(t, ns)[held]; ok {
		t.Fatal("deleted pending entry still stored")
	}
}

func TestPendingValueUnderAConfigKeyIsCorrupt(t *testing.T) {
	ns := cluster.NewNamespace(t)
	cfg, held := state.Key("ConfigMap", "", "cfg"), state.PendingKey("Deployment", "", "web")
	s := loaded(t, ns, nil)
	s.Set(cfg, hashOf("cfg"))
	s.SetPending(held, time.Unix(1795000000, 0))
	flush(t, s)
	cms := cluster.Client().CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(context.Background(), "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[cfg], cm.Data[held] = "pending@1795000000", hashOf("x")
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	again := loaded(t, ns, &log)
	if _, ok := again.Get(cfg); ok {
		t.Error("a pending value under a config key was loaded")
	}
	if _, ok := again.Get(held); ok {
		t.Error("a hash under a pending key was loaded")
	}
	if !bytes.Contains(log.Bytes(), []byte("corrupt")) {
		t.Errorf("no corruption logged: %s", log.String())
	}
}
