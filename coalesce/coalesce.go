// Package coalesce owns the trailing debounce that turns a burst of changes into one action per
// key. It knows timers and nothing about Kubernetes: a key is any comparable value.
//
// Each Add opens or extends a window for its key. The window closes period after the last Add,
// but never later than maxWait after the first, so a key that changes forever still fires.
package coalesce

import (
	"sync"
	"time"
)

// Clock is the time source; tests inject a fake one instead of sleeping.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is the part of *time.Timer the coalescer uses.
type Timer interface {
	Stop() bool
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Coalescer debounces keys and calls fire once per closed window.
type Coalescer[K comparable] struct {
	period  time.Duration
	maxWait time.Duration
	clock   Clock
	fire    func(key K)

	mu      sync.Mutex
	windows map[K]*window
	// flushed: Flush ran, so no window will be closed later; an Add after it fires at once (a
	// change whose sync was in flight at shutdown was otherwise left in a window).
	flushed bool
}

type window struct {
	first time.Time
	timer Timer
}

// New returns a Coalescer. A zero period fires on every Add. A maxWait below period is raised to
// period.
func New[K comparable](period, maxWait time.Duration, clock Clock, fire func(key K)) *Coalescer[K] {
	return &Coalescer[K]{
		period:  period,
		maxWait: max(maxWait, period),
		clock:   clock,
		fire:    fire,
		windows: map[K]*window{},
	}
}

// Add records a change for key. It reports whether the change joined an open window, that is,
// whether an action was saved.
func (c *Coalescer[K]) Add(key K) (joined bool) {
	if c.period == 0 {
		c.fire(key)
		return false
	}
	c.mu.Lock()
	if c.flushed {
		c.mu.Unlock()
		c.fire(key)
		return false
	}
	defer c.mu.Unlock()
	now := c.clock.Now()
	w, joined := c.windows[key]
	if joined {
		w.timer.Stop()
	} else {
		w = &window{first: now}
		c.windows[key] = w
	}
	wait := min(c.period, w.first.Add(c.maxWait).Sub(now))
	w.timer = c.clock.AfterFunc(wait, func() { c.close(key, w) })
	return joined
}

// close fires key if w is still its open window; a stopped timer whose callback already started
// finds a newer window or none and does nothing.
func (c *Coalescer[K]) close(key K, w *window) {
	c.mu.Lock()
	if c.windows[key] != w {
		c.mu.Unlock()
		return
	}
	delete(c.windows, key)
	c.mu.Unlock()
	c.fire(key)
}

// Flush closes every open window now, firing each key once, and every later Add fires at once.
// It is for shutdown.
func (c *Coalescer[K]) Flush() {
	c.mu.Lock()
	c.flushed = true
	keys := make([]K, 0, len(c.windows))
	for k, w := range c.windows {
		w.timer.Stop()
		keys = append(keys, k)
	}
	c.windows = map[K]*window{}
	c.mu.Unlock()
	for _, k := range keys {
		c.fire(k)
	}
}

// Pending returns the number of open windows.
func (c *Coalescer[K]) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.windows)
}

// Open reports whether key has an open window.
func (c *Coalescer[K]) Open(key K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.windows[key]
	return ok
}
