package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Link is the reloader's view of its connection to the API server, learned from the requests it
// makes anyway (Wrap), so knowing it costs no request: a transport error or a 5xx answer means
// unreachable, any other answer reachable.
//
// It also holds those calls through an outage: a list or watch that fails because the API
// server is unreachable or overloaded is retried here, every MaxDelay at most, instead of being
// returned to client-go's reflector. The reflector would back off up to 30 s, jittered to 60 s,
// and that cannot be configured through a shared informer (client-go v0.36), so changes made
// during a long outage would reach the caches up to a minute after the API server came back.
type Link struct {
	Log      *slog.Logger
	MaxDelay time.Duration // the longest wait between retries; 0 means 2 s

	down   atomic.Bool
	since  atomic.Int64 // unix nanoseconds of the first failure of the current outage
	listed atomic.Bool  // an informer has listed instead of streaming its list
}

// Up reports whether the last request reached the API server.
func (l *Link) Up() bool { return l == nil || !l.down.Load() }

// Wrap observes every request of a client built from a rest.Config with cfg.Wrap(link.Wrap).
// It sees each attempt, where client-go's own retries of a GET (up to 10, a second apart) would
// hide a failure from the caller for ten seconds.
func (l *Link) Wrap(rt http.RoundTripper) http.RoundTripper { return observer{l, rt} }

type observer struct {
	link *Link
	next http.RoundTripper
}

func (o observer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := o.next.RoundTrip(req)
	switch {
	case err != nil && req.Context().Err() == nil:
		o.link.failed(req.Method+" "+req.URL.Path, err)
	case err == nil && resp.StatusCode >= 500:
		o.link.failed(req.Method+" "+req.URL.Path, fmt.Errorf("HTTP %d", resp.StatusCode))
	case err == nil:
		o.link.recovered(req.Method + " " + req.URL.Path)
	}
	return resp, err
}

// retry runs call until it succeeds, fails with an error that is not about reaching the API
// server, or ctx ends. Whether the link is up is told by the transport (Wrap).
func retry[T any](ctx context.Context, l *Link, call func() (T, error)) (T, error) {
	delay := 100 * time.Millisecond
	for {
		v, err := call()
		if l == nil || err == nil || !unreachable(err) {
			return v, err
		}
		wait := delay/2 + rand.N(delay/2+1)
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
		delay = min(2*delay, l.maxDelay())
	}
}

func (l *Link) maxDelay() time.Duration {
	if l.MaxDelay > 0 {
		return l.MaxDelay
	}
	return 2 * time.Second
}

func (l *Link) failed(what string, err error) {
	if l.down.CompareAndSwap(false, true) {
		l.since.Store(time.Now().UnixNano())
		l.Log.Warn("API server unreachable; retrying (not ready meanwhile)", "call", what, "err", err)
	}
}

// lists notes, once, that an informer lists instead of streaming: client-go streams the initial
// lists (WatchListClient) from API servers that serve it (Kubernetes 1.34 and later), and falls
// back to a list, which the API server sends whole and client-go decodes whole before the
// transform strips anything: the start-up's memory then grows with the largest list.
func (l *Link) lists(resource string) {
	if l != nil && l.listed.CompareAndSwap(false, true) {
		l.Log.Info("an informer lists instead of streaming its initial list (an API server before Kubernetes 1.34, "+
			"or watch-list turned off): each list arrives and is decoded whole, so the start-up memory grows with the largest",
			"resource", resource)
	}
}

func (l *Link) recovered(what string) {
	if l.down.CompareAndSwap(true, false) {
		lost := time.Since(time.Unix(0, l.since.Load()))
		l.Log.Info("API server reachable again", "call", what, "outage", lost.Round(time.Millisecond).String())
	}
}

// unreachable tells the errors of an API server that is down, restarting, cut off or overloaded
// from those of one that answered (forbidden, not found, gone), which the reflector handles.
func unreachable(err error) bool {
	var netErr net.Error
	switch {
	case errors.As(err, &netErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err):
		return true
	case apierrors.IsTooManyRequests(err), apierrors.IsServiceUnavailable(err), apierrors.IsServerTimeout(err),
		apierrors.IsTimeout(err), apierrors.IsInternalError(err):
		return true
	}
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code >= 500
}
