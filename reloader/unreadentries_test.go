package reloader_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/state"
)

// A config that nothing reads gets no state entry, not even when it changes; a workload that
// starts reading it gets its entry written as of then, and a change after reloads it once; the
// entry goes with its last reader (issue 52).
func TestAConfigNothingReadsGetsAnEntryOnlyOnceAWorkloadReadsIt(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	createConfigMap(t, ns, "marker", map[string]string{"v": "1"}) // a read config: the state is written
	createDeployment(t, ns, "other", 0, named("configmap", "marker"), nil)
	r := startController(t, ns, controllerOpts{})
	entry := state.Key("ConfigMap", "", "app-config")
	waitFor(t, 30*time.Second, "the read config's entry saved", func() (bool, error) {
		return storedState(t, ns)[state.Key("ConfigMap", "", "marker")] != "", nil
	})
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	settle(t)
	if got := storedState(t, ns)[entry]; got != "" || r.ctrl.Recorded(entry) != "" {
		t.Fatalf("app-config, which nothing reads, has an entry: stored %q, in memory %q", got, r.ctrl.Recorded(entry))
	}

	before := createDeployment(t, ns, "api", 0, named("configmap", "app-config"), nil).Generation
	waitFor(t, 30*time.Second, "app-config's entry saved once api reads it", func() (bool, error) {
		want := r.ctrl.Recorded(entry)
		return want != "" && storedState(t, ns)[entry] == want, nil
	})
	wantReloads(t, ns, "api", before, 0)
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "3"})
	waitEnv(t, ns, "api", "_RELOADER_-configmap-app-config", hash)
	wantReloads(t, ns, "api", before, 1)

	if err := cluster.Client().AppsV1().Deployments(ns).Delete(context.Background(), "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "app-config's entry gone with its last reader", func() (bool, error) {
		_, stored := storedState(t, ns)[entry]
		return !stored && r.ctrl.Recorded(entry) == "", nil
	})
}

// unreadWhileDown makes app-config, which nothing reads, runs a reloader over it and stops it,
// then, while none runs, creates api reading it, at least a second after app-config's creation.
func unreadWhileDown(t *testing.T, ns string) (opts controllerOpts, before int64) {
	t.Helper()
	createConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	opts = controllerOpts{grace: 5 * time.Second}
	r := startController(t, ns, opts)
	settle(t)
	if got := r.ctrl.Recorded(state.Key("ConfigMap", "", "app-config")); got != "" {
		t.Fatalf("app-config, which nothing reads, has an entry %q", got)
	}
	r.stop(t)
	time.Sleep(1100 * time.Millisecond) // created strictly before api, to the second
	return opts, createDeployment(t, ns, "api", 0, named("configmap", "app-config"), nil).Generation
}

// While no reloader runs, a workload is created reading a config nothing read, which changes
// after: the config has no entry, but its write is above the state's watermark and it was
// created before the workload, so the start reloads the workload once rather than lose the
// change (issue 52's acceptance line).
func TestAChangeWhileDownOfAConfigNothingReadReloadsItsNewReaderOnce(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	opts, before := unreadWhileDown(t, ns)
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	// reloader explain says it before the start: by the start's note of a workload the state
	// judges due (runs.Strips.Unsure), as for a change of a recorded config.
	c := configOf(t, explainNow(t, ns, "Deployment", "api", nil, nil), "ConfigMap", "app-config")
	if !c.Reload || c.Why != policy.StripStale.String() {
		t.Errorf("explain: reload %v, why %q; want a reload, %q", c.Reload, c.Why, policy.StripStale)
	}
	startController(t, ns, opts)
	waitEnv(t, ns, "api", "_RELOADER_-configmap-app-config", hash)
	wantReloads(t, ns, "api", before, 1)
}

// While no reloader runs, a config and its reader are created together (a Helm install), and
// nothing else happens: the start restarts nothing, though the config has no entry and its
// creation is above the watermark. The positive control is
// TestAChangeWhileDownOfAConfigNothingReadReloadsItsNewReaderOnce.
func TestAConfigCreatedWithItsReaderWhileDownRestartsNothing(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "marker", map[string]string{"v": "1"})
	createDeployment(t, ns, "other", 0, named("configmap", "marker"), nil)
	opts := controllerOpts{grace: 5 * time.Second}
	r := startController(t, ns, opts)
	settle(t)
	r.stop(t)
	createdTogetherRestartNothing(t, ns, opts)
}

// A foreign write to the state while no reloader runs raises the watermark above a change of a
// config nothing read: the start takes that config as first seen, and restarts nothing. A forged
// write makes the reloader do less, never more (the positive control, without the write:
// TestAChangeWhileDownOfAConfigNothingReadReloadsItsNewReaderOnce).
func TestAForeignWriteToTheStateWhileDownOnlyMakesTheStartDoLess(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	opts, before := unreadWhileDown(t, ns)
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	setStateEntry(t, ns, "someone-else", "x")
	r := startController(t, ns, opts)
	entry := state.Key("ConfigMap", "", "app-config")
	waitFor(t, 30*time.Second, "app-config's entry recorded", func() (bool, error) { return r.ctrl.Recorded(entry) != "", nil })
	wantReloads(t, ns, "api", before, 0)
}

// While no reloader runs, someone who may write the state writes it with a managedFields entry
// of theirs and a flushed-at, both a day later than the write; then a config and its reader are
// created together (a Helm install). Neither forged time counts: flushed-at does not verify under
// the hash key and managedFields are never read, so the state has no watermark, the config is
// first seen, and the start restarts nothing. The positive control
// is TestAChangeWhileDownOfAConfigNothingReadReloadsItsNewReaderOnce.
func TestAForgedLaterWriteTimeInTheStateWhileDownRestartsNothing(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	ctx := context.Background()
	createConfigMap(t, ns, "marker", map[string]string{"v": "1"})
	createDeployment(t, ns, "other", 0, named("configmap", "marker"), nil)
	opts := controllerOpts{grace: 5 * time.Second}
	r := startController(t, ns, opts)
	waitFor(t, 30*time.Second, "the read config's entry saved", func() (bool, error) {
		return storedState(t, ns)[state.Key("ConfigMap", "", "marker")] != "", nil
	})
	settle(t)
	r.stop(t)

	states := cluster.Client().CoreV1().ConfigMaps(ns)
	if _, err := states.Patch(ctx, "reloader-state", types.MergePatchType, []byte(`{"data":{"someone-else":"x"}}`),
		metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	cm, err := states.Get(ctx, "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A request may carry managedFields: an entry whose fields it leaves alone keeps its time.
	forged := metav1.NewTime(time.Now().Add(24 * time.Hour).Truncate(time.Second))
	for i := range cm.ManagedFields {
		if cm.ManagedFields[i].Manager == "someone-else" {
			cm.ManagedFields[i].Time = &forged
		}
	}
	stamp := cm.Data[state.FlushedAtKey]
	cm.Data[state.FlushedAtKey] = forged.UTC().Format(time.RFC3339Nano) + " " + stamp[strings.LastIndex(stamp, " ")+1:]
	cm, err = states.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "someone-else-too"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(cm.ManagedFields, func(m metav1.ManagedFieldsEntry) bool { return m.Time != nil && m.Time.Equal(&forged) }) {
		t.Fatalf("setup: the API server kept no managedFields time %v: %+v", forged, cm.ManagedFields)
	}

	createdTogetherRestartNothing(t, ns, opts)
}

// createdTogetherRestartNothing creates app-config and api, which reads it, in one second while
// no reloader runs (a Helm install), starts one with opts, and checks that api is not restarted.
func createdTogetherRestartNothing(t *testing.T, ns string, opts controllerOpts) {
	t.Helper()
	// Both in one second: the rule compares creations to the second.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
	createConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	d := createDeployment(t, ns, "api", 0, named("configmap", "app-config"), nil)
	cm, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "app-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !cm.CreationTimestamp.Equal(&d.CreationTimestamp) {
		t.Fatalf("setup: app-config created at %v, api at %v: not in one second", cm.CreationTimestamp, d.CreationTimestamp)
	}
	r := startController(t, ns, opts)
	entry := state.Key("ConfigMap", "", "app-config")
	waitFor(t, 30*time.Second, "app-config's entry recorded", func() (bool, error) { return r.ctrl.Recorded(entry) != "", nil })
	wantReloads(t, ns, "api", d.Generation, 0)
}

// A state ConfigMap no reloader wrote (deploy/namespace's manifest creates it empty) has no
// watermark: a first start over it restarts nothing, though a config was created a second
// before its reader (deploy TestRBACNamespaceManifest restarted all three readers at its first
// start when the two creations fell in different seconds). The positive control, over a state a
// reloader wrote: TestAChangeWhileDownOfAConfigNothingReadReloadsItsNewReaderOnce.
func TestAFirstStartOverAnEmptyStateTheManifestMadeRestartsNothing(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	if _, err := cluster.Client().CoreV1().ConfigMaps(ns).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "reloader-state"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	time.Sleep(1100 * time.Millisecond) // created strictly before api, to the second
	before := createDeployment(t, ns, "api", 0, named("configmap", "app-config"), nil).Generation
	r := startController(t, ns, controllerOpts{})
	entry := state.Key("ConfigMap", "", "app-config")
	waitFor(t, 30*time.Second, "app-config's entry recorded", func() (bool, error) { return r.ctrl.Recorded(entry) != "", nil })
	wantReloads(t, ns, "api", before, 0)
}

// While no reloader runs, a read config's entry is corrupted and the config then changes: the
// write is above the watermark, but the config had an entry, so a reloader saw it. The entry's
// content is lost and the start takes the config as first seen for the workload without a
// marker: a foreign value makes the reloader do less, never more (soak seed
// 1796415325817531134@10, two workloads reading one key of a config restarted for a change of
// another). The workload whose marker says the old content restarts: the positive control.
func TestACorruptEntryOfAConfigChangedWhileDownRestartsOnlyTheWorkloadWithAMarker(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	createDeployment(t, ns, "marked", 0, named("configmap", "app-config"), nil)
	opts := controllerOpts{grace: 5 * time.Second}
	r := startController(t, ns, opts)
	settle(t)
	waitEnv(t, ns, "marked", "_RELOADER_-configmap-app-config", updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"}))
	unmarked := createDeployment(t, ns, "unmarked", 0, named("configmap", "app-config"), nil)
	settle(t)
	r.stop(t)
	setStateEntry(t, ns, state.Key("ConfigMap", "", "app-config"), "garbage")
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "3"})
	// reloader explain, before the start, says what the start does.
	if c := configOf(t, explainNow(t, ns, "Deployment", "unmarked", nil, nil), "ConfigMap", "app-config"); c.Reload {
		t.Errorf("explain: unmarked reloads (why %q); want no reload", c.Why)
	}
	if c := configOf(t, explainNow(t, ns, "Deployment", "marked", nil, nil), "ConfigMap", "app-config"); !c.Reload {
		t.Errorf("explain: marked does not reload (why %q)", c.Why)
	}

	startController(t, ns, opts)
	waitEnv(t, ns, "marked", "_RELOADER_-configmap-app-config", hash)
	wantReloads(t, ns, "unmarked", unmarked.Generation, 0)
}
