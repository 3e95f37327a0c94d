// Package clocktest is a manual clock for tests of code that takes a coalesce.Clock: time moves
// only when the test advances it, so a week-long maintenance window is tested in milliseconds.
package clocktest

import (
	"sync"
	"time"

	"github.com/reloader/reloader/coalesce"
)

// Clock is a coalesce.Clock whose time moves only by Advance. Timers due at or before the
// current time run on their own goroutine, as time.AfterFunc's do.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
}

type timer struct {
	at      time.Time
	f       func()
	stopped bool
}

// timerStop is the coalesce.Timer of one timer.
type timerStop struct {
	c *Clock
	t *timer
}

func (s timerStop) Stop() bool {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	was := !s.t.stopped
	s.t.stopped = true
	return was
}

// New returns a Clock set to now.
func New(now time.Time) *Clock { return &Clock{now: now} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc runs f once the clock reaches now+d: at once if d is not positive.
func (c *Clock) AfterFunc(d time.Duration, f func()) coalesce.Timer {
	c.mu.Lock()
	t := &timer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	c.fireDue()
	return timerStop{c, t}
}

// Pending counts the timers that have neither run nor been stopped: a test that advances the
// clock past a timer the code under test is about to set waits for it first, or the timer is
// set after the advance and never becomes due.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}

// Advance moves the clock forward by d and runs the timers that became due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	c.fireDue()
}

func (c *Clock) fireDue() {
	c.mu.Lock()
	defer c.mu.Unlock()
	rest := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			t.stopped = true
			go t.f()
		default:
			rest = append(rest, t)
		}
	}
	c.timers = rest
}
