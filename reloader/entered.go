package reloader

import (
	"sync"
	"time"

	"github.com/reloader/reloader/reloader/workload"
)

// enteredConfigs marks the configs of a namespace that entered --namespace-selector, until
// their next sync in the selection: while the namespace was out no reloader judged them, as
// before a start, so that sync takes what the state notes of their dependents as a start does
// (strips.Unsure), and a config found deleted then may have had contents the state never saw
// (configs.Tombstones.Entered). It also keeps when each namespace was seen leaving the selection.
type enteredConfigs struct {
	mu   sync.Mutex
	m    map[workload.Key]time.Time // config → when its namespace left (zero: not seen)
	left map[string]time.Time
}

// leave notes that namespace ns left the selection at t.
func (e *enteredConfigs) leave(ns string, t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.left == nil {
		e.left = map[string]time.Time{}
	}
	e.left[ns] = t
}

// enter notes that namespace ns entered the selection, and returns when it was seen leaving
// (zero: not by this process).
func (e *enteredConfigs) enter(ns string) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.left[ns]
	delete(e.left, ns)
	return t
}

// mark notes that config k's namespace entered the selection, having left it at left.
func (e *enteredConfigs) mark(k workload.Key, left time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[workload.Key]time.Time{}
	}
	e.m[k] = left
}

// take reports whether k's namespace entered the selection since k's last take, and when it
// had left it, and clears it.
func (e *enteredConfigs) take(k workload.Key) (left time.Time, entered bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	left, entered = e.m[k]
	delete(e.m, k)
	return left, entered
}
