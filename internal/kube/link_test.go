package kube

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestLinkIsDownAfterAFailedRequestAndUpAfterAnAnswer(t *testing.T) {
	code := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }))
	l := &Link{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	client := &http.Client{Transport: l.Wrap(http.DefaultTransport)}
	get := func() {
		if resp, err := client.Get(srv.URL); err == nil {
			resp.Body.Close()
		}
	}
	for _, step := range []struct {
		code int
		up   bool
	}{{http.StatusOK, true}, {http.StatusServiceUnavailable, false}, {http.StatusForbidden, true}, {http.StatusInternalServerError, false}, {http.StatusTooManyRequests, true}} {
		code = step.code
		get()
		if l.Up() != step.up {
			t.Fatalf("after an answer %d, Up() = %v", step.code, l.Up())
		}
	}
	srv.Close()
	get()
	if l.Up() {
		t.Fatal("Up() after a refused connection")
	}
}

func TestRetryHoldsOnlyUnreachableErrors(t *testing.T) {
	l := &Link{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxDelay: 10 * time.Millisecond}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	calls := 0
	v, err := retry(context.Background(), l, func() (int, error) {
		if calls++; calls < 3 {
			return 0, refused
		}
		return 42, nil
	})
	if v != 42 || err != nil || calls != 3 {
		t.Fatalf("retry = %d, %v after %d calls; want 42 after 3", v, err, calls)
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("no"))
	calls = 0
	if _, err := retry(context.Background(), l, func() (int, error) { calls++; return 0, forbidden }); !apierrors.IsForbidden(err) || calls != 1 {
		t.Fatalf("a forbidden list was retried %d times (%v); the reflector reports it", calls, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := retry(ctx, l, func() (int, error) { return 0, refused }); err == nil {
		t.Fatal("retry went on after its context ended")
	}
}
