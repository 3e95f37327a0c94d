package coalesce

import (
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"
)

// fakeClock runs timers synchronously when Advance passes their deadline.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool { was := !t.stopped; t.stopped = true; return was }

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	rest := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			due = append(due, t)
		default:
			rest = append(rest, t)
		}
	}
	c.timers = rest
	c.mu.Unlock()
	for _, t := range due {
		t.stopped = true
		t.f()
	}
}

// step is one action in a scripted timeline: add keys, then advance the clock.
type step struct {
	add     []string
	advance time.Duration
}

func TestCoalescerTimeline(t *testing.T) {
	const period, maxWait = 10 * time.Second, 30 * time.Second
	tests := []struct {
		name  string
		steps []step
		want  []string // fired keys, in order
	}{
		{"single change fires after one period",
			[]step{{add: []string{"a"}, advance: 9 * time.Second}, {advance: time.Second}},
			[]string{"a"}},
		{"burst within the period fires once",
			[]step{{add: []string{"a"}, advance: 3 * time.Second}, {add: []string{"a"}, advance: 3 * time.Second}, {add: []string{"a"}, advance: 10 * time.Second}},
			[]string{"a"}},
		{"each change restarts the window",
			[]step{{add: []string{"a"}, advance: 9 * time.Second}, {add: []string{"a"}, advance: 9 * time.Second}, {advance: time.Second}},
			[]string{"a"}},
		{"max wait caps a key that never settles",
			[]step{{add: []string{"a"}, advance: 8 * time.Second}, {add: []string{"a"}, advance: 8 * time.Second}, {add: []string{"a"}, advance: 8 * time.Second}, {add: []string{"a"}, advance: 6 * time.Second}},
			[]string{"a"}},
		{"keys have independent windows",
			[]step{{add: []string{"a"}, advance: 5 * time.Second}, {add: []string{"b"}, advance: 5 * time.Second}, {advance: 5 * time.Second}},
			[]string{"a", "b"}},
		{"a change after a window closed opens a new one",
			[]step{{add: []string{"a"}, advance: 10 * time.Second}, {add: []string{"a"}, advance: 10 * time.Second}},
			[]string{"a", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{now: time.Unix(0, 0)}
			var fired []string
			c := New(period, maxWait, clock, func(k string) { fired = append(fired, k) })
			for _, s := range tt.steps {
				for _, k := range s.add {
					c.Add(k)
				}
				clock.Advance(s.advance)
			}
			if !reflect.DeepEqual(fired, tt.want) {
				t.Fatalf("fired %v, want %v", fired, tt.want)
			}
			if c.Pending() != 0 {
				t.Fatalf("%d windows still open", c.Pending())
			}
		})
	}
}

func TestMaxWaitFiresAtCapNotLater(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	var firedAt []time.Duration
	c := New(10*time.Second, 25*time.Second, clock, func(string) { firedAt = append(firedAt, clock.now.Sub(time.Unix(0, 0))) })
	for range 30 { // a change every second for 30 s
		c.Add("a")
		clock.Advance(time.Second)
	}
	if len(firedAt) == 0 || firedAt[0] != 25*time.Second {
		t.Fatalf("fired at %v, want first firing at exactly 25s", firedAt)
	}
}

func TestZeroPeriodFiresImmediately(t *testing.T) {
	var fired []string
	c := New(0, 0, &fakeClock{}, func(k string) { fired = append(fired, k) })
	if joined := c.Add("a"); joined {
		t.Fatal("Add with zero period reported a joined window")
	}
	c.Add("a")
	if !reflect.DeepEqual(fired, []string{"a", "a"}) {
		t.Fatalf("fired %v, want two immediate firings", fired)
	}
}

func TestJoinedReportsCoalescedChanges(t *testing.T) {
	c := New(time.Second, 0, &fakeClock{}, func(string) {})
	got := []bool{c.Add("a"), c.Add("a"), c.Add("b")}
	if want := []bool{false, true, false}; !reflect.DeepEqual(got, want) {
		t.Fatalf("joined = %v, want %v", got, want)
	}
}

func TestFlushFiresEveryOpenWindowOnce(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	var fired []string
	c := New(time.Minute, 0, clock, func(k string) { fired = append(fired, k) })
	c.Add("a")
	c.Add("b")
	c.Add("a")
	c.Flush()
	clock.Advance(time.Hour) // the stopped timers must not fire again
	sort.Strings(fired)
	if !reflect.DeepEqual(fired, []string{"a", "b"}) {
		t.Fatalf("fired %v, want [a b]", fired)
	}
}

// A change whose sync was still in flight when the shutdown flushed the windows fires at once:
// no window opens that nothing would close (TestSIGTERMFlushesPendingReloadsAndExitsZero lost
// such a change now and then).
func TestAnAddAfterFlushFiresAtOnce(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	var fired []string
	c := New(time.Minute, 0, clock, func(k string) { fired = append(fired, k) })
	c.Add("a") // the control: before Flush, a window opens and nothing fires
	if len(fired) != 0 {
		t.Fatalf("fired %v before the window closed", fired)
	}
	c.Flush()
	if joined := c.Add("b"); joined || !reflect.DeepEqual(fired, []string{"a", "b"}) || c.Pending() != 0 {
		t.Fatalf("after Flush: fired %v, joined %t, %d windows open; want [a b], false, 0", fired, joined, c.Pending())
	}
}
