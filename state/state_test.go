package state_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/state"
	"github.com/reloader/reloader/state/statetest"
)

func hashOf(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// keyedOf is a keyed hash, in the form a Secret's entries hold (package confighash).
func keyedOf(s string) string { return "hmac-2b39b88d-" + hashOf(s) }

// newStore logs to log, or to stderr when log is nil.
func newStore(client state.ConfigMapClient, log *bytes.Buffer) *state.Store {
	var w io.Writer = os.Stderr
	if log != nil {
		w = log
	}
	return state.New(client, "default", "reloader-state", textLog(w))
}

func textLog(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, nil))
}

func TestKeyEncoding(t *testing.T) {
	long := strings.Repeat("a", 250)
	tests := []struct {
		name            string
		kind, ns, cname string
		want            string
	}{
		{"single namespace", "ConfigMap", "", "app", "v1.ConfigMap_app"},
		{"secret", "Secret", "", "db.creds", "v1.Secret_db.creds"},
		{"all namespaces carries the namespace", "ConfigMap", "team-a", "app", "v1.ConfigMap_team-a_app"},
		{"over-long key is hashed", "ConfigMap", "ns", long, "v1.ConfigMap__" + hashOf("ns/"+long)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := state.Key(tt.kind, tt.ns, tt.cname)
			if got != tt.want {
				t.Fatalf("Key = %q, want %q", got, tt.want)
			}
			if kind := state.KindOf(got); kind != tt.kind {
				t.Fatalf("KindOf(%q) = %q, want %q", got, kind, tt.kind)
			}
			if kind := state.KindOf(state.KeyOf(got, "k")); kind != tt.kind {
				t.Fatalf("KindOf of a data-key entry of %q = %q, want %q", got, kind, tt.kind)
			}
		})
	}
	if kind := state.KindOf("someone-else"); kind != "" {
		t.Fatalf("KindOf of a key that is not ours = %q", kind)
	}
}

func TestDataKeyEntriesMapBackToTheirConfig(t *testing.T) {
	long := strings.Repeat("b", 250)
	tests := []struct{ config, dataKey string }{
		{state.Key("ConfigMap", "", "app"), "x"},
		{state.Key("ConfigMap", "ns", "app.v2"), "config__file.yaml"},
		{state.Key("Secret", "", long), "k"},
		{state.Key("ConfigMap", "", "app"), long},
	}
	for _, tt := range tests {
		k := state.KeyOf(tt.config, tt.dataKey)
		if len(k) > 253 {
			t.Errorf("KeyOf(%q, %q) is %d long", tt.config, tt.dataKey, len(k))
		}
		if got := state.ConfigOf(k); got != tt.config {
			t.Errorf("ConfigOf(%q) = %q, want %q", k, got, tt.config)
		}
		if got := state.ConfigOf(tt.config); got != tt.config {
			t.Errorf("ConfigOf(%q) = %q, want itself", tt.config, got)
		}
	}
}

func TestKeysNeverCollide(t *testing.T) {
	// '_' appears in no Kubernetes name, so namespace/name splits stay apart.
	pairs := [][2][3]string{
		{{"ConfigMap", "a-b", "c"}, {"ConfigMap", "a", "b-c"}},
		{{"ConfigMap", "", "app-config"}, {"ConfigMap", "", "app.config"}},
		{{"ConfigMap", "", "x"}, {"Secret", "", "x"}},
	}
	for _, p := range pairs {
		a, b := state.Key(p[0][0], p[0][1], p[0][2]), state.Key(p[1][0], p[1][1], p[1][2])
		if a == b {
			t.Errorf("%v and %v share key %q", p[0], p[1], a)
		}
	}
}

func TestFirstLoadCreatesStateAndReportsFirstStart(t *testing.T) {
	ctx := context.Background()
	c := statetest.NewConfigMaps()
	s := newStore(c, nil)
	first, err := s.Load(ctx)
	if err != nil || !first {
		t.Fatalf("Load = %v, %v; want first start", first, err)
	}
	if _, err := c.Get(ctx, "reloader-state", metav1.GetOptions{}); err != nil {
		t.Fatalf("state ConfigMap not created: %v", err)
	}
	s.Configs().Set(state.Key("ConfigMap", "", "app"), hashOf("1"))
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	again := newStore(c, nil)
	if first, err := again.Load(ctx); err != nil || first {
		t.Fatalf("second Load = %v, %v; want not first", first, err)
	}
	if e, _ := again.Configs().Get(state.Key("ConfigMap", "", "app")); e != (state.Entry{Hash: hashOf("1")}) {
		t.Fatalf("reloaded entry = %+v", e)
	}
}

func TestCorruptEntryIsDroppedWithALogLine(t *testing.T) {
	ctx := context.Background()
	c := statetest.NewConfigMaps()
	_, err := c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "reloader-state"},
		Data:       map[string]string{"v1.ConfigMap_good": hashOf("g"), "v1.ConfigMap_bad": "not-a-hash", "someone.else": "kept"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	s := newStore(c, &log)
	if first, err := s.Load(ctx); err != nil || first {
		t.Fatalf("Load = %v, %v", first, err)
	}
	if _, ok := s.Configs().Get("v1.ConfigMap_bad"); ok {
		t.Fatal("corrupt entry was loaded")
	}
	if !strings.Contains(log.String(), "state entry is corrupt") || !strings.Contains(log.String(), "v1.ConfigMap_bad") {
		t.Fatalf("no log line naming the corrupt entry:\n%s", log.String())
	}
	if !s.DroppedAsCorrupt("v1.ConfigMap_bad") || s.DroppedAsCorrupt("v1.ConfigMap_good") || s.DroppedAsCorrupt("v1.ConfigMap_none") {
		t.Fatal("DroppedAsCorrupt does not name only the corrupt entry")
	}
	at := time.Unix(1795000000, 0)
	if n := s.Configs().TombstoneMissing(func(string) bool { return false }, at); n != 1 {
		t.Fatalf("TombstoneMissing marked %d entries, want 1 (only ours)", n)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cm, _ := c.Get(ctx, "reloader-state", metav1.GetOptions{})
	delete(cm.Data, state.FlushedAtKey) // the write's stamp
	want := map[string]string{"someone.else": "kept", "v1.ConfigMap_good": "deleted@1795000000:" + hashOf("g")}
	if fmt.Sprint(cm.Data) != fmt.Sprint(want) {
		t.Fatalf("state after flush = %v, want the corrupt entry gone, the good one tombstoned and the foreign key kept: %v", cm.Data, want)
	}
	if _, err := s.Load(ctx); err != nil || s.DroppedAsCorrupt("v1.ConfigMap_bad") {
		t.Fatalf("after a Load of the flushed state (%v), the entry flushed away still counts as dropped", err)
	}
}

func TestDeletingAConfigDeletesItsDataKeyEntries(t *testing.T) {
	ctx := context.Background()
	c := statetest.NewConfigMaps()
	s := newStore(c, nil)
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	app, other := state.Key("ConfigMap", "", "app"), state.Key("ConfigMap", "", "app2")
	for _, k := range []string{app, state.KeyOf(app, "x"), state.KeyOf(app, "y"), other, state.KeyOf(other, "x")} {
		s.Configs().Set(k, hashOf(k))
	}
	s.Configs().Delete(app)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	again := newStore(c, nil)
	if _, err := again.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]bool{app: false, state.KeyOf(app, "x"): false, state.KeyOf(app, "y"): false, other: true, state.KeyOf(other, "x"): true} {
		if _, got := again.Configs().Get(k); got != want {
			t.Errorf("after deleting %s, entry %s present = %v, want %v", app, k, got, want)
		}
	}
}

// failOnce is a ConfigMapClient whose first Get of one shard fails, as an API server that stops
// answering halfway through a Load.
type failOnce struct {
	state.ConfigMapClient
	shard  string
	failed bool
}

func (f *failOnce) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error) {
	if name == f.shard && !f.failed {
		f.failed = true
		return nil, errors.New("connection refused")
	}
	return f.ConfigMapClient.Get(ctx, name, opts)
}

func TestALoadRetriedAfterAFailureCountsNothingTwice(t *testing.T) {
	c := statetest.NewConfigMaps()
	ctx := context.Background()
	first := newStore(c, nil)
	if _, err := first.Load(ctx); err != nil {
		t.Fatal(err)
	}
	first.Configs().Set(state.Key("ConfigMap", "", "a"), strings.Repeat("a", 40))
	if err := first.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	client := &failOnce{ConfigMapClient: c, shard: "reloader-state-1"}
	var log bytes.Buffer
	retried := state.New(client, "default", "reloader-state", textLog(&log))
	if _, err := retried.Load(ctx); err == nil {
		t.Fatal("the failing Load reported no error")
	}
	if _, err := retried.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := retried.Stats(), first.Stats(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after a retried Load the shards count %v, want %v", got, want)
	}
	if strings.Contains(log.String(), "stored twice") || !retried.Clean() {
		t.Fatalf("the retried Load took its own entries for duplicates:\n%s", log.String())
	}
}
