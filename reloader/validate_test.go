package reloader_test

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/internal/dev/clocktest"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// A Secret's invalid YAML is held back, and neither its Event, nor the log, nor any Event in the
// namespace holds a byte of the value, though YAML's own errors quote their input.
func TestInvalidSecretYAMLIsHeldWithoutShowingTheValue(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	const secretVar = "_RELOADER_-secret-creds"
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Annotations: map[string]string{policy.ValidateAnnotation: "creds.yaml=yaml"}},
		StringData: map[string]string{"creds.yaml": "user: a\npassword: b\n"},
	}
	if _, err := cluster.Client().CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createDeployment(t, ns, "web", 0, named("secret", "creds"), nil)
	r := startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)
	changes := templateChanges(t, ns, "web")

	const leaked = "hunter2hunter2"
	updateSecret(t, ns, "creds", map[string]string{"creds.yaml": leaked + ": 1\n" + leaked + ": 2\n"}) // a duplicate key
	waitFor(t, 10*time.Second, "InvalidConfig warning", func() (bool, error) {
		return countEvents(t, ns, "creds", "InvalidConfig") == 1, nil
	})
	updateSecret(t, ns, "creds", map[string]string{"creds.yaml": "password: [" + leaked + "\n"}) // unclosed
	waitFor(t, 10*time.Second, "a second InvalidConfig warning, for the other content", func() (bool, error) {
		return countEvents(t, ns, "creds", "InvalidConfig") == 2, nil
	})
	settle(t)
	all := strings.Join(append(eventMessages(t, ns, "creds"), eventMessages(t, ns, "web")...), "\n")
	if !strings.Contains(all, `key "creds.yaml" is not valid YAML`) {
		t.Fatalf("the warning does not name the key:\n%s", all)
	}
	for i := 0; i+4 <= len(leaked); i++ {
		if strings.Contains(all, leaked[i:i+4]) || strings.Contains(r.log.String(), leaked[i:i+4]) {
			t.Fatalf("part of the value %q reached an Event or the log:\n%s\n%s", leaked[i:i+4], all, r.log.String())
		}
	}
	if n := changes(); n != 0 {
		t.Fatalf("invalid content rolled out (%d template changes)", n)
	}
	hash := updateSecret(t, ns, "creds", map[string]string{"creds.yaml": "user: a\npassword: c\n"})
	waitFor(t, 10*time.Second, "the valid change rolled out", func() (bool, error) {
		v, _ := env(getDeployment(t, ns, "web"), "app", secretVar)
		return v == hash, nil
	})
	if n := changes(); n != 1 {
		t.Fatalf("template changed %d times, want 1", n)
	}
}

// A reloader/validate value that does not parse holds changes back, and says why.
func TestMalformedValidateAnnotationHoldsChanges(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"config.json": "{}"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)
	changes := templateChanges(t, ns, "web")
	cms := cluster.Client().CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(context.Background(), "app-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Annotations = map[string]string{policy.ValidateAnnotation: "config.json=xml"}
	cm.Data = map[string]string{"config.json": `{"a":1}`}
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "InvalidConfig warning", func() (bool, error) {
		return countEvents(t, ns, "app-config", "InvalidConfig") == 1, nil
	})
	if msgs := strings.Join(eventMessages(t, ns, "app-config"), "\n"); !strings.Contains(msgs, "is not <key>=json or <key>=yaml") {
		t.Fatalf("the warning does not say what is wrong with the annotation:\n%s", msgs)
	}
	if n := changes(); n != 0 {
		t.Fatalf("a change under a malformed annotation rolled out (%d template changes)", n)
	}
	setConfigMapAnnotation(t, ns, "app-config", policy.ValidateAnnotation, `"config.json=json"`)
	waitFor(t, 10*time.Second, "the change rolled out once the annotation is fixed", func() (bool, error) {
		_, ok := env(getDeployment(t, ns, "web"), "app", cmVar)
		return ok, nil
	})
	if n := changes(); n != 1 {
		t.Fatalf("template changed %d times, want 1", n)
	}
}

// A config first seen invalid is the baseline: its next valid change reloads a workload that
// carries no marker.
func TestConfigFirstSeenInvalidReloadsOnItsNextValidChange(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "app-config", Annotations: map[string]string{policy.ValidateAnnotation: "config.json=json"}},
		Data:       map[string]string{"config.json": "{"},
	}
	if _, err := cluster.Client().CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	waitFor(t, 10*time.Second, "the invalid content recorded as the baseline", func() (bool, error) {
		return stateEntry(t, ns, "v1.ConfigMap_app-config") != "", nil
	})
	changes := templateChanges(t, ns, "web")
	waitFor(t, 10*time.Second, "one InvalidConfig warning at start", func() (bool, error) {
		return countEvents(t, ns, "app-config", "InvalidConfig") == 1, nil
	})
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"config.json": "{}"})
	waitEnv(t, ns, "web", cmVar, hash)
	if n := changes(); n != 1 {
		t.Fatalf("template changed %d times, want 1", n)
	}
}

// validatedConfig creates ConfigMap app-config whose config.json must be JSON.
func validatedConfig(t *testing.T, ns, content string) {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "app-config", Annotations: map[string]string{policy.ValidateAnnotation: "config.json=json"}},
		Data:       map[string]string{"config.json": content},
	}
	if _, err := cluster.Client().CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// setJSON writes content as app-config's config.json and returns the content hash.
func setJSON(t *testing.T, ns, content string) string {
	t.Helper()
	return updateConfigMap(t, ns, "app-config", map[string]string{"config.json": content})
}

// invalidWarning waits for the n-th InvalidConfig warning on app-config and returns the messages.
func invalidWarning(t *testing.T, ns string, n int) string {
	t.Helper()
	waitFor(t, 10*time.Second, "InvalidConfig warning", func() (bool, error) {
		return countEvents(t, ns, "app-config", "InvalidConfig") == n, nil
	})
	return strings.Join(eventMessages(t, ns, "app-config"), "\n")
}

// A valid change, then content that does not validate inside the coalescing period: the valid
// content cannot be rolled out any more (a restart would load the invalid one), and the Warning
// says so, naming it and the workload it did not reach, instead of claiming that it stays in
// effect. A fix back to that content then reloads once (the positive control).
func TestInvalidContentInTheCoalescingPeriodSaysTheValidChangeBeforeItIsNotRolledOut(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	validatedConfig(t, ns, `{"v":0}`)
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	clock := clocktest.New(time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC))
	r := startController(t, ns, controllerOpts{period: time.Minute, tweak: func(o *reloader.Options) { o.Clock = clock }})
	settle(t)
	original := stateEntry(t, ns, "v1.ConfigMap_app-config")
	changes := templateChanges(t, ns, "web")

	valid := setJSON(t, ns, `{"v":1}`)
	waitFor(t, 10*time.Second, "the valid change seen", func() (bool, error) {
		return value(t, r.metrics.Changes.WithLabelValues("ConfigMap")) == 1, nil
	})
	bad := setJSON(t, ns, `{"v":`)
	msgs := invalidWarning(t, ns, 1)
	want := "Content " + bad[:8] + " not rolled out: "
	if !strings.Contains(msgs, want) || !strings.Contains(msgs, "The last valid content, "+valid[:8]+", was replaced before Deployment web reloaded for it") ||
		strings.Contains(msgs, "the last valid content stays in effect") {
		t.Fatalf("the warning must say that %s was not rolled out and not claim it is in effect:\n%s", valid[:8], msgs)
	}
	clock.Advance(time.Minute) // the coalescing period ends
	settle(t)
	if n := changes(); n != 0 {
		t.Fatalf("template changed %d times under content that does not validate", n)
	}
	if got := stateEntry(t, ns, "v1.ConfigMap_app-config"); got != original {
		t.Fatalf("state moved to %s, want %s, the content the workload runs", got, original)
	}

	// The fix back to the valid content that never reached the workload reloads it once.
	setJSON(t, ns, `{"v":1}`)
	waitFor(t, 10*time.Second, "the fix seen and its coalescing window open", func() (bool, error) {
		return value(t, r.metrics.Changes.WithLabelValues("ConfigMap")) == 2 && clock.Pending() > 0, nil
	})
	clock.Advance(time.Minute)
	waitEnv(t, ns, "web", cmVar, valid)
	wantReloadsSince(t, changes, 1)
	waitRecorded(t, r, "v1.ConfigMap_app-config", valid)
}

// wantReloadsSince settles, then fails unless changes counts n template changes.
func wantReloadsSince(t *testing.T, changes func() int, n int) {
	t.Helper()
	settle(t)
	if got := changes(); got != n {
		t.Fatalf("template changed %d times, want %d", got, n)
	}
}

// A valid change held by a maintenance window, then content that does not validate: the held
// reload is dropped at once (no pending entry, no deferred gauge, no reload when the window
// opens), and the Warning names the valid content that was not rolled out. Across a restart, a
// revert to the content the workload ran reloads it once, in its window (the new process cannot
// know whether another actor restarted it meanwhile), and a later valid change once more.
func TestInvalidContentDropsTheHeldReloadOfTheValidChangeBeforeIt(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	validatedConfig(t, ns, `{"v":0}`)
	original := ""
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"),
		map[string]string{policy.WindowAnnotation: "Sat 02:00-04:00 Europe/Berlin"}), nil)
	createDeployment(t, ns, "free", 0, named("configmap", "app-config"), nil)
	clock := clocktest.New(time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)) // Friday
	opts := controllerOpts{tweak: func(o *reloader.Options) { o.Clock = clock }}
	first := startController(t, ns, opts)
	settle(t)
	original = stateEntry(t, ns, "v1.ConfigMap_app-config")
	changes := templateChanges(t, ns, "web")

	valid := setJSON(t, ns, `{"v":1}`)
	waitEnv(t, ns, "free", cmVar, valid)
	waitFor(t, 10*time.Second, "the ReloadDeferred event", func() (bool, error) {
		return countEvents(t, ns, "web", "ReloadDeferred") == 1, nil
	})
	bad := setJSON(t, ns, `{"v":`)
	msgs := invalidWarning(t, ns, 1)
	if !strings.Contains(msgs, "Content "+bad[:8]+" not rolled out: ") ||
		!strings.Contains(msgs, "The last valid content, "+valid[:8]+", was replaced before Deployment web reloaded for it") ||
		strings.Contains(msgs, "Deployment free") || strings.Contains(msgs, "the last valid content stays in effect") {
		t.Fatalf("the warning must say that %s did not reach web (and only web), not that it is in effect:\n%s", valid[:8], msgs)
	}
	waitFor(t, 10*time.Second, "the held reload dropped", func() (bool, error) {
		return stateEntry(t, ns, pendingWeb) == "" && value(t, first.metrics.Deferred.WithLabelValues(policy.ReasonWindow)) == 0, nil
	})
	first.stop(t)

	startController(t, ns, opts)
	// web runs this, unless another actor restarted it while no reloader watched: a process that
	// starts after one that saw web due cannot tell, and reloads it once (docs/design.md,
	// Strips), in its window. free runs the valid content and reloads.
	setJSON(t, ns, `{"v":0}`)
	waitEnv(t, ns, "free", cmVar, original)
	if n := changes(); n != 0 {
		t.Fatalf("web reloaded %d times outside its window", n)
	}
	clock.Advance(13 * time.Hour) // Saturday 01:00 UTC: the window is open
	waitFor(t, 10*time.Second, "state back at the original content", func() (bool, error) {
		return stateEntry(t, ns, "v1.ConfigMap_app-config") == original, nil
	})
	waitEnv(t, ns, "web", cmVar, original)
	wantReloadsSince(t, changes, 1)

	later := setJSON(t, ns, `{"v":2}`)
	waitEnv(t, ns, "web", cmVar, later)
	wantReloadsSince(t, changes, 2)
}

// With a maintenance window, the fix back to the valid content that an invalid one replaced
// before its reload waits for the window, then reloads once.
func TestFixAfterInvalidContentWaitsForTheWindowAndReloadsOnce(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	validatedConfig(t, ns, `{"v":0}`)
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config"),
		map[string]string{policy.WindowAnnotation: "Sat 02:00-04:00 Europe/Berlin"}), nil)
	clock := clocktest.New(time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)) // Friday
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.Clock = clock }})
	settle(t)
	changes := templateChanges(t, ns, "web")

	valid := setJSON(t, ns, `{"v":1}`)
	waitFor(t, 10*time.Second, "the ReloadDeferred event", func() (bool, error) {
		return countEvents(t, ns, "web", "ReloadDeferred") == 1, nil
	})
	setJSON(t, ns, `{"v":`)
	invalidWarning(t, ns, 1)
	setJSON(t, ns, `{"v":1}`)
	waitFor(t, 10*time.Second, "the pending entry of the fix", func() (bool, error) {
		return strings.HasPrefix(stateEntry(t, ns, pendingWeb), "pending@"), nil
	})
	wantReloadsSince(t, changes, 0)
	clock.Advance(13 * time.Hour) // Saturday 01:00 UTC: the window opens
	waitEnv(t, ns, "web", cmVar, valid)
	wantReloadsSince(t, changes, 1)
}

const bVar = "_RELOADER_-configmap-b"

// readingBoth creates app-config, whose config.json must be JSON, ConfigMap b, Deployment web
// that reads and reloads on both, and Deployment only-b that reads and reloads on b alone.
func readingBoth(t *testing.T, ns string) {
	t.Helper()
	validatedConfig(t, ns, `{"v":0}`)
	createConfigMap(t, ns, "b", map[string]string{"k": "0"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config,b"), envFromCM("app-config", "b"))
	createDeployment(t, ns, "only-b", 0, named("configmap", "b"), envFromCM("b"))
}

// heldForB makes app-config invalid, then changes b; it waits until only-b reloaded for b (the
// positive control: a workload that does not read app-config reloads at once) and workload was
// told that its reload is held, and returns b's hash.
func heldForB(t *testing.T, ns, workload, version string) string {
	t.Helper()
	setJSON(t, ns, `{"v":`)
	invalidWarning(t, ns, 1)
	hash := updateConfigMap(t, ns, "b", map[string]string{"k": version})
	waitEnv(t, ns, "only-b", bVar, hash)
	waitFor(t, 10*time.Second, "the ReloadHeldInvalidConfig warning on "+workload, func() (bool, error) {
		return countEvents(t, ns, workload, "ReloadHeldInvalidConfig") == 1, nil
	})
	return hash
}

// Pods read every config's current content when they start: a reload of web for b would load
// app-config's content, which does not validate. web's reload waits, said by one Warning however
// many changes of b arrive, and happens once app-config is fixed, carrying both.
func TestAReloadForOneConfigWaitsUntilAnotherConfigThePodsReadValidates(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	readingBoth(t, ns)
	r := startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)
	changes := templateChanges(t, ns, "web")

	heldForB(t, ns, "web", "1")
	hashB := updateConfigMap(t, ns, "b", map[string]string{"k": "2"})
	waitEnv(t, ns, "only-b", bVar, hashB)
	wantReloadsSince(t, changes, 0)
	if n := countEvents(t, ns, "web", "ReloadHeldInvalidConfig"); n != 1 {
		t.Fatalf("%d ReloadHeldInvalidConfig warnings, want 1", n)
	}
	msgs := strings.Join(eventMessages(t, ns, "web"), "\n")
	if !strings.Contains(msgs, "ConfigMap app-config") || strings.Contains(msgs, `{"v"`) {
		t.Fatalf("the warning must name app-config and not show its value:\n%s", msgs)
	}
	if got := value(t, r.metrics.Deferred.WithLabelValues(policy.ReasonInvalidConfig)); got != 1 {
		t.Fatalf("reloads_deferred{reason=invalid-config} = %v, want 1", got)
	}

	fixed := setJSON(t, ns, `{"v":1}`)
	waitEnv(t, ns, "web", cmVar, fixed)
	wantReloadsSince(t, changes, 1)
	if got, _ := env(getDeployment(t, ns, "web"), "app", bVar); got != hashB {
		t.Fatalf("web's reload carries b=%q, want %q", got, hashB)
	}
	if got := value(t, r.metrics.Deferred.WithLabelValues(policy.ReasonInvalidConfig)); got != 0 {
		t.Fatalf("reloads_deferred{reason=invalid-config} = %v after the fix, want 0", got)
	}
}

// A revert of the invalid content to what web runs reloads nothing for app-config, and releases
// the held reload for b, once.
func TestRevertingInvalidContentReleasesTheHeldReloadOnce(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	readingBoth(t, ns)
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)
	original := stateEntry(t, ns, "v1.ConfigMap_app-config")
	changes := templateChanges(t, ns, "web")

	hashB := heldForB(t, ns, "web", "1")
	wantReloadsSince(t, changes, 0)
	setJSON(t, ns, `{"v":0}`)
	waitEnv(t, ns, "web", bVar, hashB)
	wantReloadsSince(t, changes, 1)
	if v, ok := env(getDeployment(t, ns, "web"), "app", cmVar); ok {
		t.Fatalf("web reloaded for app-config (%s), whose content it runs", v)
	}
	if got := stateEntry(t, ns, "v1.ConfigMap_app-config"); got != original {
		t.Fatalf("app-config's state is %s, want %s", got, original)
	}
}

// The hold is derived from the caches: a new reloader process holds web again, and deleting
// app-config (with --reload-on-delete) releases it: one reload, for b.
func TestAHeldReloadSurvivesARestartAndDeletingTheInvalidConfigReleasesIt(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	readingBoth(t, ns)
	opts := controllerOpts{period: 100 * time.Millisecond, tweak: func(o *reloader.Options) { o.ReloadOnDelete = true }}
	first := startController(t, ns, opts)
	settle(t)
	changes := templateChanges(t, ns, "web")

	hashB := heldForB(t, ns, "web", "1")
	first.stop(t)
	second := startController(t, ns, opts)
	waitFor(t, 10*time.Second, "web held again", func() (bool, error) {
		return value(t, second.metrics.Deferred.WithLabelValues(policy.ReasonInvalidConfig)) == 1, nil
	})
	wantReloadsSince(t, changes, 0)

	if err := cluster.Client().CoreV1().ConfigMaps(ns).Delete(context.Background(), "app-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEnv(t, ns, "web", bVar, hashB)
	wantReloadsSince(t, changes, 1)
	if got := value(t, second.metrics.Deferred.WithLabelValues(policy.ReasonInvalidConfig)); got != 0 {
		t.Fatalf("reloads_deferred{reason=invalid-config} = %v after the deletion, want 0", got)
	}
}

// A pause period starts with the reload it batches: none starts for a reload held by invalid
// content. Once app-config is fixed, the pause runs, and one reload at its end carries both.
func TestAReloadHeldByInvalidContentStartsNoPausePeriodUntilTheFix(t *testing.T) {
	t.Parallel()
	const pausedAt = "deployment.reloader.stakater.com/paused-at"
	ns := cluster.NewNamespace(t)
	validatedConfig(t, ns, `{"v":0}`)
	createConfigMap(t, ns, "b", map[string]string{"k": "0"})
	createDeployment(t, ns, "web", 0, withAnnotations(named("configmap", "app-config,b"),
		map[string]string{"deployment.reloader.stakater.com/pause-period": "1m"}), envFromCM("app-config", "b"))
	createDeployment(t, ns, "only-b", 0, named("configmap", "b"), envFromCM("b"))
	clock := clocktest.New(time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC))
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.Clock = clock }})
	settle(t)
	changes := templateChanges(t, ns, "web")

	hashB := heldForB(t, ns, "web", "1")
	settle(t)
	if at := getDeployment(t, ns, "web").Annotations[pausedAt]; at != "" {
		t.Fatalf("a pause period started at %s for a reload that did not happen", at)
	}
	fixed := setJSON(t, ns, `{"v":1}`)
	// The fix starts the pause: the Deployment is paused and the reload patched in, to roll out
	// when the pause ends.
	waitFor(t, 10*time.Second, "the pause period started by the fix, its timer set", func() (bool, error) {
		d := getDeployment(t, ns, "web")
		v, _ := env(d, "app", cmVar)
		return d.Annotations[pausedAt] != "" && d.Spec.Paused && v == fixed && clock.Pending() > 0, nil
	})
	wantReloadsSince(t, changes, 1)
	clock.Advance(time.Minute)
	waitFor(t, 10*time.Second, "web resumed", func() (bool, error) {
		d := getDeployment(t, ns, "web")
		return d.Annotations[pausedAt] == "" && !d.Spec.Paused, nil
	})
	wantReloadsSince(t, changes, 1)
	if got, _ := env(getDeployment(t, ns, "web"), "app", bVar); got != hashB {
		t.Fatalf("web's reload carries b=%q, want %q", got, hashB)
	}
}

// A CronJob whose pods read invalid content runs no Job for b; the fix runs one, with both.
func TestACronJobWhosePodsReadInvalidContentRunsNoJobUntilTheFix(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	validatedConfig(t, ns, `{"v":0}`)
	createConfigMap(t, ns, "b", map[string]string{"k": "0"})
	createDeployment(t, ns, "only-b", 0, named("configmap", "b"), envFromCM("b"))
	cj := createCronJobFrom(t, ns, "nightly", func(cj *batchv1.CronJob) {
		cj.Annotations = named("configmap", "app-config,b")
		envFromCM("app-config", "b")(&cj.Spec.JobTemplate.Spec.Template.Spec)
	})
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)

	hashB := heldForB(t, ns, "nightly", "1")
	settle(t)
	if jobs := jobsOf(t, ns, cj.UID); len(jobs) != 0 {
		t.Fatalf("%d Jobs run while the pods would read content that does not validate, want 0", len(jobs))
	}
	fixed := setJSON(t, ns, `{"v":1}`)
	waitFor(t, 30*time.Second, "a Job from the CronJob", func() (bool, error) { return len(jobsOf(t, ns, cj.UID)) > 0, nil })
	settle(t)
	jobs := jobsOf(t, ns, cj.UID)
	if len(jobs) != 1 || jobEnv(&jobs[0], bVar) != hashB || jobEnv(&jobs[0], cmVar) != fixed {
		t.Fatalf("%d Jobs after the fix, want 1 carrying b=%s and app-config=%s", len(jobs), hashB, fixed)
	}
}
