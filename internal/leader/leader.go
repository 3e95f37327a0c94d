// Package leader owns leader election over a coordination.k8s.io Lease, so that of several
// reloader replicas only one acts.
package leader

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/metrics"
)

// LeaseClient is what the Election needs of a Lease client for its namespace.
type LeaseClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(ctx context.Context, l *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
}

// MinMargin is the least time by which the Lease duration must exceed the renew deadline: see
// Election for what it absorbs. The flag check (internal/cli/leader.go) enforces it.
const MinMargin = time.Second

// Election runs the controller only while this replica holds a coordination.k8s.io Lease.
//
// It follows client-go's leader election (which the reloader does not link, as its lock package
// pulls every API group into the binary), with stricter rules, so that two replicas never act
// at once. Let D be the Lease duration its holder declares (spec.leaseDurationSeconds), R the
// holder's renew deadline and M = D - R >= MinMargin.
//
//   - The leader acts only until R after the START of its last successful renew (or of its
//     acquisition), on its own monotonic clock: the start, because the record it wrote can have
//     been stored, and read by others, any time after that. Past that deadline Guard refuses its
//     writes and Run exits the process without flushing.
//   - A standby takes the Lease over only when the record it read has stayed unchanged (the same
//     resourceVersion) for D, counted on its own clock from the moment the read that first
//     showed it RETURNED: a record can be read only after it was stored, so that moment is after
//     the leader started the renew that wrote it. The writes carry the resourceVersion, so of
//     two candidates (or a candidate and a late renew) at most one succeeds.
//   - So a takeover comes at least D after the start of the leader's last successful renew,
//     which is at least M after the leader stopped. M absorbs what the argument cannot bound:
//     a write sent just before the deadline that reaches the API server late (its SLO for
//     mutating calls is 1 s at the 99th percentile), the instant between Guard's check and the
//     request leaving, and the two clocks running at different rates (500 ppm, the most NTP
//     slews, is 7.5 ms over 15 s). Clocks need not agree on the time of day.
//   - D is the holder's declared duration, not the observer's flag, so replicas with different
//     flags (say, during a rollout that changes them) keep the rule.
//   - A missing Lease may have been deleted under a leader that still acts until its deadline;
//     that leader's last renew started before the deletion, so before the read that found the
//     Lease missing. A standby creates the Lease at once, so that others see a holder, but acts
//     only D after that read returned (D the larger of its own flag and the last duration it
//     saw declared), renewing meanwhile. The wait counts from that read, not from the first
//     time the Lease was seen missing: between two reads it may have been created, led and
//     deleted again unseen. A released Lease (no holder, declaring 1 s) is taken 1 s after it
//     was first seen released; its holder stopped acting before releasing it.
//   - A leader that reads its Lease missing, or naming another holder (or none), exits at once
//     (at its next renew, within a retry period): the record others judge by is no longer its
//     own, and a replica running other rules (a reloader from before this rule recreated a
//     deleted Lease and acted at once) must find it stopped as soon as can be. It never
//     recreates a Lease that vanished while it led.
//
// On SIGTERM the controller is stopped first (flushing pending reloads while the Lease is still
// held) and the Lease is released after.
type Election struct {
	Leases  LeaseClient
	Name    string        // the Lease's name
	ID      string        // this replica's identity, NewIdentity
	Lease   time.Duration // D, declared in the Lease: whole seconds
	Renew   time.Duration // R: a leader acts until R after the start of its last renew
	Retry   time.Duration // how often candidates try and leaders renew
	Log     *slog.Logger
	Metrics *metrics.Metrics

	// now and exit are time.Now and os.Exit; the unit tests replace them.
	now  func() time.Time
	exit func(code int)

	// term is, while this replica holds the Lease, when it may act; nil otherwise. Guard reads
	// it from the controller's goroutines.
	term atomic.Pointer[term]

	seen         observation
	lastDeclared time.Duration // the duration the last Lease seen declared
}

// term is the time a Lease holder may act: from (when a Lease it created from nothing has been
// held long enough) until the renew deadline. Both carry monotonic clock readings.
type term struct{ from, until time.Time }

// observation is the Lease's resourceVersion as this replica last read it, and when (by its own
// clock) that version was first read.
type observation struct {
	version string
	at      time.Time
}

// outcome is the result of a leader's renew.
type outcome int

const (
	failed  outcome = iota // the request failed: try again, until the deadline
	renewed                // the Lease is still ours, for another renew deadline
	lost                   // the Lease is missing or names another holder: stop at once
)

// errLost is what Run returns after exit, which returns only in tests.
var errLost = errors.New("lost the leader Lease")

// errNotActing is what Guard answers instead of sending a write.
var errNotActing = errors.New("write not sent: this replica does not hold the leader Lease, or its renew deadline has passed")

// NewIdentity names this replica in the Lease: its host name and a random suffix.
func NewIdentity() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = cryptorand.Read(b)
	return host + "_" + hex.EncodeToString(b)
}

func (e *Election) clock() time.Time {
	if e.now != nil {
		return e.now()
	}
	return time.Now()
}

// MayAct reports whether this replica holds the Lease, has waited out a Lease it recreated,
// and its renew deadline has not passed. It reads the monotonic clock, so a process frozen
// (SIGSTOP, a paused VM) past its deadline finds it passed the moment it resumes.
func (e *Election) MayAct() bool {
	t, now := e.term.Load(), e.clock()
	return t != nil && !now.Before(t.from) && now.Before(t.until)
}

// Leading reports whether this replica holds the Lease and acts, or is about to exit because
// its renew deadline passed.
func (e *Election) Leading() bool {
	t := e.term.Load()
	return t != nil && !e.clock().Before(t.from)
}

// Guard wraps the transport of the clients the controller writes through. While MayAct is
// false, a write (any method but GET and HEAD) to anything but a Lease fails before it leaves
// the process. It is checked after client-go's rate limiter, as late as a client can: the
// workload patches, state writes and Events of a leader that resumes past its deadline are
// refused even if a worker runs before Run notices and exits. A freeze in the instant between
// the check and the request leaving is what MinMargin must cover: Kubernetes offers no fencing
// token for writes to other objects.
func (e *Election) Guard(next http.RoundTripper) http.RoundTripper {
	return guarded{next: next, e: e}
}

type guarded struct {
	next http.RoundTripper
	e    *Election
}

func (g guarded) RoundTrip(r *http.Request) (*http.Response, error) {
	write := r.Method != http.MethodGet && r.Method != http.MethodHead
	if write && !isLease(r.URL.Path) && !g.e.MayAct() {
		return nil, errNotActing
	}
	return g.next.RoundTrip(r)
}

// isLease reports a path of the Leases API. Contains, not HasPrefix: a kubeconfig may reach the
// API server under a path (a proxy such as Rancher's serves /k8s/clusters/<id>/apis/...).
func isLease(path string) bool {
	return strings.Contains(path, "/apis/coordination.k8s.io/") && strings.Contains(path, "/leases")
}

// Run blocks until ctx ends (and, if leading, work has returned), or exits the process when the
// Lease is lost or the renew deadline passes.
func (e *Election) Run(ctx context.Context, work func(context.Context) error) error {
	if e.exit == nil {
		e.exit = os.Exit
	}
	e.Log.Info("waiting to become leader", "lease", e.Name, "identity", e.ID)
	if !e.acquire(ctx) {
		return nil // stopped while standing by: nothing to flush
	}
	result := make(chan error, 1)
	begin := time.NewTimer(e.term.Load().from.Sub(e.clock()))
	defer begin.Stop()
	if !e.Leading() {
		e.Log.Info("created the missing leader Lease; waiting a Lease duration before acting, as it may have been deleted under a leader that still acts",
			"lease", e.Name, "identity", e.ID, "act_in", e.term.Load().from.Sub(e.clock()).Round(time.Millisecond))
	}
	started, done := false, ctx.Done()
	ticker := time.NewTicker(e.Retry)
	defer ticker.Stop()
	// The deadline has its own timer, so a leader whose renewals hang, or that resumes after a
	// freeze, exits at the deadline rather than at the next renew.
	deadline := time.NewTimer(e.remaining())
	defer deadline.Stop()
	for {
		select {
		case err := <-result:
			e.release()
			return err
		case <-done:
			if !started {
				e.release()
				return nil
			}
			done = nil // work flushes and returns; renewals go on meanwhile
			continue
		case <-begin.C:
			if e.MayAct() && !started {
				started = true
				e.Metrics.Leader.Set(1)
				e.Log.Info("became leader", "lease", e.Name, "identity", e.ID)
				go func() { result <- work(ctx) }()
			}
			continue
		case <-ticker.C:
		case <-deadline.C:
		}
		if !e.withinDeadline() {
			return e.lose("could not renew the leader Lease within the renew deadline")
		}
		switch e.renew(ctx) {
		case lost:
			return e.lose("the leader Lease is gone or names another holder")
		case renewed:
			deadline.Reset(e.remaining())
		}
		if !e.withinDeadline() {
			return e.lose("could not renew the leader Lease within the renew deadline")
		}
	}
}

// withinDeadline reports whether this replica holds the Lease and its renew deadline has not
// passed; unlike MayAct, also while it waits to act on a Lease it recreated.
func (e *Election) withinDeadline() bool {
	t := e.term.Load()
	return t != nil && e.clock().Before(t.until)
}

// remaining is the time left before the renew deadline.
func (e *Election) remaining() time.Duration {
	if t := e.term.Load(); t != nil {
		return t.until.Sub(e.clock())
	}
	return 0
}

// lose stops acting and ends the process without flushing: pending reloads are redone by the
// next leader, which must not find this one still acting.
func (e *Election) lose(why string) error {
	e.term.Store(nil)
	e.Metrics.Leader.Set(0)
	e.Log.Error(why+"; exiting without flushing so that no two replicas act", "lease", e.Name, "identity", e.ID)
	e.exit(1)
	return errLost
}

func (e *Election) acquire(ctx context.Context) bool {
	for {
		if e.tryAcquire(ctx) {
			return true
		}
		var jitter time.Duration
		if n := int64(e.Retry) / 5; n > 0 {
			jitter = time.Duration(rand.Int64N(n))
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(e.Retry + jitter):
		}
	}
}

// tryAcquire is a standby's attempt: it takes the Lease if it is free by the rules of Election,
// and reports whether it now leads.
func (e *Election) tryAcquire(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, e.Retry)
	defer cancel()
	start := e.clock()
	l, err := e.Leases.Get(ctx, e.Name, metav1.GetOptions{})
	read := e.clock() // the record was stored before this
	if apierrors.IsNotFound(err) {
		e.seen = observation{}
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: e.Name}}
		e.claim(l, start)
		_, err = e.Leases.Create(ctx, l, metav1.CreateOptions{})
		return e.won("create", err, start, read.Add(max(e.Lease, e.lastDeclared)))
	}
	if err != nil {
		e.Log.Warn("read leader Lease", "lease", e.Name, "err", err)
		return false
	}
	e.observe(l, read)
	// A Lease naming this replica was written by an earlier attempt whose answer was lost: this
	// replica did not act on it, and may take it at once.
	if ptrValue(l.Spec.HolderIdentity) != e.ID && read.Before(e.seen.at.Add(e.declared(l))) {
		return false
	}
	e.claim(l, start)
	_, err = e.Leases.Update(ctx, l, metav1.UpdateOptions{})
	return e.won("update", err, start, start)
}

// won settles an acquisition: on success this replica may act from actFrom until R after start.
func (e *Election) won(verb string, err error, start, actFrom time.Time) bool {
	if err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			e.Log.Warn(verb+" leader Lease", "lease", e.Name, "err", err)
		}
		return false
	}
	e.term.Store(&term{from: actFrom, until: start.Add(e.Renew)})
	return true
}

// renew is the leader's attempt to extend its Lease. It gives up at the deadline, since a renew
// that ends later cannot extend the time to act (that counts from its start).
func (e *Election) renew(ctx context.Context) outcome {
	t := e.term.Load()
	if t == nil {
		return lost
	}
	start := e.clock()
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), minTime(start.Add(e.Retry), t.until))
	defer cancel()
	l, err := e.Leases.Get(ctx, e.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		e.Log.Error("the leader Lease was deleted", "lease", e.Name)
		return lost
	}
	if err != nil {
		e.Log.Warn("read leader Lease", "lease", e.Name, "err", err, "renew_deadline_in", e.remaining())
		return failed
	}
	if holder := ptrValue(l.Spec.HolderIdentity); holder != e.ID {
		e.Log.Error("the leader Lease names another holder", "lease", e.Name, "holder", holder)
		return lost
	}
	e.claim(l, start)
	_, err = e.Leases.Update(ctx, l, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		e.Log.Error("the leader Lease was deleted", "lease", e.Name)
		return lost
	case apierrors.IsConflict(err):
		return failed // someone wrote it since the read; the next read tells who
	case err != nil:
		e.Log.Warn("renew leader Lease", "lease", e.Name, "err", err, "renew_deadline_in", e.remaining())
		return failed
	}
	e.term.Store(&term{from: t.from, until: start.Add(e.Renew)})
	return renewed
}

// observe notes when the record last changed, by this replica's clock. Any write changes the
// resourceVersion, and a Lease deleted and created again has a new one, so an unchanged version
// means that nobody wrote the Lease between the two reads.
func (e *Election) observe(l *coordinationv1.Lease, read time.Time) {
	e.lastDeclared = e.declared(l)
	if l.ResourceVersion != e.seen.version || e.seen.at.IsZero() {
		e.seen = observation{version: l.ResourceVersion, at: read}
	}
}

// declared is the duration the Lease's holder declares, or this replica's own if it declares
// none.
func (e *Election) declared(l *coordinationv1.Lease) time.Duration {
	if s := l.Spec.LeaseDurationSeconds; s != nil && *s > 0 {
		return time.Duration(*s) * time.Second
	}
	return e.Lease
}

// claim makes the Lease ours, counting a transition when it came from someone else.
func (e *Election) claim(l *coordinationv1.Lease, now time.Time) {
	s := &l.Spec
	if ptrValue(s.HolderIdentity) != e.ID {
		s.AcquireTime = &metav1.MicroTime{Time: now}
		s.LeaseTransitions = ptr(ptrValue(s.LeaseTransitions) + 1)
	}
	s.HolderIdentity = ptr(e.ID)
	s.LeaseDurationSeconds = ptr(int32(e.Lease / time.Second))
	s.RenewTime = &metav1.MicroTime{Time: now}
}

// release hands the Lease over after the controller has stopped: no holder, declaring 1 s, so a
// standby takes it about a second after it reads it, not a Lease duration.
func (e *Election) release() {
	e.term.Store(nil) // nothing acts any more; the Lease write below is not guarded
	e.Metrics.Leader.Set(0)
	ctx, cancel := context.WithTimeout(context.Background(), e.Retry)
	defer cancel()
	l, err := e.Leases.Get(ctx, e.Name, metav1.GetOptions{})
	if err != nil || ptrValue(l.Spec.HolderIdentity) != e.ID {
		return
	}
	l.Spec.HolderIdentity = nil
	l.Spec.LeaseDurationSeconds = ptr(int32(1))
	l.Spec.RenewTime = &metav1.MicroTime{Time: e.clock()}
	if _, err := e.Leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		e.Log.Warn("release leader Lease", "lease", e.Name, "err", err)
		return
	}
	e.Log.Info("released the leader Lease", "lease", e.Name)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func ptr[T any](v T) *T { return &v }

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
