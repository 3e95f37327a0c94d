package reloader_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// stateWrites wraps the controller's transport: it counts the writes to the state ConfigMap and,
// while refuse is set, refuses them as an API server that went away would.
func stateWrites() (sent *atomic.Int64, refuse *atomic.Bool, wrap func(http.RoundTripper) http.RoundTripper) {
	sent, refuse = &atomic.Int64{}, &atomic.Bool{}
	wrap = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet && strings.Contains(req.URL.Path, "/configmaps/reloader-state") {
				sent.Add(1)
				if refuse.Load() {
					return nil, errRefused
				}
			}
			return rt.RoundTrip(req)
		})
	}
	return sent, refuse, wrap
}

type refusedError struct{}

func (refusedError) Error() string { return "state write refused by the test" }

var errRefused error = refusedError{}

// marked starts a controller (its transport wrapped) over web, which reloads on app-config, and
// returns it once a first change has given web its marker: a later change's every dependent
// then carries one.
func marked(t *testing.T, ns string, wrap func(http.RoundTripper) http.RoundTripper) *running {
	t.Helper()
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	r := startController(t, ns, controllerOpts{grace: 5 * time.Second, wrap: wrap})
	waitEnv(t, ns, "web", cmVar, updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"}))
	r.settle()
	return r
}

// A change whose every dependent's marker holds the new content needs no state write: the entry
// restates the markers. It goes with the next write, at the latest when the process stops.
func TestAChangeEveryDependentsMarkerHoldsSendsNoStateWriteOfItsOwn(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	sent, _, wrap := stateWrites()
	r := marked(t, ns, wrap)
	recorded := stateEntry(t, ns, "v1.ConfigMap_app-config")
	before := sent.Load()

	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	waitEnv(t, ns, "web", cmVar, hash)
	r.settle()
	if n := sent.Load() - before; n != 0 {
		t.Fatalf("%d state writes for a change the marker records", n)
	}
	if got := stateEntry(t, ns, "v1.ConfigMap_app-config"); got != recorded {
		t.Fatalf("the state holds %q, want the earlier %q until the next write", got, recorded)
	}
	r.stop(t)
	if got := stateEntry(t, ns, "v1.ConfigMap_app-config"); got != hash {
		t.Fatalf("after the stop the state holds %q, want %q", got, hash)
	}
}

// A workload the state judges (no marker) makes the entry it is judged by a write of its own,
// so that a crash after it does not leave the state behind what its pods read: the next
// process restarts nothing.
func TestAWorkloadJudgedByTheStateGetsItsEntryWrittenBeforeACrash(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	_, refuse, wrap := stateWrites()
	first := marked(t, ns, wrap)
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	waitEnv(t, ns, "web", cmVar, hash)
	first.settle()
	if got := stateEntry(t, ns, "v1.ConfigMap_app-config"); got == hash {
		t.Fatal("the entry was written with the change: the test would prove nothing")
	}

	late := createDeployment(t, ns, "late", 0, named("configmap", "app-config"), nil)
	waitFor(t, 10*time.Second, "the entry the new workload is judged by written", func() (bool, error) {
		return stateEntry(t, ns, "v1.ConfigMap_app-config") == hash, nil
	})
	refuse.Store(true) // from here on no write lands: the stop is a kill -9 to the state
	first.stop(t)

	webGen := getDeployment(t, ns, "web").Generation
	second := startController(t, ns, controllerOpts{grace: 5 * time.Second})
	second.settle()
	if g := getDeployment(t, ns, "late").Generation; g != late.Generation {
		t.Fatalf("late was restarted (generation %d→%d) for the content it was created with", late.Generation, g)
	}
	if g := getDeployment(t, ns, "web").Generation; g != webGen {
		t.Fatalf("web was restarted (generation %d→%d) though its marker holds the content", webGen, g)
	}
	// The positive control: the second process reloads both on the next change.
	next := updateConfigMap(t, ns, "app-config", map[string]string{"v": "3"})
	waitEnv(t, ns, "web", cmVar, next)
	waitEnv(t, ns, "late", cmVar, next)
}
