package state_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/state"
	"github.com/reloader/reloader/state/statetest"
)

// failingClient refuses every write, like an API server that is down.
type failingClient struct{}

var errDown = errors.New("api server down")

func (failingClient) Get(context.Context, string, metav1.GetOptions) (*corev1.ConfigMap, error) {
	return nil, errDown
}

func (failingClient) Create(context.Context, *corev1.ConfigMap, metav1.CreateOptions) (*corev1.ConfigMap, error) {
	return nil, errDown
}

func (failingClient) Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*corev1.ConfigMap, error) {
	return nil, errDown
}

func TestRunStopsBackingOffWhenItsContextEnds(t *testing.T) {
	s := state.New(failingClient{}, "ns", "reloader-state", slog.New(slog.DiscardHandler))
	failures := make(chan error, 100)
	s.OnWrite = func(_ string, err error) { failures <- err }
	s.Configs().Set(state.Key("ConfigMap", "", "app"), hashOf("a"))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx, 10*time.Millisecond) }()
	// The backoff after the third failure is three seconds; the bound below is well under it.
	for range 3 {
		if err := <-failures; err == nil {
			t.Fatal("a write succeeded against a client that refuses them all")
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Run still backing off a second after its context ended")
	}
}

func TestRunWritesWhatIsPendingWhenItsContextEnds(t *testing.T) {
	c := statetest.NewConfigMaps()
	s := loaded(t, c, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// A linger far longer than the test: only the end of ctx can cut it short.
	go func() { defer close(done); s.Run(ctx, time.Hour) }()
	k := state.Key("ConfigMap", "", "app")
	s.Configs().Set(k, hashOf("a"))
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run still lingering after its context ended")
	}
	if v := stored(t, c)[k]; v != hashOf("a") {
		t.Fatalf("stored %q, want the entry set before the context ended", v)
	}
}

// refuseNext is a ConfigMapClient that refuses the next write once asked to, like an API server
// down for a moment.
type refuseNext struct {
	state.ConfigMapClient
	refuse bool
}

func (r *refuseNext) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*corev1.ConfigMap, error) {
	if r.refuse {
		r.refuse = false
		return nil, errDown
	}
	return r.ConfigMapClient.Patch(ctx, name, pt, data, opts, sub...)
}

// A refused write stays due, removals included, and the next flush makes it: nothing is lost.
func TestTheNextFlushMakesAWriteThatFailed(t *testing.T) {
	c := statetest.NewConfigMaps()
	ctx := context.Background()
	client := &refuseNext{ConfigMapClient: c}
	s := state.New(client, "default", "reloader-state", slog.New(slog.DiscardHandler))
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	removed, set := state.Key("ConfigMap", "", "removed"), state.Key("ConfigMap", "", "set")
	s.Configs().Set(removed, hashOf("r"))
	flush(t, s)
	s.Configs().DeleteEntry(removed)
	s.Configs().Set(set, hashOf("s"))
	client.refuse = true
	if err := s.Flush(ctx); err == nil {
		t.Fatal("a refused write reported no error")
	}
	if s.Clean() {
		t.Fatal("the store is clean after a refused write")
	}
	flush(t, s)
	data := stored(t, c)
	if _, ok := data[removed]; ok || data[set] != hashOf("s") {
		t.Fatalf("after the second flush the state holds %v, want %s removed and %s=%s", data, removed, set, hashOf("s"))
	}
}

// holdFirstPatch is a ConfigMapClient whose first patch once armed waits for release and then fails, like
// a write whose context ended while it was in flight.
type holdFirstPatch struct {
	state.ConfigMapClient
	entered, release chan struct{}
	armed, held      atomic.Bool
}

func (h *holdFirstPatch) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*corev1.ConfigMap, error) {
	if h.armed.Load() && h.held.CompareAndSwap(false, true) {
		close(h.entered)
		<-h.release
		return nil, context.Canceled
	}
	return h.ConfigMapClient.Patch(ctx, name, pt, data, opts, sub...)
}

// A Flush that starts while another flush's write is in flight returns only once what that
// write carried is stored, though that write fails: nothing dirty is left behind a Flush.
func TestAFlushBesideAFailingOneWritesWhatThatOneCarried(t *testing.T) {
	c := statetest.NewConfigMaps()
	client := &holdFirstPatch{ConfigMapClient: c, entered: make(chan struct{}), release: make(chan struct{})}
	s := state.New(client, "default", "reloader-state", slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	k := state.Key("ConfigMap", "", "app")
	s.Configs().Set(k, hashOf("a"))
	flush(t, s) // the shard exists: later writes are patches
	s.Configs().Set(k, hashOf("b"))
	client.armed.Store(true)
	first := make(chan error, 1)
	go func() { first <- s.Flush(ctx) }()
	<-client.entered
	second := make(chan error, 1)
	go func() { second <- s.Flush(ctx) }()
	var err2 error
	early := false
	select {
	case err2 = <-second:
		early = true // a correct second flush waits for the first
	case <-time.After(200 * time.Millisecond):
	}
	close(client.release)
	if err := <-first; err == nil {
		t.Fatal("the held write reported no error")
	}
	if !early {
		err2 = <-second
	}
	if err2 != nil {
		t.Fatalf("second flush: %v", err2)
	}
	if v := stored(t, c)[k]; v != hashOf("b") {
		t.Fatalf("after both flushes the state holds %q, want %s", v, hashOf("b"))
	}
}
