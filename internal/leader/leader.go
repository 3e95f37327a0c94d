// Package leader owns leader election over a coordination.k8s.io Lease, so that of several
// reloader replicas only one acts.
package leader

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"log/slog"
	"math/rand/v2"
	"os"
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

// Election runs the controller only while this replica holds a coordination.k8s.io Lease.
//
// It follows client-go's leader Election (which the reloader does not link, as its lock package
// pulls every API group into the binary): a held Lease counts as expired only when its record
// has not changed for a Lease duration by this replica's own clock, so clocks need not agree;
// writes carry the resourceVersion, so two candidates cannot both win. The leader gives up when
// it cannot renew within the renew deadline, which is shorter than the Lease, so it has stopped
// before anyone else may take over.
//
// On SIGTERM the controller is stopped first (flushing pending reloads while the Lease is still
// held) and the Lease is released after. A Lease lost while running ends the process at once,
// without a flush, so a new leader never acts beside an old one.
type Election struct {
	Leases  LeaseClient
	Name    string        // the Lease's name
	ID      string        // this replica's identity, NewIdentity
	Lease   time.Duration // how long a Lease not renewed stays held
	Renew   time.Duration // a leader that cannot renew within this gives up
	Retry   time.Duration // how often candidates try and leaders renew
	Log     *slog.Logger
	Metrics *metrics.Metrics
	leading atomic.Bool

	// The last record seen, and when (local clock) it was first seen.
	seenHolder string
	seenRenew  time.Time
	seenAt     time.Time
}

// NewIdentity names this replica in the Lease: its host name and a random suffix.
func NewIdentity() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = cryptorand.Read(b)
	return host + "_" + hex.EncodeToString(b)
}

// Run blocks until ctx ends (and, if leading, work has returned), or exits the process when the
// Lease is lost.
func (e *Election) Run(ctx context.Context, work func(context.Context) error) error {
	e.Log.Info("waiting to become leader", "lease", e.Name, "identity", e.ID)
	if !e.acquire(ctx) {
		return nil // stopped while standing by: nothing to flush
	}
	e.leading.Store(true)
	e.Metrics.Leader.Set(1)
	e.Log.Info("became leader", "lease", e.Name, "identity", e.ID)
	result := make(chan error, 1)
	go func() { result <- work(ctx) }()
	ticker := time.NewTicker(e.Retry)
	defer ticker.Stop()
	renewed := time.Now()
	for {
		select {
		case err := <-result:
			e.release()
			return err
		case <-ticker.C:
			if e.try(ctx) {
				renewed = time.Now()
			} else if time.Since(renewed) > e.Renew {
				e.Log.Error("lost the leader Lease; exiting without flushing so the new leader acts alone", "lease", e.Name)
				os.Exit(1)
			}
		}
	}
}

func (e *Election) acquire(ctx context.Context) bool {
	for {
		if e.try(ctx) {
			return true
		}
		jitter := time.Duration(rand.Int64N(int64(e.Retry) / 5))
		select {
		case <-ctx.Done():
			return false
		case <-time.After(e.Retry + jitter):
		}
	}
}

// try acquires or renews the Lease once, and reports whether this replica holds it.
func (e *Election) try(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.Retry)
	defer cancel()
	now := time.Now()
	l, err := e.Leases.Get(ctx, e.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: e.Name}}
		e.claim(l, now)
		_, err = e.Leases.Create(ctx, l, metav1.CreateOptions{})
		return e.settled("create", err, now)
	}
	if err != nil {
		e.Log.Warn("read leader Lease", "lease", e.Name, "err", err)
		return false
	}
	e.observe(l, now)
	holder := ptrValue(l.Spec.HolderIdentity)
	if holder != "" && holder != e.ID && now.Before(e.seenAt.Add(e.Lease)) {
		return false
	}
	e.claim(l, now)
	_, err = e.Leases.Update(ctx, l, metav1.UpdateOptions{})
	return e.settled("update", err, now)
}

// observe notes when the record last changed, by this replica's clock.
func (e *Election) observe(l *coordinationv1.Lease, now time.Time) {
	holder, renew := ptrValue(l.Spec.HolderIdentity), time.Time{}
	if l.Spec.RenewTime != nil {
		renew = l.Spec.RenewTime.Time
	}
	if holder != e.seenHolder || !renew.Equal(e.seenRenew) || e.seenAt.IsZero() {
		e.seenHolder, e.seenRenew, e.seenAt = holder, renew, now
	}
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

func (e *Election) settled(verb string, err error, now time.Time) bool {
	if err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			e.Log.Warn(verb+" leader Lease", "lease", e.Name, "err", err)
		}
		return false
	}
	e.seenHolder, e.seenAt = e.ID, now
	return true
}

// release hands the Lease over at once, so a standby need not wait for it to expire.
func (e *Election) release() {
	ctx, cancel := context.WithTimeout(context.Background(), e.Retry)
	defer cancel()
	l, err := e.Leases.Get(ctx, e.Name, metav1.GetOptions{})
	if err != nil || ptrValue(l.Spec.HolderIdentity) != e.ID {
		return
	}
	l.Spec.HolderIdentity = nil
	l.Spec.LeaseDurationSeconds = ptr(int32(1))
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := e.Leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		e.Log.Warn("release leader Lease", "lease", e.Name, "err", err)
		return
	}
	e.leading.Store(false)
	e.Metrics.Leader.Set(0)
	e.Log.Info("released the leader Lease", "lease", e.Name)
}

func ptr[T any](v T) *T { return &v }

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Leading reports whether this replica holds the Lease and acts.
func (e *Election) Leading() bool { return e.leading.Load() }
