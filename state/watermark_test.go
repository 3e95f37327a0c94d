package state_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/state"
	"github.com/reloader/reloader/state/statetest"
)

// The watermark is the highest shard version a Load read: none at a first start, and a write
// that Seen asks for raises the next Load's.
func TestTheWatermarkCoversAConfigSeenWithoutAnEntry(t *testing.T) {
	ctx := context.Background()
	client := statetest.NewConfigMaps()
	s := signedLoad(t, client)
	if w, _ := s.Watermark(); w != "" {
		t.Fatalf("Watermark after a Load that created the state = %q, want none", w)
	}
	s = signedLoad(t, client)
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
	s = signedLoad(t, client)
	if w, _ := s.Watermark(); w != cm.ResourceVersion {
		t.Fatalf("Watermark = %q, want the shard's version %q", w, cm.ResourceVersion)
	}
	if w, _ := s.Watermark(); mustUint(t, w) <= n {
		t.Fatalf("Watermark %s not above the one before, %d", w, n)
	}
}

// A state no reloader wrote, as a manifest creates it (no stamp), has no watermark: its version
// says nothing of which configs a reloader saw.
func TestAStateNoReloaderWroteHasNoWatermark(t *testing.T) {
	client := statetest.NewConfigMaps()
	if _, err := client.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "reloader-state"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if rv, at := signedLoad(t, client).Watermark(); rv != "" || !at.IsZero() {
		t.Fatalf("Watermark of a state no reloader wrote = %q, %v; want none", rv, at)
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

// hmacStamps sign "shard time" under a fixed key, as the wiring does under the hash key.
type hmacStamps struct{}

func (hmacStamps) sum(shard, t string) string {
	h := hmac.New(sha256.New, []byte("test key"))
	h.Write([]byte(shard + "\x00" + t))
	return hex.EncodeToString(h.Sum(nil))
}

func (s hmacStamps) Stamp(shard string, at time.Time) string {
	t := at.UTC().Format(time.RFC3339Nano)
	return t + " " + s.sum(shard, t)
}

func (s hmacStamps) Verify(shard, v string) (time.Time, bool) {
	t, mac, _ := strings.Cut(v, " ")
	at, err := time.Parse(time.RFC3339Nano, t)
	return at, err == nil && hmac.Equal([]byte(mac), []byte(s.sum(shard, t)))
}

// signedLoad is a store over client that signs its writes with hmacStamps, loaded.
func signedLoad(t *testing.T, client state.ConfigMapClient) *state.Store {
	t.Helper()
	s := newStore(client, nil)
	s.SignWrites(hmacStamps{})
	if _, err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// The watermark's time is the one this reloader stamped on its last write, never one anyone who
// may write the state puts in its managedFields: a forged later time there changes nothing, and a
// stamp that does not verify gives no time at all (the rule's "created at or before the
// watermark's write" is then off: the reloader does less, never more).
func TestTheWatermarkTimeIsTheReloadersOwnSignedStamp(t *testing.T) {
	ctx := context.Background()
	client := statetest.NewConfigMaps()
	signedLoad(t, client) // creates the state
	s := signedLoad(t, client)
	w, _ := s.Watermark()
	before := time.Now()
	s.Seen(strconv.FormatUint(mustUint(t, w)+5, 10))
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	s = signedLoad(t, client)
	_, honest := s.Watermark()
	if honest.Before(before) || honest.After(after) {
		t.Fatalf("Watermark time %v, want the flush's, within [%v, %v]", honest, before, after)
	}
	if _, at := newStore(client, nil).Watermark(); !at.IsZero() {
		t.Fatalf("an unloaded store's watermark time = %v", at)
	}

	cm, err := client.Get(ctx, "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	forged := metav1.NewTime(after.Add(time.Hour))
	cm.ManagedFields = append(cm.ManagedFields, metav1.ManagedFieldsEntry{Manager: "someone-else",
		Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &forged})
	if _, err := client.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s = signedLoad(t, client)
	if rv, at := s.Watermark(); !at.Equal(honest) || mustUint(t, rv) <= mustUint(t, cm.ResourceVersion) {
		t.Fatalf("after a foreign write with a later managedFields time, Watermark = %s, %v; want a higher version than %s and still %v",
			rv, at, cm.ResourceVersion, honest)
	}

	unsigned := newStore(client, nil) // no key: no stamp verifies
	if _, err := unsigned.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if rv, at := unsigned.Watermark(); rv != "" || !at.IsZero() {
		t.Fatalf("Watermark without a key = %q, %v; want none", rv, at)
	}

	later := after.Add(time.Hour).UTC().Format(time.RFC3339Nano)
	for _, v := range []string{later + " " + strings.Repeat("0", 64), later, hmacStamps{}.Stamp("reloader-state-1", after.Add(time.Hour))} {
		setOther(t, client, state.FlushedAtKey, v)
		if rv, at := signedLoad(t, client).Watermark(); rv != "" || !at.IsZero() {
			t.Fatalf("Watermark with the one stamp not verifying (%q) = %q, %v; want none", v, rv, at)
		}
	}
}

// setOther writes key=v in the first shard as someone else does.
func setOther(t *testing.T, client *statetest.ConfigMaps, key, v string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"data": map[string]string{key: v}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Patch(context.Background(), "reloader-state", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
