package reloader

import (
	"sync"

	"k8s.io/client-go/util/workqueue"

	"github.com/reloader/reloader/reloader/workload"
)

// backlogWindow is how many keys of the start-up backlog the work queue holds at most: enough
// that the workers never wait for the next, few enough that the queue's maps stay small.
const backlogWindow = 128

// backlog holds the keys the start-up queues (every workload, and on a first start most
// configs) and hands them to the work queue a window at a time. The work queue keeps each key
// in two maps (its set of keys and its metrics' add times), and Go maps never shrink: queued
// all at once, 20,000 keys would hold 5.5 MB after the queue has drained. Keys of events seen
// while running go to the queue directly, ahead of the backlog.
type backlog struct {
	queue workqueue.TypedInterface[workload.Key]

	mu   sync.Mutex
	keys []workload.Key
}

func newBacklog(q workqueue.TypedInterface[workload.Key]) *backlog { return &backlog{queue: q} }

// add queues k behind the backlog.
func (b *backlog) add(k workload.Key) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.keys = append(b.keys, k)
	b.refillLocked()
}

// refill tops the work queue up to the window. The workers call it after each key, so the
// backlog drains as fast as they work.
func (b *backlog) refill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked()
}

func (b *backlog) refillLocked() {
	if len(b.keys) == 0 {
		return
	}
	n := max(0, min(len(b.keys), backlogWindow-b.queue.Len()))
	for _, k := range b.keys[:n] {
		b.queue.Add(k)
	}
	b.keys = b.keys[n:]
	if len(b.keys) == 0 {
		b.keys = nil // let the array go
	}
}

// len returns how many keys wait behind the work queue.
func (b *backlog) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.keys)
}
