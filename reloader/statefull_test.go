package reloader_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/reloader/reloader/reloader"
	"github.com/reloader/reloader/state"
)

// storedState merges the data of every state ConfigMap in ns.
func storedState(t *testing.T, ns string) map[string]string {
	t.Helper()
	cms, err := cluster.Client().CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, cm := range cms.Items {
		if strings.HasPrefix(cm.Name, "reloader-state") {
			for k, v := range cm.Data {
				out[k] = v
			}
		}
	}
	return out
}

// A state filled by configs no workload reads: a config that a workload starts reading takes
// the room of an unread one's entry, so its entry is saved, and a change made to it while the
// reloader is down is caught up at the next start. Before spare entries, its entry stayed in
// memory only and that change was missed. The full state is said once, as a Warning Event and a
// gauge.
func TestAReadConfigsEntryIsSavedInAFullStateAndItsChangeWhileDownIsCaughtUp(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	unread := func(i int) string { return fmt.Sprintf("unread-%03d", i) }
	// One entry per shard: state.MaxShards in all, fewer than the unread configs.
	budget := state.Reserved(state.Key("ConfigMap", "", unread(0)))
	configs := state.MaxShards + 6
	for i := range configs {
		createConfigMap(t, ns, unread(i), map[string]string{"v": "1"})
	}
	opts := controllerOpts{grace: 5 * time.Second, tweak: func(o *reloader.Options) { reloader.SetStateBudget(o, budget) }}
	r := startController(t, ns, opts)
	waitFor(t, 30*time.Second, "every unread config recorded", func() (bool, error) {
		for i := range configs {
			if r.ctrl.Recorded(state.Key("ConfigMap", "", unread(i))) == "" {
				return false, nil
			}
		}
		return true, nil
	})
	// The full state is said once: a Warning Event on the first state ConfigMap, and the gauge.
	spareGauge := r.metrics.StateMemoryOnly.WithLabelValues("true")
	readGauge := r.metrics.StateMemoryOnly.WithLabelValues("false")
	waitFor(t, 10*time.Second, "the full state reported", func() (bool, error) {
		return countEvents(t, ns, "reloader-state", "StateFull") == 1 && value(t, spareGauge) > 0, nil
	})

	createConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	before := createDeployment(t, ns, "api", 0, named("configmap", "app-config"), nil).Generation
	entry := state.Key("ConfigMap", "", "app-config")
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 15*time.Second, true,
		func(context.Context) (bool, error) {
			want := r.ctrl.Recorded(entry)
			return want != "" && storedState(t, ns)[entry] == want, nil
		})
	if err != nil {
		t.Errorf("app-config's entry is not saved in the full state (%v); the state holds %d entries", err, len(storedState(t, ns)))
	}
	waitFor(t, 10*time.Second, "no read entry in memory only", func() (bool, error) {
		return value(t, readGauge) == 0 && value(t, spareGauge) > 0, nil
	})
	if n := countEvents(t, ns, "reloader-state", "StateFull"); n != 1 {
		t.Errorf("%d StateFull Events, want 1: the state stayed full", n)
	}
	settle(t)
	r.stop(t)

	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	startController(t, ns, opts)
	waitEnv(t, ns, "api", "_RELOADER_-configmap-app-config", hash)
	wantReloads(t, ns, "api", before, 1)
}
