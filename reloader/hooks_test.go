package reloader_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/reloader"
)

// main.go hands back the lists' memory at Synced and the start's at StartedUp: Synced must come
// once the lists are in and before any config is judged (else it would page out what the
// start-up pass is using, for nothing), StartedUp once every config has been.
func TestTheSyncedHookRunsBeforeAnyConfigIsJudgedAndStartedUpAfterAll(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "a", map[string]string{"v": "1"})
	createConfigMap(t, ns, "b", map[string]string{"v": "1"})
	createDeployment(t, ns, "w", 0, map[string]string{"configmap.reloader.stakater.com/reload": "a,b"}, nil)

	var mu sync.Mutex
	var calls []string
	var judgedAtSync, judgedAtStart float64
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) {
		judged := func() float64 { return configSyncs(t, &running{metrics: o.Metrics}) }
		o.Synced = func() {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, "Synced")
			judgedAtSync = judged()
		}
		o.StartedUp = func() {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, "StartedUp")
			judgedAtStart = judged()
		}
	}})
	waitFor(t, 10*time.Second, "the start-up hook", func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(calls) == 2, nil
	})
	settle(t)
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 || calls[0] != "Synced" || calls[1] != "StartedUp" {
		t.Fatalf("hooks called %v, want [Synced StartedUp]", calls)
	}
	if judgedAtSync != 0 {
		t.Errorf("%v configs judged when Synced ran, want none", judgedAtSync)
	}
	if judgedAtStart < 2 { // positive control: the start-up pass judges both configs
		t.Errorf("%v configs judged when StartedUp ran, want both", judgedAtStart)
	}
}

// The start-up's last garbage is the state's first writes: StartedUp, which hands the heap and
// the executable's pages back, comes after them, even when they are slow (here each state write
// is held 1 s): the entries the start recorded for the configs web reads (c, which nothing
// reads, gets none), and the note that stakater's variables were compared, written after them.
func TestStartedUpComesAfterTheStatesFirstWriteEvenASlowOne(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	for _, n := range []string{"a", "b", "c"} {
		createConfigMap(t, ns, n, map[string]string{"v": "1"})
	}
	createDeployment(t, ns, "web", 0, named("configmap", "a,b"), nil)
	slow := func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet && strings.Contains(req.URL.Path, "/configmaps/reloader-state") {
				time.Sleep(time.Second)
			}
			return rt.RoundTrip(req)
		})
	}
	atStart := make(chan map[string]string, 1)
	startController(t, ns, controllerOpts{wrap: slow, tweak: func(o *reloader.Options) {
		o.StartedUp = func() {
			cm, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "reloader-state", metav1.GetOptions{})
			if err != nil {
				atStart <- map[string]string{"error": err.Error()}
				return
			}
			atStart <- cm.Data
		}
	}})
	select {
	case data := <-atStart:
		for _, key := range []string{"v1.ConfigMap_a", "v1.ConfigMap_b", "reloader.stakater-compared"} {
			if data[key] == "" {
				t.Errorf("when StartedUp ran the state held no %s: %v", key, data)
			}
		}
		if _, ok := data["v1.ConfigMap_c"]; ok {
			t.Errorf("the state holds an entry of c, which nothing reads: %v", data)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("StartedUp not called within 20 s")
	}
}

// A state that refuses every write of its entries still lets the start finish: StartedUp waits
// for the first write no longer than its bound (3 s here, 30 s as shipped), and not less while
// the write is refused. (A state that cannot even be created keeps the reloader not ready:
// state.Load.)
func TestStartedUpWaitsForAStateThatRefusesItsWritesNoLongerThanItsBound(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "a", map[string]string{"v": "1"})
	refuse := func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet && req.Method != http.MethodPost && strings.Contains(req.URL.Path, "/configmaps/reloader-state") {
				return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 refused by the test",
					Body: http.NoBody, Header: http.Header{}, Request: req}, nil
			}
			return rt.RoundTrip(req)
		})
	}
	const bound = 3 * time.Second
	var mu sync.Mutex
	var synced, started time.Time
	startController(t, ns, controllerOpts{wrap: refuse, tweak: func(o *reloader.Options) {
		reloader.SetStateWriteWait(o, bound)
		o.Synced = func() { mu.Lock(); synced = time.Now(); mu.Unlock() }
		o.StartedUp = func() { mu.Lock(); started = time.Now(); mu.Unlock() }
	}})
	waitFor(t, 20*time.Second, "StartedUp despite the refused state", func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return !started.IsZero(), nil
	})
	cm, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the state's first shard, created at start: %v", err)
	}
	if v := cm.Data["v1.ConfigMap_a"]; v != "" {
		t.Fatalf("the state holds a's entry (%s): the refusal did not hold, so the bound was not tested", v)
	}
	mu.Lock()
	defer mu.Unlock()
	if took := started.Sub(synced); took < bound {
		t.Errorf("StartedUp %s after Synced, before the %s bound, while every state write was refused", took, bound)
	}
}
