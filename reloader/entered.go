package reloader

import "sync"

// enteredConfigs marks the configs of a namespace that entered --namespace-selector, until
// their next sync in the selection: while the namespace was out no reloader judged them, as
// before a start, so that sync takes what the state notes of their dependents as a start does
// (strips.unsure).
type enteredConfigs struct {
	mu sync.Mutex
	m  map[key]bool
}

// mark notes that config k's namespace entered the selection.
func (e *enteredConfigs) mark(k key) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[key]bool{}
	}
	e.m[k] = true
}

// take reports whether k's namespace entered the selection since k's last take, and clears it.
func (e *enteredConfigs) take(k key) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	entered := e.m[k]
	delete(e.m, k)
	return entered
}
