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

// Configs no workload reads get no entry, so they never fill the state: more of them than the
// state has room for (one entry per shard), and a config that a workload reads has its entry
// saved, and a change made to it while the reloader is down is caught up at the next start. The
// state is never full: no StateFull Event, nothing in memory only.
func TestUnreadConfigsLeaveRoomForAReadConfigsEntryAndItsChangeWhileDownIsCaughtUp(t *testing.T) {
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
	settle(t)
	for i := range configs {
		if e := r.ctrl.Recorded(state.Key("ConfigMap", "", unread(i))); e != "" {
			t.Fatalf("%s, which nothing reads, has an entry %q", unread(i), e)
		}
	}
	spareGauge := r.metrics.StateMemoryOnly.WithLabelValues("true")
	readGauge := r.metrics.StateMemoryOnly.WithLabelValues("false")

	createConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	before := createDeployment(t, ns, "api", 0, named("configmap", "app-config"), nil).Generation
	entry := state.Key("ConfigMap", "", "app-config")
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 15*time.Second, true,
		func(context.Context) (bool, error) {
			want := r.ctrl.Recorded(entry)
			return want != "" && storedState(t, ns)[entry] == want, nil
		})
	if err != nil {
		t.Errorf("app-config's entry is not saved (%v); the state holds %d entries", err, len(storedState(t, ns)))
	}
	settle(t)
	if n, read, spare := countEvents(t, ns, "reloader-state", "StateFull"), value(t, readGauge), value(t, spareGauge); n != 0 || read != 0 || spare != 0 {
		t.Errorf("%d StateFull Events, %v read and %v spare entries in memory only; want none", n, read, spare)
	}
	r.stop(t)

	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	startController(t, ns, opts)
	waitEnv(t, ns, "api", "_RELOADER_-configmap-app-config", hash)
	wantReloads(t, ns, "api", before, 1)
}
