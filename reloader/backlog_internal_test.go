package reloader

import (
	"fmt"
	"testing"

	"k8s.io/client-go/util/workqueue"

	"github.com/reloader/reloader/reloader/workload"
)

func TestTheBacklogHandsTheQueueAWindowAtATimeInOrder(t *testing.T) {
	q := workqueue.NewTyped[workload.Key]()
	defer q.ShutDown()
	b := newBacklog(q)
	const n = 3*backlogWindow + 7
	for i := range n {
		b.add(workload.Key{Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprint(i)})
	}
	if q.Len() != backlogWindow || b.len() != n-backlogWindow {
		t.Fatalf("after %d adds: queue %d, backlog %d; want %d and %d", n, q.Len(), b.len(), backlogWindow, n-backlogWindow)
	}
	live := workload.Key{Kind: "Secret", Namespace: "ns", Name: "live"}
	q.Add(live) // an event seen while running goes to the queue directly, ahead of the backlog
	var got []string
	for range n + 1 {
		k, _ := q.Get()
		q.Done(k)
		b.refill()
		if q.Len() > backlogWindow {
			t.Fatalf("queue holds %d keys, more than the window %d", q.Len(), backlogWindow)
		}
		got = append(got, k.Name)
	}
	if got[backlogWindow] != "live" {
		t.Errorf("key %d out of the queue is %q, want the live one right after the first window", backlogWindow, got[backlogWindow])
	}
	got = append(got[:backlogWindow], got[backlogWindow+1:]...)
	for i, name := range got {
		if name != fmt.Sprint(i) {
			t.Fatalf("key %d out of the queue is %q, want %d: the backlog keeps its order", i, name, i)
		}
	}
	if q.Len() != 0 || b.len() != 0 || b.keys != nil {
		t.Errorf("after draining: queue %d, backlog %d (array kept: %v)", q.Len(), b.len(), b.keys != nil)
	}
}
