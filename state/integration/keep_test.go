package integration_test

import (
	"bytes"
	"context"
	"maps"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/reloader/reloader/state"
)

// A shard deleted, emptied or edited under a running store, with nothing else changing, is
// written back from memory by Keep and Run: every entry, the first shard's other keys, and no
// key of our kinds that memory does not hold; someone else's new key is left alone.
func TestAShardLostUnderARunningStoreIsWrittenBack(t *testing.T) {
	for _, tt := range []struct {
		name   string
		shard  string
		damage func(data map[string]string) // nil: the shard is deleted
		extra  map[string]string            // what else the shard then holds
	}{
		{name: "first shard deleted", shard: "reloader-state"},
		{name: "second shard deleted", shard: "reloader-state-1"},
		{name: "first shard emptied", shard: "reloader-state", damage: func(data map[string]string) { clear(data) }},
		{name: "first shard edited", shard: "reloader-state", damage: func(data map[string]string) {
			data[entryKey(0)] = hashOf("forged")
			data["v1.ConfigMap_forged"] = hashOf("forged")
			data["job-note"] = "forged"
			data["someone-else"] = "kept"
		}, extra: map[string]string{"someone-else": "kept"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := cluster.NewNamespace(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var log bytes.Buffer
			s := newStore(cluster.Client(), ns, &log)
			s.Fence("test-writer")
			state.SetBudget(s, perShard*state.Reserved(entryKey(0)))
			if _, err := s.Load(ctx); err != nil {
				t.Fatal(err)
			}
			for i := range 2 * perShard {
				s.Configs().Set(entryKey(i), hashOf(entryKey(i)))
			}
			flush(t, s)
			note := "job"
			if err := s.WriteOther(ctx, "job-note", &note); err != nil {
				t.Fatal(err)
			}
			want := storedShards(t, ns, 1<<20)
			if len(want) != 2 {
				t.Fatalf("the state is in %d shards, want 2 for this test to mean anything", len(want))
			}
			maps.Copy(want[tt.shard], tt.extra)
			go s.Run(ctx, 10*time.Millisecond)
			go s.Keep(ctx, 100*time.Millisecond)

			cms := cluster.Client().CoreV1().ConfigMaps(ns)
			damage(t, cms, tt.shard, tt.damage)
			err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				got := storedShards(t, ns, 1<<20)
				return maps.EqualFunc(got, want, maps.Equal), nil
			})
			if err != nil {
				t.Fatalf("the state holds %v\nwant %v\nlog:\n%s", storedShards(t, ns, 1<<20), want, log.String())
			}
			if !strings.Contains(log.String(), "writing back what memory holds") {
				t.Errorf("no log line about the write-back:\n%s", log.String())
			}
		})
	}
}

// damage deletes the shard (change nil) or updates its data with change.
func damage(t *testing.T, cms typedcorev1.ConfigMapInterface, shard string, change func(map[string]string)) {
	t.Helper()
	ctx := context.Background()
	if change == nil {
		if err := cms.Delete(ctx, shard, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	cm, err := cms.Get(ctx, shard, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	change(cm.Data)
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// countingGets counts the Gets of a state client: the check's reads.
type countingGets struct {
	state.ConfigMapClient
	gets atomic.Int64
}

func (c *countingGets) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error) {
	c.gets.Add(1)
	return c.ConfigMapClient.Get(ctx, name, opts)
}

// While writes of ours to a shard keep answering, the check reads nothing (a deleted shard
// fails such a write, which creates it again): the check costs no request per change. Once the
// writes stop, it reads the shard again within a period or two, and writes back what it lost
// (the positive control).
func TestAShardWrittenWithinThePeriodIsNotReadByTheCheck(t *testing.T) {
	ns := cluster.NewNamespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &countingGets{ConfigMapClient: cluster.Client().CoreV1().ConfigMaps(ns)}
	var log bytes.Buffer
	s := state.New(client, ns, "reloader-state", textLog(&log))
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	s.Configs().Set(entryKey(0), hashOf("0"))
	flush(t, s)
	go s.Run(ctx, 10*time.Millisecond)
	const period = 300 * time.Millisecond
	go s.Keep(ctx, period)

	before := client.gets.Load()
	for i := range 20 { // 2 s of writes, 100 ms apart: six periods
		s.Configs().Set(entryKey(0), hashOf(strconv.Itoa(i)))
		time.Sleep(100 * time.Millisecond)
	}
	if n := client.gets.Load() - before; n != 0 {
		t.Errorf("the check read the state %d times while writes answered, want 0", n)
	}
	flush(t, s)
	want := storedShards(t, ns, 1<<20)
	damage(t, cluster.Client().CoreV1().ConfigMaps(ns), "reloader-state", func(data map[string]string) { clear(data) })
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return maps.EqualFunc(storedShards(t, ns, 1<<20), want, maps.Equal), nil
	})
	if err != nil {
		t.Fatalf("once the writes stopped, the emptied shard was not written back:\n%s", log.String())
	}
}
