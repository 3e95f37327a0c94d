package leader

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/reloader/reloader/metrics"
)

// memLeases is an in-memory Lease store with resourceVersion checks, enough to test the
// Election's rules; the e2e tests run it against the API server.
type memLeases struct {
	mu     sync.Mutex
	lease  *coordinationv1.Lease
	rv     int
	err    error  // answered to every call while set
	onCall func() // run on every call: a fake clock advancing while the request is in flight
}

var leases = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func (m *memLeases) call() error {
	if m.onCall != nil {
		m.onCall()
	}
	return m.err
}

func (m *memLeases) Get(context.Context, string, metav1.GetOptions) (*coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.call(); err != nil {
		return nil, err
	}
	if m.lease == nil {
		return nil, apierrors.NewNotFound(leases, "reloader")
	}
	return m.lease.DeepCopy(), nil
}

func (m *memLeases) Create(_ context.Context, l *coordinationv1.Lease, _ metav1.CreateOptions) (*coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.call(); err != nil {
		return nil, err
	}
	if m.lease != nil {
		return nil, apierrors.NewAlreadyExists(leases, l.Name)
	}
	return m.store(l), nil
}

func (m *memLeases) Update(_ context.Context, l *coordinationv1.Lease, _ metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.call(); err != nil {
		return nil, err
	}
	if m.lease == nil {
		return nil, apierrors.NewNotFound(leases, l.Name)
	}
	if l.ResourceVersion != m.lease.ResourceVersion {
		return nil, apierrors.NewConflict(leases, l.Name, nil)
	}
	return m.store(l), nil
}

func (m *memLeases) store(l *coordinationv1.Lease) *coordinationv1.Lease {
	m.rv++
	m.lease = l.DeepCopy()
	m.lease.ResourceVersion = strconv.Itoa(m.rv)
	return m.lease.DeepCopy()
}

// set replaces the stored Lease as someone else (an admin, another replica) would.
func (m *memLeases) set(f func(*coordinationv1.Lease) *coordinationv1.Lease) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := f(m.lease.DeepCopy()); l != nil {
		m.store(l)
	} else {
		m.lease = nil
	}
}

func (m *memLeases) holder() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease == nil {
		return "<none>"
	}
	return ptrValue(m.lease.Spec.HolderIdentity)
}

// fakeClock is a clock the test moves; its readings keep time.Now's monotonic part.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// candidate is a replica with D = 4s, R = 3s and a 500ms retry period (the e2e flags) on the
// fake clock.
func candidate(store *memLeases, clock *fakeClock, id string) *Election {
	e := &Election{Leases: store, Name: "reloader", ID: id, Lease: 4 * time.Second, Renew: 3 * time.Second,
		Retry: 500 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.New("test")}
	if clock != nil {
		e.now = clock.now
	}
	return e
}

func lease(holder string, seconds int32) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "reloader"}}
	if holder != "" {
		l.Spec.HolderIdentity = &holder
	}
	if seconds > 0 {
		l.Spec.LeaseDurationSeconds = &seconds
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	return l
}

// step is one attempt of a standby at a moment of the fake clock.
type step struct {
	name  string
	at    time.Duration // after the start
	takes bool
}

func runSteps(t *testing.T, clock *fakeClock, e *Election, store *memLeases, steps []step) {
	t.Helper()
	start := clock.now()
	for _, s := range steps {
		clock.advance(start.Add(s.at).Sub(clock.now()))
		if got := e.tryAcquire(context.Background()); got != s.takes {
			t.Fatalf("%s (at %s): tryAcquire() = %v, want %v (holder %q)", s.name, s.at, got, s.takes, store.holder())
		}
	}
}

func TestStandbyJudgesExpiryByTheHoldersDeclaredDuration(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	store := &memLeases{}
	store.set(func(*coordinationv1.Lease) *coordinationv1.Lease { return lease("a", 10) })
	b := candidate(store, clock, "b") // its own flag says 4s
	runSteps(t, clock, b, store, []step{
		{"first sight of a's record", 0, false},
		{"past b's own 4s, within a's declared 10s", 5 * time.Second, false},
		{"just before a's 10s", 10*time.Second - time.Millisecond, false},
		{"10s after b first saw the record", 10 * time.Second, true},
	})

	// A record declaring no duration is judged by the observer's own flag.
	clock, store = &fakeClock{t: time.Now()}, &memLeases{}
	store.set(func(*coordinationv1.Lease) *coordinationv1.Lease { return lease("a", 0) })
	b = candidate(store, clock, "b")
	runSteps(t, clock, b, store, []step{
		{"first sight", 0, false},
		{"just before b's own 4s", 4*time.Second - time.Millisecond, false},
		{"at b's own 4s", 4 * time.Second, true},
	})
}

func TestExpiryCountsFromWhenTheObserverFirstSawEachRecord(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	store := &memLeases{}
	old := lease("a", 4)
	old.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(-time.Hour)} // a's clock is an hour behind
	store.set(func(*coordinationv1.Lease) *coordinationv1.Lease { return old })
	b := candidate(store, clock, "b")
	runSteps(t, clock, b, store, []step{
		{"a renewTime an hour old is not expired: clocks need not agree", 0, false},
		{"3s later, unchanged", 3 * time.Second, false},
	})
	store.set(func(l *coordinationv1.Lease) *coordinationv1.Lease {
		l.Spec.RenewTime = &metav1.MicroTime{Time: l.Spec.RenewTime.Add(time.Second)}
		return l
	})
	runSteps(t, clock, b, store, []step{
		{"a renewal resets the count", 0, false},
		{"3.9s after the renewal was first seen", 3900 * time.Millisecond, false},
		{"4s after it", 4 * time.Second, true},
	})
}

// The observer counts from the moment its read returned: a renew stored while the read was in
// flight must not let it count from before the renew started.
func TestExpiryCountsFromTheEndOfTheRead(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	store := &memLeases{}
	store.set(func(*coordinationv1.Lease) *coordinationv1.Lease { return lease("a", 4) })
	b := candidate(store, clock, "b")
	store.onCall = func() { clock.advance(300 * time.Millisecond) }
	runSteps(t, clock, b, store, []step{{"first sight, through a slow read", 0, false}})
	read := clock.now()
	store.onCall = nil
	runSteps(t, clock, b, store, []step{{"4s after the read started, 3.7s after it returned", 3700 * time.Millisecond, false}})
	clock.advance(read.Add(4 * time.Second).Sub(clock.now()))
	if !b.tryAcquire(context.Background()) {
		t.Fatal("not taken 4s after the read returned")
	}
}

// holdUntil renews e's Lease every retry period up to at, and reports when e first may act.
func holdUntil(t *testing.T, clock *fakeClock, e *Election, at time.Time) (mayActFrom time.Time) {
	t.Helper()
	for clock.now().Before(at) {
		clock.advance(min(e.Retry, at.Sub(clock.now())))
		if e.MayAct() && mayActFrom.IsZero() {
			mayActFrom = clock.now()
		}
		if got := e.renew(context.Background()); got != renewed {
			t.Fatalf("renew = %v, want renewed", got)
		}
	}
	return mayActFrom
}

func TestMissingLeaseIsClaimedAtOnceButActedOnOnlyAfterALeaseDuration(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	store := &memLeases{}
	b := candidate(store, clock, "b")
	start := clock.now()
	if !b.tryAcquire(context.Background()) {
		t.Fatal("a missing Lease was not claimed")
	}
	if h := store.holder(); h != "b" {
		t.Fatalf("holder %q, want b", h)
	}
	if b.MayAct() || b.Leading() {
		t.Fatal("acts at once on a Lease it created")
	}
	if from := holdUntil(t, clock, b, start.Add(5*time.Second)); !from.Equal(start.Add(4 * time.Second)) {
		t.Fatalf("may act %s after it found the Lease missing, want 4s", from.Sub(start))
	}
}

// The wait counts from the read that found the Lease missing just before creating it, not from
// the first time it was seen missing: in between, another replica may have created it, led, and
// had it deleted.
func TestMissingLeaseWaitCountsFromTheReadBeforeTheCreate(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	store := &memLeases{}
	c := candidate(store, clock, "c")
	calls := 0
	store.onCall = func() { // a creates the Lease between c's read and c's create
		if calls++; calls == 2 {
			store.store(lease("a", 4))
		}
	}
	begin := clock.now()
	if c.tryAcquire(context.Background()) {
		t.Fatal("c won a Lease a created first")
	}
	store.onCall = nil
	clock.advance(2 * time.Second)
	store.set(func(*coordinationv1.Lease) *coordinationv1.Lease { return nil }) // a's Lease is deleted while a leads
	clock.advance(300 * time.Millisecond)
	read := clock.now()
	if !c.tryAcquire(context.Background()) {
		t.Fatal("c did not claim the missing Lease")
	}
	from := holdUntil(t, clock, c, read.Add(5*time.Second))
	if !from.Equal(read.Add(4 * time.Second)) {
		t.Fatalf("c may act %s after the read that found the Lease deleted (%s after it first saw it missing), want 4s",
			from.Sub(read), from.Sub(begin))
	}

	// Deleted after declaring 10s: its holder may act for nearly that long after its last renew,
	// so the standby waits the longer of the two.
	clock, store = &fakeClock{t: time.Now()}, &memLeases{}
	store.set(func(*coordinationv1.Lease) *coordinationv1.Lease { return lease("a", 10) })
	d := candidate(store, clock, "d")
	runSteps(t, clock, d, store, []step{{"sees a's 10s Lease", 0, false}})
	store.set(func(*coordinationv1.Lease) *coordinationv1.Lease { return nil })
	clock.advance(time.Second)
	read = clock.now()
	if !d.tryAcquire(context.Background()) {
		t.Fatal("d did not claim the missing Lease")
	}
	if from := holdUntil(t, clock, d, read.Add(11*time.Second)); !from.Equal(read.Add(10 * time.Second)) {
		t.Fatalf("d may act %s after the read, want 10s", from.Sub(read))
	}
}

func TestReleasedLeaseIsTakenAfterItsDeclaredSecond(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	store := &memLeases{}
	store.set(func(*coordinationv1.Lease) *coordinationv1.Lease { return lease("a", 4) })
	a := candidate(store, clock, "a")
	if !a.tryAcquire(context.Background()) {
		t.Fatal("a replica may take a Lease naming itself at once")
	}
	a.release()
	if h := store.holder(); h != "" {
		t.Fatalf("after release the holder is %q", h)
	}
	if a.Leading() {
		t.Fatal("still leading after release")
	}
	b := candidate(store, clock, "b")
	runSteps(t, clock, b, store, []step{
		{"first sight of the released Lease", 0, false},
		{"just before 1s", time.Second - time.Millisecond, false},
		{"1s after", time.Second, true},
	})
	// An admin clearing the holder of a Lease that declares 4s leaves a leader that acts until
	// its next renew: that is judged by its declared 4s, not taken after 1s.
	store.set(func(l *coordinationv1.Lease) *coordinationv1.Lease {
		l.Spec.HolderIdentity = nil
		l.Spec.LeaseDurationSeconds = ptr(int32(4))
		return l
	})
	c := candidate(store, clock, "c")
	runSteps(t, clock, c, store, []step{
		{"first sight of the cleared Lease", 0, false},
		{"1s after", time.Second, false},
		{"4s after", 4 * time.Second, true},
	})
}

// The leader's deadline counts from the START of its last successful renew, and falls at least
// MinMargin before any standby may take over, however slow the requests.
func TestDeadlineFallsBeforeAnyTakeover(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	store := &memLeases{}
	store.set(func(*coordinationv1.Lease) *coordinationv1.Lease { return lease("a", 4) })
	a, b := candidate(store, clock, "a"), candidate(store, clock, "b")
	store.onCall = func() { clock.advance(200 * time.Millisecond) } // every request takes 200ms
	if !a.tryAcquire(context.Background()) {
		t.Fatal("a did not acquire")
	}
	clock.advance(500 * time.Millisecond)
	start := clock.now()
	if got := a.renew(context.Background()); got != renewed {
		t.Fatalf("renew = %v, want renewed", got)
	}
	if until := a.term.Load().until; !until.Equal(start.Add(a.Renew)) {
		t.Fatalf("deadline %s after the renew's start, want %s", until.Sub(start), a.Renew)
	}
	if b.tryAcquire(context.Background()) {
		t.Fatal("b took a fresh Lease")
	}
	// From now on a cannot renew (its API calls fail); b keeps reading.
	store.onCall = nil
	var takeover time.Time
	for range 200 {
		clock.advance(100 * time.Millisecond)
		store.err = errors.New("connection refused")
		if a.MayAct() {
			a.renew(context.Background())
		}
		store.err = nil
		if b.tryAcquire(context.Background()) {
			takeover = clock.now()
			break
		}
	}
	if takeover.IsZero() {
		t.Fatal("b never took over")
	}
	if a.MayAct() {
		t.Fatal("a may still act after b took over")
	}
	if margin := takeover.Sub(start.Add(a.Renew)); margin < MinMargin {
		t.Fatalf("b took over %s after a's deadline, want at least %s", margin, MinMargin)
	}
}

func TestLeaderLosesOnAnotherHolderOrAMissingLease(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*coordinationv1.Lease) *coordinationv1.Lease
	}{
		{"another holder", func(l *coordinationv1.Lease) *coordinationv1.Lease { l.Spec.HolderIdentity = ptr("b"); return l }},
		{"no holder", func(l *coordinationv1.Lease) *coordinationv1.Lease { l.Spec.HolderIdentity = nil; return l }},
		{"missing", func(*coordinationv1.Lease) *coordinationv1.Lease { return nil }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Now()}
			store := &memLeases{}
			store.set(func(*coordinationv1.Lease) *coordinationv1.Lease { return lease("a", 4) })
			a := candidate(store, clock, "a")
			if !a.tryAcquire(context.Background()) {
				t.Fatal("a did not acquire")
			}
			store.set(tt.change)
			before := store.holder()
			if got := a.renew(context.Background()); got != lost {
				t.Fatalf("renew = %v, want lost", got)
			}
			if h := store.holder(); h != before {
				t.Fatalf("the leader wrote the Lease on losing it: holder %q, was %q", h, before)
			}
		})
	}
}

// runLeader runs a real-time Election whose Lease already names it, so it leads at once, with
// R = 2s: a stop well within 1s is a stop at once, not at the deadline.
// runLeader starts e leading the Lease in store; started is a time before its acquisition.
func runLeader(t *testing.T, store *memLeases) (e *Election, exited chan int, returned chan error, started time.Time) {
	t.Helper()
	store.set(func(*coordinationv1.Lease) *coordinationv1.Lease { return lease("a", 3) })
	e = &Election{Leases: store, Name: "reloader", ID: "a", Lease: 3 * time.Second, Renew: 2 * time.Second,
		Retry: 50 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.New("test")}
	exited, returned = make(chan int, 1), make(chan error, 1)
	e.exit = func(code int) { exited <- code }
	leading := make(chan struct{}, 1)
	work := func(ctx context.Context) error { leading <- struct{}{}; <-ctx.Done(); return nil }
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	started = time.Now()
	go func() { returned <- e.Run(ctx, work) }()
	select {
	case <-leading:
	case <-time.After(5 * time.Second):
		t.Fatal("never led")
	}
	return e, exited, returned, started
}

func waitExit(t *testing.T, e *Election, exited chan int, returned chan error, within time.Duration) time.Duration {
	t.Helper()
	begin := time.Now()
	select {
	case code := <-exited:
		if code != 1 {
			t.Fatalf("exit code %d, want 1", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not exit within 10s")
	}
	took := time.Since(begin)
	if err := <-returned; !errors.Is(err, errLost) {
		t.Fatalf("Run returned %v", err)
	}
	if e.MayAct() || e.Leading() {
		t.Fatal("may still act after exiting")
	}
	if took > within {
		t.Fatalf("exited %s after the cause, want within %s", took, within)
	}
	return took
}

func TestRunExitsAtOnceWhenTheLeaseIsTakenOrDeleted(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*coordinationv1.Lease) *coordinationv1.Lease
	}{
		{"another holder", func(l *coordinationv1.Lease) *coordinationv1.Lease { l.Spec.HolderIdentity = ptr("b"); return l }},
		{"deleted", func(*coordinationv1.Lease) *coordinationv1.Lease { return nil }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := &memLeases{}
			e, exited, returned, _ := runLeader(t, store)
			if !e.MayAct() {
				t.Fatal("positive control: the leader may act before the change")
			}
			store.set(tt.change)
			after := store.holder()
			waitExit(t, e, exited, returned, time.Second)
			if h := store.holder(); h != after {
				t.Fatalf("the leader wrote the Lease on losing it: holder %q, was %q", h, after)
			}
		})
	}
}

func TestRunExitsAtTheRenewDeadlineWhenRenewalsFail(t *testing.T) {
	store := &memLeases{}
	e, exited, returned, started := runLeader(t, store)
	store.mu.Lock()
	store.err = apierrors.NewServiceUnavailable("etcd is down")
	store.mu.Unlock()
	waitExit(t, e, exited, returned, 3*time.Second)
	// The last success came after the start (the acquisition, or a renewal at most a retry
	// period after it); the deadline is R after it. Timed from leading's begin instead, which
	// follows the acquisition, it failed by 1.7 ms under load.
	if took := time.Since(started); took < e.Renew {
		t.Fatalf("exited %s after the start, before the %s renew deadline", took, e.Renew)
	}
}

type recorder struct{ sent []string }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.sent = append(r.sent, req.Method+" "+req.URL.Path)
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

func TestGuardRefusesWritesUnlessTheReplicaMayAct(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	store := &memLeases{}
	store.set(func(*coordinationv1.Lease) *coordinationv1.Lease { return lease("a", 4) })
	a := candidate(store, clock, "a")
	rec := &recorder{}
	rt := a.Guard(rec)
	send := func(method, path string) error {
		req, _ := http.NewRequest(method, "https://api"+path, http.NoBody)
		_, err := rt.RoundTrip(req)
		return err
	}
	const patch, leasePath = "/apis/apps/v1/namespaces/ns/deployments/web", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/reloader"
	for _, c := range []struct {
		when, method, path string
		sent               bool
	}{
		{"standby", http.MethodGet, patch, true},
		{"standby", http.MethodPatch, patch, false},
		{"standby", http.MethodPost, "/api/v1/namespaces/ns/events", false},
		{"standby", http.MethodPut, leasePath, true},
		{"standby", http.MethodPost, "/k8s/clusters/c-1/apis/coordination.k8s.io/v1/namespaces/ns/leases", true}, // behind a proxy
		{"standby", http.MethodPost, "/k8s/clusters/c-1/api/v1/namespaces/ns/configmaps", false},
		{"leading", http.MethodPatch, patch, true},
		{"past the deadline", http.MethodPatch, patch, false},
		{"past the deadline", http.MethodGet, patch, true},
	} {
		switch c.when {
		case "leading":
			if !a.tryAcquire(context.Background()) {
				t.Fatal("a did not acquire")
			}
		case "past the deadline":
			clock.advance(a.Renew) // frozen: nothing ran, the clock moved on
		}
		rec.sent = nil
		err := send(c.method, c.path)
		if sent := len(rec.sent) == 1; sent != c.sent || (err == nil) != c.sent {
			t.Errorf("%s: %s %s sent=%v err=%v, want sent=%v", c.when, c.method, c.path, sent, err, c.sent)
		}
	}
}

func TestRunActsOnALeaseItCreatedOnlyAfterTheWait(t *testing.T) {
	store := &memLeases{}
	e := &Election{Leases: store, Name: "reloader", ID: "a", Lease: time.Second, Renew: 600 * time.Millisecond,
		Retry: 50 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.New("test")}
	e.exit = func(int) { t.Error("exited") }
	started := make(chan time.Time, 1)
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan error, 1)
	begin := time.Now()
	go func() {
		returned <- e.Run(ctx, func(ctx context.Context) error { started <- time.Now(); <-ctx.Done(); return nil })
	}()
	deadline := time.Now().Add(5 * time.Second)
	for store.holder() != "a" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if h := store.holder(); h != "a" {
		t.Fatalf("the missing Lease was not claimed: holder %q", h)
	}
	select {
	case at := <-started:
		if waited := at.Sub(begin); waited < e.Lease {
			t.Fatalf("acted %s after finding the Lease missing, before the %s Lease duration", waited, e.Lease)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("never acted")
	}
	cancel()
	if err := <-returned; err != nil {
		t.Fatal(err)
	}
	if h := store.holder(); h != "" {
		t.Fatalf("not released on stop: holder %q", h)
	}
}
