package integration_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/reloader/reloader/internal/kube"
	"github.com/reloader/reloader/state"
)

// frozenClient is the reloader's state client with a leader's two faults: a data write caught
// in flight (the process frozen after its Guard let it through) and, once released, a Guard that
// refuses every new write because the replica no longer leads.
type frozenClient struct {
	kube.StateClient
	mu      sync.Mutex
	freeze  bool          // catch the next data write
	caught  chan struct{} // closed when it is caught
	release chan struct{} // closed to send it
	deposed bool          // refuse writes after the caught one
}

var errDeposed = errors.New("write not sent: this replica does not lead")

func newFrozenClient(ns string) *frozenClient {
	c := cluster.Client()
	return &frozenClient{
		StateClient: kube.NewStateClient(c.CoreV1().ConfigMaps(ns), c.CoreV1().RESTClient(), scheme.ParameterCodec, ns),
		caught:      make(chan struct{}), release: make(chan struct{}),
	}
}

func (f *frozenClient) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*corev1.ConfigMap, error) {
	f.mu.Lock()
	catch := f.freeze && strings.Contains(string(data), `"data"`)
	if catch {
		f.freeze = false
	}
	deposed := f.deposed && !catch
	f.mu.Unlock()
	if deposed {
		return nil, errDeposed
	}
	if catch {
		close(f.caught)
		<-f.release
	}
	return f.StateClient.Patch(ctx, name, pt, data, opts, sub...)
}

// write is one way a store puts value under a key of the first shard; it returns the key and
// what the shard then stores under it.
type write func(ctx context.Context, s *state.Store, value string) (key, want string, err error)

// entryWrite is the store's own write: an entry, flushed.
func entryWrite(ctx context.Context, s *state.Store, value string) (string, string, error) {
	key := state.Key("ConfigMap", "", "app")
	s.Configs().Set(key, hashOf(value))
	return key, hashOf(value), s.Flush(ctx)
}

// otherWrite is the controller's note of a Job recreation, under a key that is not the store's.
func otherWrite(ctx context.Context, s *state.Store, value string) (string, string, error) {
	key := "reloader.job-recreation_ns_job"
	return key, value, s.WriteOther(ctx, key, &value)
}

// lateWrite runs the frozen leader's story: the old store, fenced or not, writes v1, then writes
// v2 and is frozen with that request in flight; a new store loads (and, fenced, claims) the state;
// the old request is then sent and the old store deposed. It returns what the state ConfigMap
// holds under the key and v1's and v2's values there, and the old store's error.
func lateWrite(t *testing.T, fenced bool, put write, afterLoad func(ns string)) (got, v1, v2 string, err error) {
	t.Helper()
	ctx := context.Background()
	ns := cluster.NewNamespace(t)
	frozen := newFrozenClient(ns)
	old := state.New(frozen, ns, "reloader-state", textLog(t.Output()))
	if fenced {
		old.Fence("old")
	}
	if _, err := old.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if afterLoad != nil {
		afterLoad(ns)
	}
	key, v1, err := put(ctx, old, "v1")
	if err != nil {
		t.Fatal(err)
	}

	frozen.mu.Lock()
	frozen.freeze = true
	frozen.mu.Unlock()
	done := make(chan error)
	go func() {
		_, w, err := put(ctx, old, "v2")
		v2 = w
		done <- err
	}()
	<-frozen.caught

	successor := newStore(cluster.Client(), ns, nil)
	if fenced {
		successor.Fence("new")
	}
	if _, err := successor.Load(ctx); err != nil {
		t.Fatal(err)
	}
	frozen.mu.Lock()
	frozen.deposed = true
	frozen.mu.Unlock()
	close(frozen.release)
	err = <-done
	return stored(t, ns)[key], v1, v2, err
}

// The hole a frozen leader left open: a state write it had in flight when frozen landed after its
// successor had loaded the state, putting back content the successor did not hold. Fenced, the
// successor's Load claims the state, and the late write is refused; its retry meets the Guard.
// The same holds for the controller's note of a Job recreation.
//
// With the state deleted after the old store's Load, its first write recreates the state, and
// the version the create returned fences the next one too (a store that left it unknown wrote
// unconditionally).
func TestAFencedStoresLateWriteDoesNotLandAfterItsSuccessorLoaded(t *testing.T) {
	deleteState := func(ns string) {
		if err := cluster.Client().CoreV1().ConfigMaps(ns).Delete(context.Background(), "reloader-state", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, c := range map[string]struct {
		put       write
		afterLoad func(ns string)
	}{
		"entry":                          {entryWrite, nil},
		"Job recreation note":            {otherWrite, nil},
		"entry, after a recreated state": {entryWrite, deleteState},
	} {
		t.Run(name, func(t *testing.T) {
			got, v1, _, err := lateWrite(t, true, c.put, c.afterLoad)
			if got != v1 {
				t.Errorf("the state holds %q after the late write, want v1's %q: the write landed", got, v1)
			}
			if !errors.Is(err, errDeposed) {
				t.Errorf("the old store's write: %v, want its retry refused by the Guard", err)
			}
		})
	}
}

// Positive control: the same story without fencing, as before it, lets the late write land.
func TestAnUnfencedStoresLateWriteLands(t *testing.T) {
	for name, put := range map[string]write{"entry": entryWrite, "Job recreation note": otherWrite} {
		t.Run(name, func(t *testing.T) {
			got, _, v2, err := lateWrite(t, false, put, nil)
			if err != nil || got != v2 {
				t.Errorf("unfenced: state holds %q, want v2's %q; error %v: want the late write landed", got, v2, err)
			}
		})
	}
}

// Someone else's write of the shard (a person's edit here; a write of ours whose answer was lost
// does the same) costs a fenced store one more attempt, and their key
// is kept.
func TestAFencedStoreWritesAgainAfterSomeoneElsesEditAndKeepsTheirKey(t *testing.T) {
	ctx := context.Background()
	ns := cluster.NewNamespace(t)
	c := cluster.Client()
	s := state.New(kube.NewStateClient(c.CoreV1().ConfigMaps(ns), c.CoreV1().RESTClient(), scheme.ParameterCodec, ns), ns, "reloader-state", textLog(t.Output()))
	s.Fence("leader")
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	setStateKey(t, ns, "someone-else", "kept")
	key := state.Key("ConfigMap", "", "app")
	s.Configs().Set(key, hashOf("v1"))
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("flush after someone else's edit: %v", err)
	}
	if got := stored(t, ns)[key]; got != hashOf("v1") {
		t.Errorf("state holds %q for %s, want v1's hash", got, key)
	}
	if got := stored(t, ns)["someone-else"]; got != "kept" {
		t.Errorf("someone else's key holds %q, want it kept", got)
	}
}

// A write that lands between a fenced Load's read and its claim (a predecessor's late one) fails
// the Load, and the Load retried reads it: memory never misses what the state holds.
func TestAFencedLoadReadsAgainWhenTheStateIsWrittenWhileRead(t *testing.T) {
	ctx := context.Background()
	ns := cluster.NewNamespace(t)
	loaded(t, ns, nil) // creates the state
	key := state.Key("ConfigMap", "", "app")
	racing := &writeAfterRead{ConfigMapClient: cluster.Client().CoreV1().ConfigMaps(ns), write: func() {
		setStateKey(t, ns, key, hashOf("late"))
	}}
	s := state.New(racing, ns, "reloader-state", textLog(t.Output()))
	s.Fence("new")
	if _, err := s.Load(ctx); err == nil {
		t.Fatal("a Load whose claim followed another write succeeded; want it refused")
	}
	if _, err := s.Load(ctx); err != nil {
		t.Fatalf("the Load retried: %v", err)
	}
	if e, _ := s.Configs().Get(key); e.Hash != hashOf("late") {
		t.Errorf("after the retried Load memory holds %q, want the late write's hash", e.Hash)
	}
}

// writeAfterRead runs write once, after the first Get of the state's first shard.
type writeAfterRead struct {
	state.ConfigMapClient
	once  sync.Once
	write func()
}

func (w *writeAfterRead) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error) {
	cm, err := w.ConfigMapClient.Get(ctx, name, opts)
	if name == "reloader-state" {
		w.once.Do(w.write)
	}
	return cm, err
}

func setStateKey(t *testing.T, ns, key, value string) {
	t.Helper()
	patch := `{"data":{"` + key + `":"` + value + `"}}`
	_, err := cluster.Client().CoreV1().ConfigMaps(ns).Patch(context.Background(), "reloader-state", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
}
