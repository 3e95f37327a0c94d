package state_test

import (
	"context"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/state"
	"github.com/reloader/reloader/state/statetest"
)

// The watermark is the highest shard version a Load read: none at a first start, and a write
// that Seen asks for raises the next Load's.
func TestTheWatermarkCoversAConfigSeenWithoutAnEntry(t *testing.T) {
	ctx := context.Background()
	client := statetest.NewConfigMaps()
	s := newStore(client, nil)
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if w, _ := s.Watermark(); w != "" {
		t.Fatalf("Watermark after a Load that created the state = %q, want none", w)
	}
	s = newStore(client, nil)
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	first, _ := s.Watermark()
	if first == "" {
		t.Fatal("no watermark after a Load that read the state")
	}
	n := mustUint(t, first)
	s.Seen(first) // at the watermark: nothing to write
	if !s.Clean() {
		t.Fatal("a config seen at the state's version made a write due")
	}
	above := strconv.FormatUint(n+5, 10)
	s.Seen(above)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cm, err := client.Get(ctx, "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data[state.FlushedAtKey] == "" {
		t.Fatalf("the flush wrote no %s: %v", state.FlushedAtKey, cm.Data)
	}
	s = newStore(client, nil)
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if w, _ := s.Watermark(); w != cm.ResourceVersion {
		t.Fatalf("Watermark = %q, want the shard's version %q", w, cm.ResourceVersion)
	}
	if w, _ := s.Watermark(); mustUint(t, w) <= n {
		t.Fatalf("Watermark %s not above the one before, %d", w, n)
	}
}

func mustUint(t *testing.T, v string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
