package reloader_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/reloader/reloader/internal/dev/clocktest"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// windowFrom returns a window of the given length that opens `in` from now, in UTC, to the
// second: the grammar's HH:MM:SS form exists so that tests need not wait for a minute to turn.
func windowFrom(in, length time.Duration) (spec string, opens time.Time) {
	opens = time.Now().UTC().Add(in).Truncate(time.Second)
	return fmt.Sprintf("%s-%s UTC", opens.Format("15:04:05"), opens.Add(length).Format("15:04:05")), opens
}

func withAnnotations(base map[string]string, more map[string]string) map[string]string {
	out := maps.Clone(base)
	maps.Copy(out, more)
	return out
}

const pendingWeb = "pending.Deployment_web"

func TestReloadOutsideTheWindowWaitsForItAndHappensOnceAcrossARestart(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	spec, opens := windowFrom(12*time.Second, time.Hour)
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"), map[string]string{policy.WindowAnnotation: spec}), nil)
	// Positive control: a workload without a window reloads at once.
	createDeployment(t, ns, "free", 0, named("configmap", "app-config"), nil)
	first := startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)
	changes := templateChanges(t, ns, "web")

	hash1 := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitEnv(t, ns, "free", cmVar, hash1)
	waitFor(t, 10*time.Second, "pending entry in the state", func() (bool, error) {
		return strings.HasPrefix(stateEntry(t, ns, pendingWeb), "pending@"), nil
	})
	if got := value(t, first.metrics.Deferred.WithLabelValues(policy.ReasonWindow)); got != 1 {
		t.Errorf("reloader_reloads_deferred{reason=window} = %v, want 1", got)
	}
	waitFor(t, 10*time.Second, "ReloadDeferred event", func() (bool, error) {
		return countEvents(t, ns, "web", "ReloadDeferred") == 1, nil
	})
	first.stop(t) // a restart while the reload is pending

	hash2 := updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	second := startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	if n := changes(); n != 0 || time.Now().After(opens) {
		t.Fatalf("reloaded %d times before the window opened at %s", n, opens)
	}
	waitEnv(t, ns, "web", cmVar, hash2)
	if now := time.Now(); now.Before(opens) {
		t.Fatalf("reloaded at %s, before the window opened at %s", now, opens)
	}
	if n := changes(); n != 1 {
		t.Fatalf("template changed %d times, want 1", n)
	}
	if n := countEvents(t, ns, "web", "ReloadDeferred"); n != 1 {
		t.Errorf("%d ReloadDeferred events, want 1 (a restart does not repeat it): %v", n, eventMessages(t, ns, "web"))
	}
	waitFor(t, 5*time.Second, "pending entry removed", func() (bool, error) { return stateEntry(t, ns, pendingWeb) == "", nil })
	waitRecorded(t, second, "v1.ConfigMap_app-config", hash2)
}

// A reload held for its window is kept in the state across a restart; once its workload is
// deleted while no reloader runs, the next start removes the entry (nothing else would). The
// control is a held workload that still exists: its entry stays, and it is not held anew.
func TestAPendingEntryOfAWorkloadDeletedWhileDownIsRemovedAtTheNextStart(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	spec, _ := windowFrom(time.Hour, time.Hour)
	held := withAnnotations(named("configmap", "app-config"), map[string]string{policy.WindowAnnotation: spec})
	createDeployment(t, ns, "web", 0, held, nil)
	createDeployment(t, ns, "api", 0, held, nil)
	first := startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	const pendingAPI = "pending.Deployment_api"
	waitFor(t, 10*time.Second, "both reloads held", func() (bool, error) {
		return stateEntry(t, ns, pendingWeb) != "" && stateEntry(t, ns, pendingAPI) != "", nil
	})
	first.stop(t)

	deleteDeployment(t, ns, "web")
	second := startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	waitFor(t, 10*time.Second, "web's pending entry removed", func() (bool, error) { return stateEntry(t, ns, pendingWeb) == "", nil })
	second.settle()
	if stateEntry(t, ns, pendingAPI) == "" {
		t.Error("api's pending entry was removed too; want it kept: api still exists and its window has not opened")
	}
	if n := countEvents(t, ns, "api", "ReloadDeferred"); n != 1 {
		t.Errorf("%d ReloadDeferred events for api, want 1: its held reload was forgotten at the start and held again", n)
	}
}

func TestInvalidWindowHoldsTheReloadWithOneWarningUntilFixed(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"), map[string]string{policy.WindowAnnotation: "Someday 02:00-04:00"}), nil)
	createDeployment(t, ns, "free", 0, named("configmap", "app-config"), nil)
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)
	changes := templateChanges(t, ns, "web")
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	waitEnv(t, ns, "free", cmVar, hash) // the positive control
	if n := changes(); n != 0 {
		t.Fatalf("reloaded %d times despite a window that does not parse", n)
	}
	if n := countEvents(t, ns, "web", "ReloadScheduleInvalid"); n != 1 {
		t.Fatalf("%d ReloadScheduleInvalid warnings, want 1: %v", n, eventMessages(t, ns, "web"))
	}
	patchAnnotation(t, ns, "web", policy.WindowAnnotation, "00:00-24:00")
	waitEnv(t, ns, "web", cmVar, hash)
	if n := changes(); n != 1 {
		t.Fatalf("template changed %d times once fixed, want 1", n)
	}
}

// patchAnnotation sets (or, with value "", removes) one metadata annotation of Deployment name.
func patchAnnotation(t *testing.T, ns, name, key, value string) {
	t.Helper()
	v := fmt.Sprintf("%q", value)
	if value == "" {
		v = "null"
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, key, v)
	if _, err := cluster.Client().AppsV1().Deployments(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// flap changes the ConfigMap every interval for the duration and returns its last hash.
func flap(t *testing.T, ns, name string, every, total time.Duration) string {
	t.Helper()
	var hash string
	for i, deadline := 1, time.Now().Add(total); time.Now().Before(deadline); i++ {
		hash = updateConfigMap(t, ns, name, map[string]string{"v": fmt.Sprint(i)})
		time.Sleep(every)
	}
	return hash
}

func TestFlappingConfigReloadsAtMostOncePerMinimumIntervalAndEndsOnItsLastContent(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"), map[string]string{policy.MinIntervalAnnotation: "5s"}), nil)
	createDeployment(t, ns, "free", 0, named("configmap", "app-config"), nil)
	// A 500 ms coalescing period (capped at 2.5 s), as a deployment would have one: the first
	// reload comes at the cap, so the fourth is due well after the flap ends.
	startController(t, ns, controllerOpts{period: 500 * time.Millisecond})
	settle(t)
	changes, freeBefore := templateChanges(t, ns, "web"), getDeployment(t, ns, "free").Generation
	last := flap(t, ns, "app-config", 200*time.Millisecond, 15*time.Second)
	waitEnv(t, ns, "web", cmVar, last)
	got := changes()
	if got < 2 || got > 4 {
		t.Fatalf("a 15 s flap reloaded the workload %d times; want 2 to 4 with a 5 s minimum interval", got)
	}
	// The positive control: without an interval the coalescing cap alone lets one through every 2.5 s.
	if free := getDeployment(t, ns, "free").Generation - freeBefore; free <= int64(got) {
		t.Fatalf("the control reloaded only %d times: the flap did not flap", free)
	}
	t.Logf("reloads: %d with a 5 s interval, %d without", got, getDeployment(t, ns, "free").Generation-freeBefore)
}

func TestMinimumIntervalHoldsAcrossARestart(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	interval := func(o *reloader.Options) { o.Gate.MinInterval = 8 * time.Second } // the flag
	first := startController(t, ns, controllerOpts{tweak: interval})
	settle(t)
	changes := templateChanges(t, ns, "web")
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitEnv(t, ns, "web", cmVar, hash)
	reloadedAt := time.Now()
	if getDeployment(t, ns, "web").Annotations[policy.LastReloadAnnotation] == "" {
		t.Fatal("no last-reload annotation written")
	}
	first.stop(t)

	hash = updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	startController(t, ns, controllerOpts{tweak: interval})
	waitEnv(t, ns, "web", cmVar, hash)
	if gap := time.Since(reloadedAt); gap < 7*time.Second { // the annotation is written just before reloadedAt
		t.Fatalf("second reload %s after the first, want at least the 8 s interval", gap)
	}
	if n := changes(); n != 2 {
		t.Fatalf("template changed %d times, want 2", n)
	}
}

func TestInvalidJSONKeyIsNotRolledOutAndTheNextValidChangeIs(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "app-config", Annotations: map[string]string{policy.ValidateAnnotation: "config.json=json,app.yaml=yaml"}},
		Data:       map[string]string{"config.json": `{"level":"info"}`, "app.yaml": "a: 1\n"},
	}
	if _, err := cluster.Client().CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	r := startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)
	good := stateEntry(t, ns, "v1.ConfigMap_app-config")
	changes := templateChanges(t, ns, "web")

	const leaked = "TOPSECRETVALUE"
	updateConfigMap(t, ns, "app-config", map[string]string{"config.json": `{"level": ` + leaked + `}`, "app.yaml": "a: 1\n"})
	waitFor(t, 10*time.Second, "InvalidConfig warning", func() (bool, error) {
		return countEvents(t, ns, "app-config", "InvalidConfig") == 1, nil
	})
	settle(t)
	msgs := strings.Join(eventMessages(t, ns, "app-config"), "\n")
	if !strings.Contains(msgs, `key "config.json" is not valid JSON`) || strings.Contains(msgs, leaked) || strings.Contains(r.log.String(), leaked) {
		t.Fatalf("the warning must name the key and not the value: %s", msgs)
	}
	if n := changes(); n != 0 {
		t.Fatalf("invalid content rolled out (%d template changes)", n)
	}
	if got := stateEntry(t, ns, "v1.ConfigMap_app-config"); got != good {
		t.Fatalf("state moved to %s, want the last good %s", got, good)
	}
	if got := value(t, r.metrics.InvalidChanges.WithLabelValues("ConfigMap")); got != 1 {
		t.Errorf("reloader_invalid_config_changes_total = %v, want 1", got)
	}

	hash := updateConfigMap(t, ns, "app-config", map[string]string{"config.json": `{"level":"debug"}`, "app.yaml": "a: 2\n"})
	waitEnv(t, ns, "web", cmVar, hash)
	if n := changes(); n != 1 {
		t.Fatalf("template changed %d times, want 1", n)
	}
}

// On a kind that cannot pause its rollouts, the pause period holds reloads and rolls out once at
// its end, also across a restart of the reloader (its start is on the workload).
func TestPausePeriodOnAStatefulSetBatchesChangesIntoOneRolloutAcrossARestart(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	pause := map[string]string{"deployment.reloader.stakater.com/pause-period": "6s"}
	createStatefulSetNamed(t, ns, "db", withAnnotations(named("configmap", "app-config"), pause))
	first := startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)
	dbBefore := getStatefulSet(t, ns, "db").Generation

	updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	start := time.Now()
	waitFor(t, 5*time.Second, "paused-at written", func() (bool, error) {
		return getStatefulSet(t, ns, "db").Annotations["deployment.reloader.stakater.com/paused-at"] != "", nil
	})
	first.stop(t) // the pause survives a restart: its start is on the workload
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	waitFor(t, 15*time.Second, "StatefulSet reloaded", func() (bool, error) {
		v, _ := envOf(getStatefulSet(t, ns, "db").Spec.Template, cmVar)
		return v == hash, nil
	})
	if gap := time.Since(start); gap < 5*time.Second {
		t.Fatalf("rolled out %s after the change, inside the 6 s pause", gap)
	}
	s := getStatefulSet(t, ns, "db")
	if s.Annotations["deployment.reloader.stakater.com/paused-at"] != "" {
		t.Fatalf("paused-at left behind: %v", s.Annotations)
	}
	if got := s.Generation - dbBefore; got != 1 {
		t.Fatalf("StatefulSet template changed %d times, want 1", got)
	}
}

func createStatefulSetNamed(t *testing.T, ns, name string, annotations map[string]string) {
	t.Helper()
	replicas := int32(0)
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &replicas, ServiceName: name,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: podTemplate(name),
		},
	}
	if _, err := cluster.Client().AppsV1().StatefulSets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func getStatefulSet(t *testing.T, ns, name string) *appsv1.StatefulSet {
	t.Helper()
	s, err := cluster.Client().AppsV1().StatefulSets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func envOf(tmpl corev1.PodTemplateSpec, name string) (string, bool) {
	for _, c := range tmpl.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value, true
			}
		}
	}
	return "", false
}

// value reads a gauge or counter.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Gauge != nil {
		return d.Gauge.GetValue()
	}
	return d.Counter.GetValue()
}

// templateChanges counts, from now on, the updates of Deployment name that change its pod
// template: a Deployment's generation also moves when only its annotations change, and the gate
// writes annotations.
func templateChanges(t *testing.T, ns, name string) (count func() int) {
	t.Helper()
	d := getDeployment(t, ns, name)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := cluster.Client().AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + name, ResourceVersion: d.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	changes := make(chan struct{}, 1000)
	go func() {
		defer w.Stop()
		last := d.Spec.Template
		for ev := range w.ResultChan() {
			if ev.Type != watch.Modified {
				continue
			}
			next := ev.Object.(*appsv1.Deployment).Spec.Template
			if !equality.Semantic.DeepEqual(last, next) {
				changes <- struct{}{}
			}
			last = next
		}
	}()
	return func() int {
		settle(t)
		time.Sleep(300 * time.Millisecond) // the watch event of the last change is on its way
		return len(changes)
	}
}

// stakater pauses a Deployment with spec.paused and resumes it from a timer in its own process;
// one it paused just before the switch is resumed when its pause ends.
func TestDeploymentPausedByStakaterIsResumedWhenItsPauseEnds(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	// 12 s of the pause left: a start and a settle under load took more than 5.
	pausedAt := time.Now().UTC().Add(-2 * time.Second).Format(time.RFC3339)
	stakater := map[string]string{"deployment.reloader.stakater.com/pause-period": "14s", "deployment.reloader.stakater.com/paused-at": pausedAt}
	createDeploymentFrom(t, ns, "web", func(d *appsv1.Deployment) {
		d.Annotations, d.Spec.Paused = withAnnotations(named("configmap", "app-config"), stakater), true
	})
	// The control: paused by someone else (no paused-at) stays paused.
	createDeploymentFrom(t, ns, "manual", func(d *appsv1.Deployment) {
		d.Annotations, d.Spec.Paused = named("configmap", "app-config"), true
	})
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)
	if !getDeployment(t, ns, "web").Spec.Paused {
		t.Fatal("resumed before the pause ended")
	}
	waitFor(t, 25*time.Second, "web resumed", func() (bool, error) {
		d := getDeployment(t, ns, "web")
		return !d.Spec.Paused && d.Annotations["deployment.reloader.stakater.com/paused-at"] == "", nil
	})
	if !getDeployment(t, ns, "manual").Spec.Paused {
		t.Fatal("a Deployment paused by someone else was resumed")
	}
}

func TestRevertWhileHeldDropsThePendingReload(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	spec, _ := windowFrom(time.Hour, time.Hour)
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"), map[string]string{policy.WindowAnnotation: spec}), nil)
	createDeployment(t, ns, "free", 0, named("configmap", "app-config"), nil)
	r := startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)
	changes := templateChanges(t, ns, "web")
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitEnv(t, ns, "free", cmVar, hash) // the control: the change is seen
	waitFor(t, 10*time.Second, "pending entry", func() (bool, error) { return stateEntry(t, ns, pendingWeb) != "", nil })
	hash = updateConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	waitEnv(t, ns, "free", cmVar, hash) // and so is the revert
	waitFor(t, 10*time.Second, "pending entry removed", func() (bool, error) { return stateEntry(t, ns, pendingWeb) == "", nil })
	if got := value(t, r.metrics.Deferred.WithLabelValues(policy.ReasonWindow)); got != 0 {
		t.Errorf("reloader_reloads_deferred{reason=window} = %v after the revert, want 0", got)
	}
	if n := changes(); n != 0 {
		t.Fatalf("template changed %d times, want 0", n)
	}
}

// The gate runs on the injected clock: a week-scale window is tested without waiting for it.
func TestHeldReloadRunsWhenTheInjectedClockReachesTheWindow(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"),
		map[string]string{policy.WindowAnnotation: "Sat 02:00-04:00 Europe/Berlin"}), nil)
	friday := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	clock := clocktest.New(friday)
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.Clock = clock }})
	settle(t)
	changes := templateChanges(t, ns, "web")

	updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	waitFor(t, 10*time.Second, "the ReloadDeferred event", func() (bool, error) {
		return countEvents(t, ns, "web", "ReloadDeferred") > 0, nil
	})
	if msgs := strings.Join(eventMessages(t, ns, "web"), "\n"); !strings.Contains(msgs, "deferred until 2026-11-21T01:00:00Z") {
		t.Fatalf("the event does not name the window's opening (Sat 02:00 in Berlin is 01:00 UTC):\n%s", msgs)
	}
	waitFor(t, 5*time.Second, "the pending entry, at the injected time", func() (bool, error) {
		return strings.HasPrefix(stateEntry(t, ns, pendingWeb), fmt.Sprintf("pending@%d#", friday.Unix())), nil
	})
	reloadsOnceWhenTheWindowOpens(t, clock, ns, hash, changes)
}

// reloadsOnceWhenTheWindowOpens moves the clock from Friday 12:00 UTC to one minute before the
// window "Sat 02:00-04:00 Europe/Berlin" opens, where Deployment web must not have reloaded, then
// to its opening, where it must reload once, to hash.
func reloadsOnceWhenTheWindowOpens(t *testing.T, clock *clocktest.Clock, ns, hash string, changes func() int) {
	t.Helper()
	clock.Advance(12*time.Hour + 59*time.Minute) // Saturday 00:59 UTC: one minute early
	if n := changes(); n != 0 {
		t.Fatalf("reloaded %d times before the window opened", n)
	}
	clock.Advance(time.Minute)
	waitEnv(t, ns, "web", cmVar, hash)
	if n := changes(); n != 1 {
		t.Fatalf("template changed %d times, want 1", n)
	}
}

// The kinds that cannot pause their rollouts hold reloads for the pause period, then roll out
// once (a Deployment is paused instead: TestAPausePeriodPausesADeploymentAndItsEndRollsOutEveryChangeOnce).
func TestPausePeriodHoldsEveryKindButDeploymentsThenRollsOutOnce(t *testing.T) {
	t.Parallel()
	ensureCRDs(t)
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	ann := withAnnotations(named("configmap", "app-config"), map[string]string{"deployment.reloader.stakater.com/pause-period": "5s"})
	createStatefulSetNamed(t, ns, "sts", ann)
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds", Annotations: ann},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ds"}}, Template: podTemplate("ds")}}
	if _, err := cluster.Client().AppsV1().DaemonSets(ns).Create(context.Background(), ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createCustom(t, rolloutsGVR, "Rollout", ns, "rollout", ann)
	createCustom(t, deploymentConfigsGVR, "DeploymentConfig", ns, "dc", ann)
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond, tweak: func(o *reloader.Options) { o.ArgoRollouts, o.OpenShift = true, true }})
	settle(t)
	kinds := []struct {
		gvr  schema.GroupVersionResource
		name string
	}{
		{appsv1.SchemeGroupVersion.WithResource("statefulsets"), "sts"},
		{appsv1.SchemeGroupVersion.WithResource("daemonsets"), "ds"},
		{rolloutsGVR, "rollout"},
		{deploymentConfigsGVR, "dc"},
	}
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	changed := time.Now()
	for _, w := range kinds {
		waitFor(t, 4*time.Second, w.name+" paused", func() (bool, error) {
			v, u := templateEnv(t, w.gvr, ns, w.name, cmVar)
			if v != "" {
				return false, fmt.Errorf("%s reloaded inside its pause", w.name)
			}
			return u.GetAnnotations()["deployment.reloader.stakater.com/paused-at"] != "", nil
		})
	}
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	for _, w := range kinds {
		waitFor(t, 15*time.Second, w.name+" reloaded once the pause ended", func() (bool, error) {
			v, u := templateEnv(t, w.gvr, ns, w.name, cmVar)
			return v == hash && u.GetAnnotations()["deployment.reloader.stakater.com/paused-at"] == "", nil
		})
	}
	if gap := time.Since(changed); gap < 4*time.Second {
		t.Fatalf("every kind reloaded within %s of the change, inside the 5 s pause", gap)
	}
}

// An empty reloader/window is a malformed window, not "no window": under --reload-window it holds
// the reload with one Warning; removing it brings back the flag's window, in which the reload
// happens once.
func TestEmptyWindowAnnotationHoldsTheReloadUntilRemovedThenTheFlagsWindowApplies(t *testing.T) {
	t.Parallel()
	emptyWindowHoldsUntilRemoved(t, "annotation reloader/window is empty",
		func(d *appsv1.Deployment) { d.Annotations[policy.WindowAnnotation] = "" },
		func(d *appsv1.Deployment) { delete(d.Annotations, policy.WindowAnnotation) })
}

// On the pod template, the removal is a template change of its own: it restarts the pods, which
// read the content the held reload was for, so nothing is left to reload when the window opens.
func TestEmptyWindowOnThePodTemplateHoldsTheReloadUntilItsRemovalRestartsThePods(t *testing.T) {
	t.Parallel()
	emptyWindowHoldsUntilRemoved(t, "annotation reloader/window on the pod template is empty",
		func(d *appsv1.Deployment) {
			d.Spec.Template.Annotations = map[string]string{policy.WindowAnnotation: ""}
		},
		func(d *appsv1.Deployment) { delete(d.Spec.Template.Annotations, policy.WindowAnnotation) })
}

// emptyWindowHoldsUntilRemoved runs a Deployment that set (an empty window) adds to, under a
// flag window on Saturdays and an injected clock on Friday, then fixes it with unset.
func emptyWindowHoldsUntilRemoved(t *testing.T, problem string, set, unset func(*appsv1.Deployment)) {
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeploymentFrom(t, ns, "web", func(d *appsv1.Deployment) {
		d.Annotations = named("configmap", "app-config")
		set(d)
	})
	// The control: a window open all day, which the annotation overrides the flag's with.
	createDeployment(t, ns, "open", 0, withAnnotations(named("configmap", "app-config"), map[string]string{policy.WindowAnnotation: "00:00-24:00"}), nil)
	friday := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	clock := clocktest.New(friday)
	r := startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) {
		o.Clock, o.Gate.Window = clock, "Sat 02:00-04:00 Europe/Berlin"
	}})
	settle(t)
	changes := templateChanges(t, ns, "web")

	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitEnv(t, ns, "open", cmVar, hash)
	if n := changes(); n != 0 {
		t.Fatalf("reloaded %d times on a Friday: an empty window lifted --reload-window", n)
	}
	hash = updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	waitEnv(t, ns, "open", cmVar, hash)
	waitFor(t, 10*time.Second, "the ReloadScheduleInvalid warning", func() (bool, error) {
		return countEvents(t, ns, "web", "ReloadScheduleInvalid") > 0, nil
	})
	if n := changes(); n != 0 {
		t.Fatalf("reloaded %d times while the window is empty", n)
	}
	if n := countEvents(t, ns, "web", "ReloadScheduleInvalid"); n != 1 {
		t.Fatalf("%d ReloadScheduleInvalid warnings after two changes, want 1: %v", n, eventMessages(t, ns, "web"))
	}
	if msgs := strings.Join(eventMessages(t, ns, "web"), "\n"); !strings.Contains(msgs, problem) {
		t.Fatalf("the warning does not say %q:\n%s", problem, msgs)
	}

	before := getDeployment(t, ns, "web").Spec.Template
	if fixed := updateDeployment(t, ns, "web", unset); !equality.Semantic.DeepEqual(before, fixed.Spec.Template) {
		// The fix restarted the pods: they read hash, and nothing is left to reload.
		waitFor(t, 10*time.Second, "the held reload dropped, web noted as running the content", func() (bool, error) {
			// By a strip, or by the config's entry once it caught up (strips.caughtUp).
			strip := stateEntry(t, ns, "strip.ConfigMap.Deployment_web_app-config")
			return (strip == hash || strip == "" && stateEntry(t, ns, "v1.ConfigMap_app-config") == hash) &&
				value(t, r.metrics.Deferred.WithLabelValues(policy.ReasonWindow)) == 0 &&
				value(t, r.metrics.Deferred.WithLabelValues(policy.ReasonInvalid)) == 0, nil
		})
		changes = templateChanges(t, ns, "web")
		clock.Advance(13 * time.Hour)
		settle(t)
		if n := changes(); n != 0 {
			t.Fatalf("web, restarted by the fix with the content, reloaded %d times when the window opened", n)
		}
		return
	}
	waitFor(t, 10*time.Second, "the reload held for the flag's window", func() (bool, error) {
		return value(t, r.metrics.Deferred.WithLabelValues(policy.ReasonWindow)) == 1 &&
			value(t, r.metrics.Deferred.WithLabelValues(policy.ReasonInvalid)) == 0, nil
	})
	// Counted from after the fix, which may itself change the template.
	changes = templateChanges(t, ns, "web")
	reloadsOnceWhenTheWindowOpens(t, clock, ns, hash, changes)
}

// A StatefulSet's generation does not move with its annotations, so the removal of an empty one
// must itself wake the held reload: an empty minimum interval or pause period holds it with one
// Warning, and removing the annotation rolls it out once.
func TestEmptyIntervalOrPauseOnAStatefulSetHoldsTheReloadUntilRemovedThenReloadsOnce(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	keys := map[string]string{"interval": policy.MinIntervalAnnotation, "pause": "deployment.reloader.stakater.com/pause-period"}
	for name, k := range keys {
		createStatefulSetNamed(t, ns, name, withAnnotations(named("configmap", "app-config"), map[string]string{k: ""}))
	}
	createStatefulSetNamed(t, ns, "control", named("configmap", "app-config"))
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)
	before := map[string]int64{}
	for name := range keys {
		before[name] = getStatefulSet(t, ns, name).Generation
	}
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitFor(t, 30*time.Second, "the control reloaded", func() (bool, error) {
		v, _ := envOf(getStatefulSet(t, ns, "control").Spec.Template, cmVar)
		return v == hash, nil
	})
	for name, k := range keys {
		waitFor(t, 10*time.Second, name+": the ReloadScheduleInvalid warning", func() (bool, error) {
			return countEvents(t, ns, name, "ReloadScheduleInvalid") > 0, nil
		})
		settle(t)
		if got := getStatefulSet(t, ns, name).Generation - before[name]; got != 0 {
			t.Fatalf("%s: reloaded %d times with an empty %s", name, got, k)
		}
		if msgs := strings.Join(eventMessages(t, ns, name), "\n"); countEvents(t, ns, name, "ReloadScheduleInvalid") != 1 || !strings.Contains(msgs, k+" is empty") {
			t.Fatalf("%s: want one warning saying %s is empty:\n%s", name, k, msgs)
		}
	}
	for name, k := range keys {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, k)
		if _, err := cluster.Client().AppsV1().StatefulSets(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name := range keys {
		waitFor(t, 30*time.Second, name+" reloaded once fixed", func() (bool, error) {
			v, _ := envOf(getStatefulSet(t, ns, name).Spec.Template, cmVar)
			return v == hash, nil
		})
		settle(t)
		if got := getStatefulSet(t, ns, name).Generation - before[name]; got != 1 {
			t.Fatalf("%s: template changed %d times, want 1", name, got)
		}
	}
}

// A change waits out a Deployment's pause (patched in, the Deployment paused); meanwhile another
// actor changes the image, which restarts nothing while it is paused, and the config returns to
// the content before. The resume rolls out the template as it is then: its pods read the
// returned content, which its marker says, and nothing restarts them again.
func TestAnotherActorsChangeDuringADeploymentsPauseRollsOutWithItsResume(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	const pausedAt = "deployment.reloader.stakater.com/paused-at"
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	pause := map[string]string{"deployment.reloader.stakater.com/pause-period": "4s"}
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"), pause), nil)
	startController(t, ns, controllerOpts{})
	settle(t)
	first := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitEnv(t, ns, "web", cmVar, first)
	waitFor(t, 10*time.Second, "the first pause over", func() (bool, error) {
		d := getDeployment(t, ns, "web")
		return d.Annotations[pausedAt] == "" && !d.Spec.Paused, nil
	})

	second := updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	waitEnv(t, ns, "web", cmVar, second) // patched in, paused
	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "web:2" })
	settle(t)
	changes := templateChanges(t, ns, "web")
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitFor(t, 15*time.Second, "web resumed", func() (bool, error) {
		d := getDeployment(t, ns, "web")
		return d.Annotations[pausedAt] == "" && !d.Spec.Paused, nil
	})
	settle(t)
	d := getDeployment(t, ns, "web")
	if v, _ := env(d, "app", cmVar); v != first {
		t.Fatalf("marker %q, want the content returned to", v)
	}
	if at := d.Spec.Template.Annotations[policy.RestartedAt]; at != "" {
		t.Fatalf("restarted again (restarted-at %s): the resume's pods read the returned content", at)
	}
	if n := changes(); n != 1 {
		t.Fatalf("template changed %d times after the return, want 1 (the return patched in)", n)
	}
}

// Soak seed 1795727042036173470@4: web, without a marker and held by a window while the state
// is behind (free took the change), is restarted by another actor and reads the change; the
// config then returns to the content the state holds. Its pods run the content in between, and
// the window's opening must reload them once, whether the restart was seen, made while the
// reloader was down (after it saw the change, or with it), or not made at all (the control:
// nothing then).
func TestAHeldWorkloadRestartedByAnotherActorIsReloadedForTheRevert(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		restart bool
		// downFrom: the reloader stops before the change ("change", starting again before the
		// revert) or after it ("image", starting again after the revert); "" keeps it running.
		downFrom string
	}{
		{"seen", true, ""},
		{"made while the reloader was down, with the revert", true, "image"},
		{"made while the reloader was down, with the change", true, "change"},
		{"not made", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := cluster.NewNamespace(t)
			createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
			createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"),
				map[string]string{policy.WindowAnnotation: "Sat 02:00-04:00 Europe/Berlin"}), nil)
			createDeployment(t, ns, "free", 0, named("configmap", "app-config"), nil)
			clock := clocktest.New(time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC))
			opts := controllerOpts{tweak: func(o *reloader.Options) { o.Clock = clock }}
			r := startController(t, ns, opts)
			settle(t)
			if tc.downFrom == "change" {
				r.stop(t)
			}
			hash1 := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
			if tc.downFrom != "change" {
				waitEnv(t, ns, "free", cmVar, hash1) // the control: the change is seen
				waitFor(t, 10*time.Second, "web's reload held", func() (bool, error) { return stateEntry(t, ns, pendingWeb) != "", nil })
			}
			if tc.downFrom == "image" {
				r.stop(t)
			}
			if tc.restart {
				updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "other" })
			}
			if tc.downFrom == "change" {
				r = startController(t, ns, opts)
				waitEnv(t, ns, "free", cmVar, hash1)
			}
			settle(t)
			changes := templateChanges(t, ns, "web")
			hash0 := updateConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
			if tc.downFrom == "image" {
				startController(t, ns, opts)
			}
			waitEnv(t, ns, "free", cmVar, hash0) // the revert is seen
			settle(t)
			if !tc.restart {
				waitFor(t, 10*time.Second, "the pending entry removed", func() (bool, error) { return stateEntry(t, ns, pendingWeb) == "", nil })
				clock.Advance(13 * time.Hour)
				settle(t)
				if n := changes(); n != 0 {
					t.Fatalf("web, never restarted, reloaded %d times for a change reverted while held", n)
				}
				return
			}
			reloadsOnceWhenTheWindowOpens(t, clock, ns, hash0, changes)
		})
	}
}

// A reload schedule or a safe-reload annotation that does not parse is said when it is applied,
// with no config change: a Warning on the workload, the one a held reload would give, and not a
// second one when a change comes.
func TestAMalformedScheduleOrSafeReloadAnnotationIsReportedWhenApplied(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	createDeployment(t, ns, "free", 0, named("configmap", "app-config"), nil)
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)
	patchAnnotation(t, ns, "web", policy.WindowAnnotation, "Someday 02:00-04:00")
	patchAnnotation(t, ns, "web", policy.TimeoutAnnotation, "soon")
	for _, reason := range []string{"ReloadScheduleInvalid", "InvalidSafeReloadAnnotation"} {
		waitFor(t, 10*time.Second, "the "+reason+" warning, with no change", func() (bool, error) {
			return countEvents(t, ns, "web", reason) == 1, nil
		})
	}
	changes := templateChanges(t, ns, "web")
	waitEnv(t, ns, "free", cmVar, updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"}))
	settle(t)
	if n := changes(); n != 0 {
		t.Fatalf("reloaded %d times despite a window that does not parse", n)
	}
	if n := countEvents(t, ns, "web", "ReloadScheduleInvalid"); n != 1 {
		t.Fatalf("%d ReloadScheduleInvalid warnings after the change, want 1: %v", n, eventMessages(t, ns, "web"))
	}
}

// stakater's pause period on a Deployment: the first change pauses it (spec.paused and
// paused-at) and is patched into its template at once; a later change joins the same pause;
// when the period ends the Deployment is resumed, and that is its one rollout. The pause
// survives a restart of the reloader (its start is on the Deployment). One paused by someone
// else is reloaded into and left paused.
func TestAPausePeriodPausesADeploymentAndItsEndRollsOutEveryChangeOnce(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	const pausedAt = "deployment.reloader.stakater.com/paused-at"
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	pause := withAnnotations(named("configmap", "app-config"), map[string]string{"deployment.reloader.stakater.com/pause-period": "6s"})
	createDeployment(t, ns, "web", 0, pause, nil)
	createDeploymentFrom(t, ns, "manual", func(d *appsv1.Deployment) { d.Annotations, d.Spec.Paused = pause, true })
	first := startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)

	hash1 := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	start := time.Now()
	waitEnv(t, ns, "web", cmVar, hash1)
	if d := getDeployment(t, ns, "web"); !d.Spec.Paused || d.Annotations[pausedAt] == "" {
		t.Fatalf("web reloaded without its pause: paused %t, paused-at %q", d.Spec.Paused, d.Annotations[pausedAt])
	}
	first.stop(t)
	hash2 := updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	waitEnv(t, ns, "web", cmVar, hash2) // joins the pause
	if d := getDeployment(t, ns, "web"); !d.Spec.Paused || time.Since(start) > 5*time.Second {
		t.Fatalf("the second change did not join the pause: paused %t, %s after the first", d.Spec.Paused, time.Since(start))
	}
	waitFor(t, 15*time.Second, "web resumed", func() (bool, error) {
		d := getDeployment(t, ns, "web")
		return !d.Spec.Paused && d.Annotations[pausedAt] == "", nil
	})
	if gap := time.Since(start); gap < 5*time.Second {
		t.Fatalf("resumed %s after the first change, inside the 6 s pause", gap)
	}
	waitEnv(t, ns, "manual", cmVar, hash2)
	if d := getDeployment(t, ns, "manual"); !d.Spec.Paused || d.Annotations[pausedAt] != "" {
		t.Fatalf("a Deployment paused by someone else: paused %t, paused-at %q; want left paused, no pause of ours", d.Spec.Paused, d.Annotations[pausedAt])
	}
}

// A followed reload patched into a paused Deployment is not timed out while the pause holds its
// rollout back: it succeeds once the pause ends (a 2 s timeout, a 5 s pause).
func TestAReloadHeldByAPauseIsNotTimedOutBeforeItRollsOut(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"),
		map[string]string{"deployment.reloader.stakater.com/pause-period": "5s"}), nil)
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond, tweak: func(o *reloader.Options) {
		o.Follow = policy.Follow{Track: true, Rollback: true, Timeout: 2 * time.Second}
	}})
	settle(t)
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitEnv(t, ns, "web", cmVar, hash)
	waitFor(t, 20*time.Second, "the reload's outcome", func() (bool, error) {
		e, ok := newestEntry(t, ns)
		return ok && e.Outcome != policy.OutcomeProgressing, nil
	})
	if e, _ := newestEntry(t, ns); e.Outcome != policy.OutcomeSucceeded {
		t.Fatalf("outcome %q, want %q: the pause held the rollout, not a fault", e.Outcome, policy.OutcomeSucceeded)
	}
	if v, _ := env(getDeployment(t, ns, "web"), "app", cmVar); v != hash {
		t.Fatalf("marker %q after the outcome, want %q (rolled back?)", v, hash)
	}
}

// A followed reload patched into a pause of ours is timed from the resume, another actor's too:
// the period over and our resume held by a closed window, someone resumes the Deployment past
// the patch's timeout, and its rollout is not timed out and rolled back at once (soak seed
// 1796306838225762327@10: the rollback restarted the pods outside the window).
func TestAReloadHeldByOurPauseIsTimedFromAnotherActorsLateResume(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	followedDeployment(t, ns, map[string]string{"configmap.reloader.stakater.com/reload": "app",
		policy.RollbackAnnotation: "true", policy.TimeoutAnnotation: "6s",
		"deployment.reloader.stakater.com/pause-period": "2s", policy.WindowAnnotation: closedWindow()})
	startController(t, ns, controllerOpts{})
	settle(t)
	reloaded := time.Now()
	updateConfigMap(t, ns, "app", fixedConfig)
	waitEnv(t, ns, "web", appVar, hashOfData(fixedConfig))
	if !getDeployment(t, ns, "web").Spec.Paused {
		t.Fatal("the reload did not pause web")
	}
	waitFor(t, 30*time.Second, "the pause and the timeout past", func() (bool, error) { return time.Since(reloaded) > 10*time.Second, nil })
	settle(t)
	if d := getDeployment(t, ns, "web"); !d.Spec.Paused {
		t.Fatal("resumed while the window is closed")
	}

	updateDeployment(t, ns, "web", func(d *appsv1.Deployment) { d.Spec.Paused = false })
	succeedsFromTheResume(t, ns)
}
