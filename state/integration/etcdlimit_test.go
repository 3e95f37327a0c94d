package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/state"
)

// etcd takes at most 1.5 MiB per request (--max-request-bytes), and it stores a shard with its
// managedFields, which name every key once more. The longest keys are the worst case: a full
// shard of ConfigMap data-key entries of 253 bytes, holding plain hashes, must leave room under
// that limit for the shard's metadata and another writer's managedFields (a kubectl edit), here
// 256 KiB. A budget that counted the data alone left 1,743 bytes.
func TestAFullShardOfTheLongestKeysLeavesRoomUnderEtcdsRequestLimit(t *testing.T) {
	ctx := context.Background()
	ns := cluster.NewNamespace(t)
	s := loaded(t, ns, nil)
	key := func(i int) string {
		config := state.Key("ConfigMap", "", fmt.Sprintf("c%0196d", i))
		return state.KeyOf(config, "settings-"+strings.Repeat("k", 253-len(config)-2-len("settings-")))
	}
	if n := len(key(0)); n != 253 {
		t.Fatalf("key of %d bytes, want 253", n)
	}
	perShard := state.ShardBudget / state.Reserved(key(0))
	for i := range perShard + 1 {
		s.Configs().Set(key(i), hashOf(fmt.Sprint(i)))
	}
	flush(t, s)
	cm, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(ctx, "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const etcdLimit, room = 1536 * 1024, 256 * 1024
	if _, stamped := cm.Data[state.FlushedAtKey]; !stamped || len(cm.Data)-1 != perShard {
		t.Errorf("%d keys in the first shard (stamped: %v), want %d entries and the write's stamp", len(cm.Data), stamped, perShard)
	}
	if n := cm.Size(); n > etcdLimit-room {
		t.Errorf("a full shard takes %d bytes in protobuf: less than %d left under etcd's %d", n, room, etcdLimit)
	}
}
