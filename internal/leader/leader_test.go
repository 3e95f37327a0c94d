package leader

import (
	"context"
	"io"
	"log/slog"
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
	lease *coordinationv1.Lease
	rv    int
}

func (m *memLeases) Get(context.Context, string, metav1.GetOptions) (*coordinationv1.Lease, error) {
	if m.lease == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "leases"}, "reloader")
	}
	return m.lease.DeepCopy(), nil
}

func (m *memLeases) Create(_ context.Context, l *coordinationv1.Lease, _ metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if m.lease != nil {
		return nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "leases"}, l.Name)
	}
	return m.store(l), nil
}

func (m *memLeases) Update(_ context.Context, l *coordinationv1.Lease, _ metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if l.ResourceVersion != m.lease.ResourceVersion {
		return nil, apierrors.NewConflict(schema.GroupResource{Resource: "leases"}, l.Name, nil)
	}
	return m.store(l), nil
}

func (m *memLeases) store(l *coordinationv1.Lease) *coordinationv1.Lease {
	m.rv++
	m.lease = l.DeepCopy()
	m.lease.ResourceVersion = string(rune('0' + m.rv))
	return m.lease.DeepCopy()
}

func candidate(store *memLeases, id string) *Election {
	return &Election{Leases: store, Name: "reloader", ID: id, Lease: 300 * time.Millisecond, Renew: 200 * time.Millisecond,
		Retry: 50 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.New("test")}
}

func TestLeaseRules(t *testing.T) {
	ctx := context.Background()
	store := &memLeases{}
	a, b := candidate(store, "a"), candidate(store, "b")
	steps := []struct {
		name  string
		who   *Election
		wait  time.Duration
		holds bool
	}{
		{"the first candidate creates and holds the Lease", a, 0, true},
		{"another may not take a fresh Lease", b, 0, false},
		{"the holder renews", a, 0, true},
		{"another may not take it while it is renewed", b, 100 * time.Millisecond, false},
		{"the holder renews again", a, 0, true},
		{"another sees that renewal", b, 0, false},
		{"it expires a Lease duration after the observer last saw it change", b, 350 * time.Millisecond, true},
		{"the old holder cannot renew a taken Lease", a, 0, false},
	}
	for _, s := range steps {
		time.Sleep(s.wait)
		if got := s.who.try(ctx); got != s.holds {
			t.Fatalf("%s: try() = %v, want %v (holder %q)", s.name, got, s.holds, ptrValue(store.lease.Spec.HolderIdentity))
		}
	}
	b.release()
	if h := ptrValue(store.lease.Spec.HolderIdentity); h != "" {
		t.Fatalf("after release the holder is %q", h)
	}
	if !a.try(ctx) {
		t.Fatal("a released Lease is not free at once")
	}
}
