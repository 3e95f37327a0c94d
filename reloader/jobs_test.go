package reloader_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	dto "github.com/prometheus/client_model/go"

	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// createCronJob creates a CronJob that the CronJob controller never runs during a test (once a
// year), whose job template reads app-config; annotations go on the CronJob.
func createCronJob(t *testing.T, ns, name string, annotations map[string]string) *batchv1.CronJob {
	t.Helper()
	return createCronJobFrom(t, ns, name, func(cj *batchv1.CronJob) { cj.Annotations = annotations })
}

// createCronJobFrom creates the CronJob of createCronJob, without annotations; mutate adjusts it
// before creation.
func createCronJobFrom(t *testing.T, ns, name string, mutate func(*batchv1.CronJob)) *batchv1.CronJob {
	t.Helper()
	tmpl := podTemplate(name)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.CronJobSpec{Schedule: "0 0 1 1 *", JobTemplate: batchv1.JobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"from": name}},
			Spec:       batchv1.JobSpec{Template: tmpl},
		}},
	}
	mutate(cj)
	cj, err := cluster.Client().BatchV1().CronJobs(ns).Create(context.Background(), cj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cj
}

func createJob(t *testing.T, ns, name string, annotations map[string]string) *batchv1.Job {
	t.Helper()
	return createJobFrom(t, ns, name, func(j *batchv1.Job) { j.Annotations = annotations })
}

// createJobFrom creates a Job of one container "app" that never restarts; mutate adjusts it
// before creation.
func createJobFrom(t *testing.T, ns, name string, mutate func(*batchv1.Job)) *batchv1.Job {
	t.Helper()
	tmpl := podTemplate(name)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: batchv1.JobSpec{Template: tmpl}}
	mutate(job)
	job, err := cluster.Client().BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// jobNow returns Job name, or an empty Job while it does not exist (being recreated).
func jobNow(ns, name string) *batchv1.Job {
	j, err := cluster.Client().BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return &batchv1.Job{Spec: batchv1.JobSpec{Template: podTemplate(name)}}
	}
	return j
}

func getCronJob(t *testing.T, ns, name string) *batchv1.CronJob {
	t.Helper()
	cj, err := cluster.Client().BatchV1().CronJobs(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cj
}

// jobCreations counts, from now on, the Jobs created in ns under each name: a Job recreated
// keeps its name, so only its creations tell how many times it was.
func jobCreations(t *testing.T, ns string) (count func(name string) int) {
	t.Helper()
	list, err := cluster.Client().BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := cluster.Client().BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	created := map[string]int{}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type == watch.Added {
				mu.Lock()
				created[ev.Object.(*batchv1.Job).Name]++
				mu.Unlock()
			}
		}
	}()
	return func(name string) int {
		settle(t)
		time.Sleep(300 * time.Millisecond) // the watch event of the last creation is on its way
		mu.Lock()
		defer mu.Unlock()
		return created[name]
	}
}

// jobsOf lists the Jobs in ns whose controller is the CronJob uid.
func jobsOf(t *testing.T, ns string, uid types.UID) []batchv1.Job {
	t.Helper()
	list, err := cluster.Client().BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []batchv1.Job
	for _, j := range list.Items {
		if ref := metav1.GetControllerOf(&j); ref != nil && ref.UID == uid {
			out = append(out, j)
		}
	}
	return out
}

func jobEnv(j *batchv1.Job, name string) string {
	for _, e := range j.Spec.Template.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func getJob(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	j, err := cluster.Client().BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// A CronJob's reload runs one Job now, from its template with the new marker, marked as
// instantiated by hand and owned by the CronJob, as stakater does. A restart of the reloader
// runs nothing more; a second change runs a second Job.
func TestACronJobReloadRunsOneJobFromItsTemplate(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	cj := createCronJob(t, ns, "nightly", named("configmap", "app-config"))
	first := startController(t, ns, controllerOpts{})
	settle(t)
	if jobs := jobsOf(t, ns, cj.UID); len(jobs) != 0 {
		t.Fatalf("%d Jobs before any change, want 0", len(jobs))
	}

	hashB := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitFor(t, 30*time.Second, "a Job from the CronJob", func() (bool, error) { return len(jobsOf(t, ns, cj.UID)) > 0, nil })
	settle(t)
	jobs := jobsOf(t, ns, cj.UID)
	if len(jobs) != 1 {
		t.Fatalf("%d Jobs after one change, want 1", len(jobs))
	}
	j := jobs[0]
	if got := jobEnv(&j, cmVar); got != hashB || j.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" || j.Labels["from"] != "nightly" {
		t.Fatalf("Job %s: marker %q (want %q), annotations %v, labels %v", j.Name, got, hashB, j.Annotations, j.Labels)
	}
	after, err := cluster.Client().BatchV1().CronJobs(ns).Get(context.Background(), "nightly", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, pending := after.Annotations["reloader/pending-job"]; pending {
		t.Fatalf("the CronJob still names a pending Job: %v", after.Annotations)
	}

	first.stop(t)
	startController(t, ns, controllerOpts{})
	settle(t)
	if n := len(jobsOf(t, ns, cj.UID)); n != 1 {
		t.Fatalf("%d Jobs after a restart with nothing changed, want 1", n)
	}
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	waitFor(t, 30*time.Second, "a second Job", func() (bool, error) { return len(jobsOf(t, ns, cj.UID)) == 2, nil })
	settle(t)
	if n := len(jobsOf(t, ns, cj.UID)); n != 2 {
		t.Fatalf("%d Jobs after two changes, want 2", n)
	}
}

// A reloader stopped between recording a CronJob's reload and creating its Job (simulated by
// writing the annotation that patch leaves) creates the Job on its next start, once, even when
// started twice over it.
func TestACronJobReloadInterruptedBeforeItsJobRunsItOnceAtTheNextStart(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	cj := createCronJob(t, ns, "nightly", named("configmap", "app-config"))
	startController(t, ns, controllerOpts{}).stop(t) // makes the hash key runs are signed with
	run := signedRun(t, ns, cj, "nightly-reload-abc1234")
	recordRun(t, ns, "nightly", run)
	startController(t, ns, controllerOpts{})
	waitFor(t, 30*time.Second, "the pending Job", func() (bool, error) { return len(jobsOf(t, ns, cj.UID)) == 1, nil })
	settle(t)
	if jobs := jobsOf(t, ns, cj.UID); len(jobs) != 1 || jobs[0].Name != "nightly-reload-abc1234" {
		t.Fatalf("Jobs %v, want exactly nightly-reload-abc1234", jobs)
	}
	// The Job exists but the annotation came back (the stop fell after the create): no second.
	recordRun(t, ns, "nightly", run)
	startController(t, ns, controllerOpts{})
	waitFor(t, 30*time.Second, "the annotation cleared", func() (bool, error) {
		c, err := cluster.Client().BatchV1().CronJobs(ns).Get(context.Background(), "nightly", metav1.GetOptions{})
		return err == nil && c.Annotations["reloader/pending-job"] == "", err
	})
	if n := len(jobsOf(t, ns, cj.UID)); n != 1 {
		t.Fatalf("%d Jobs, want 1", n)
	}
}

// A Job's reload deletes it and creates it again, under the same name, with the new marker. A
// restart of the reloader recreates nothing: the new Job carries the current marker.
func TestAJobReloadRecreatesItOnce(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	old := createJob(t, ns, "migrate", named("configmap", "app-config"))
	first := startController(t, ns, controllerOpts{})
	settle(t)
	if j := getJob(t, ns, "migrate"); j.UID != old.UID {
		t.Fatal("the Job was recreated without a change")
	}

	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	var recreated *batchv1.Job
	waitFor(t, 30*time.Second, "the Job recreated", func() (bool, error) {
		j, err := cluster.Client().BatchV1().Jobs(ns).Get(context.Background(), "migrate", metav1.GetOptions{})
		if err != nil || j.UID == old.UID {
			return false, nil
		}
		recreated = j
		return true, nil
	})
	if got := jobEnv(recreated, cmVar); got != hash {
		t.Fatalf("recreated Job marker %q, want %q", got, hash)
	}
	settle(t)
	if notes := stateValues(t, ns, "reloader.job-recreation_"); len(notes) != 0 {
		t.Fatalf("the recreation is still written down: %v", notes)
	}
	first.stop(t)
	startController(t, ns, controllerOpts{})
	settle(t)
	if j := getJob(t, ns, "migrate"); j.UID != recreated.UID {
		t.Fatalf("a restart recreated the Job again (UID %s → %s)", recreated.UID, j.UID)
	}
}

// holdRequest wraps the controller's transport so that, once armed, the next request match
// accepts is held: held is closed when it arrives, and it is sent once release is closed.
func holdRequest(match func(*http.Request) bool) (armed *atomic.Bool, wrap func(http.RoundTripper) http.RoundTripper, held, release chan struct{}) {
	armed = &atomic.Bool{}
	held, release = make(chan struct{}), make(chan struct{})
	wrap = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if match(req) && armed.CompareAndSwap(true, false) {
				close(held)
				select {
				case <-release:
				case <-req.Context().Done():
					return nil, req.Context().Err()
				}
			}
			return rt.RoundTrip(req)
		})
	}
	return armed, wrap, held, release
}

// TestAJobRecreatedAcrossAnUnseenChangeIsRecreatedForItsRevert: the config changes to C while a
// Job's recreation for B is on its way (its create held 1 s), so the new Job's pods read C
// though its marker says B; a minimum interval holds the reload for C, and C is reverted to B
// meanwhile. The Job runs C, so it is recreated once more. The old Job's deletion, part of the
// recreation, used to forget what the reloader noted of it (soak seed 1795691391691440061@4).
func TestAJobRecreatedAcrossAnUnseenChangeIsRecreatedForItsRevert(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	ann := named("configmap", "app-config")
	ann[policy.MinIntervalAnnotation] = "5s"
	old := createJob(t, ns, "migrate", ann)
	armed, holdCreate, held, release := holdRequest(func(req *http.Request) bool {
		return req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/jobs")
	})
	startController(t, ns, controllerOpts{wrap: holdCreate})
	settle(t)
	armed.Store(true)
	hashB := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the Job was not recreated for B")
	}
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	time.Sleep(time.Second) // the create held while the reloader sees C
	close(release)
	var forB *batchv1.Job
	waitFor(t, 30*time.Second, "the Job recreated for B", func() (bool, error) {
		forB = jobNow(ns, "migrate")
		return forB.UID != "" && forB.UID != old.UID, nil
	})
	if got := jobEnv(forB, cmVar); got != hashB {
		t.Fatalf("recreated Job marker %q, want B's %q", got, hashB)
	}
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"}) // within the minimum interval
	waitFor(t, 30*time.Second, "the Job recreated for the revert to B", func() (bool, error) {
		j := jobNow(ns, "migrate")
		return j.UID != "" && j.UID != forB.UID, nil
	})
}

// --ignored-workload-types=jobs,cronjobs leaves them alone, while a Deployment on the same
// config reloads (the positive control).
func TestIgnoredJobsAndCronJobsAreLeftAlone(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	cj := createCronJob(t, ns, "nightly", named("configmap", "app-config"))
	job := createJob(t, ns, "migrate", named("configmap", "app-config"))
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) {
		o.IgnoredWorkloadTypes = []string{reloader.TypeJobs, reloader.TypeCronJobs}
	}})
	settle(t)
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitEnv(t, ns, "web", cmVar, hash)
	settle(t)
	if n := len(jobsOf(t, ns, cj.UID)); n != 0 {
		t.Fatalf("ignored CronJob ran %d Jobs", n)
	}
	if j := getJob(t, ns, "migrate"); j.UID != job.UID {
		t.Fatal("ignored Job was recreated")
	}
}

// Under a Role written before CronJob and Job reloads (no batch rules), the reloader still
// syncs and reloads a Deployment (the positive control), and says once that those kinds are off.
func TestWithoutBatchPermissionsCronJobsAndJobsAreOffAndTheRestWorks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.NewNamespace(t)
	admin := cluster.Client()
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "old-role"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "old-role"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "list", "watch", "create", "patch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "old-role"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "old-role"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "old-role", Namespace: ns}}}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := cluster.ServiceAccountConfig(ctx, ns, "old-role")
	if err != nil {
		t.Fatal(err)
	}
	sa := kubernetes.NewForConfigOrDie(cfg)
	waitFor(t, 30*time.Second, "the Role in force", func() (bool, error) {
		_, err := sa.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	r := startControllerAs(t, cfg, ns, controllerOpts{})
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitEnv(t, ns, "web", cmVar, hash)
	for _, kind := range []string{"CronJobs", "Jobs"} {
		if n := strings.Count(r.log.String(), "the reloader may not list "+kind); n != 1 {
			t.Errorf("said %d times that %s are off, want once:\n%s", n, kind, r.log.String())
		}
	}
}

// A reloader stopped after deleting a Job and before creating it again (simulated: the
// recreation written down as the reloader writes it, then the Job deleted) creates it at its
// next start, once: a second start finds it created and creates nothing. A recreation written
// down whose delete never happened deletes nothing and creates nothing.
func TestAJobRecreationInterruptedAfterTheDeleteIsFinishedOnceAtTheNextStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	first := startController(t, ns, controllerOpts{})
	settle(t)
	first.stop(t)
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})

	// "gone": deleted, its recreation written down. "kept": written down, never deleted.
	gone := createJob(t, ns, "gone", named("configmap", "app-config"))
	kept := createJob(t, ns, "kept", map[string]string{"reloader.stakater.com/auto": "false"})
	note := func(j *batchv1.Job, env string) {
		key, value := signedNote(t, ns, j.UID, noteOf(ns, j.Name, j.Annotations, env), false)
		setStateEntry(t, ns, key, value)
	}
	note(gone, hash)
	note(kept, "never")
	background := metav1.DeletePropagationBackground
	if err := cluster.Client().BatchV1().Jobs(ns).Delete(ctx, "gone", metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}

	second := startController(t, ns, controllerOpts{})
	settle(t)
	created := getJob(t, ns, "gone")
	if created.UID == gone.UID || jobEnv(created, cmVar) != hash {
		t.Fatalf("Job gone: UID %s (was %s), marker %q; want it created again with %q", created.UID, gone.UID, jobEnv(created, cmVar), hash)
	}
	if j := getJob(t, ns, "kept"); j.UID != kept.UID {
		t.Fatal("a recreation whose delete never happened recreated the Job")
	}
	if notes := stateValues(t, ns, "reloader.job-recreation_"); len(notes) != 0 {
		t.Fatalf("recreations still written down after the start: %v", notes)
	}
	second.stop(t)
	note(gone, hash) // the stop fell after the create, before the note was removed
	startController(t, ns, controllerOpts{})
	settle(t)
	if j := getJob(t, ns, "gone"); j.UID != created.UID {
		t.Fatalf("Job gone created twice (UID %s → %s)", created.UID, j.UID)
	}
}

// pauseFor is the pause-period annotation, as stakater names it.
func pauseFor(d string) map[string]string {
	return map[string]string{policy.DefaultAnnotations().PausePeriod: d}
}

// pausedAt is the annotation that records, on a workload, when its pause began.
var pausedAt = policy.DefaultAnnotations().PausedAt

// cronJobSettled reports a CronJob whose job template holds the marker hash, with no pause
// running and no Job left to run: a change and its pause are over.
func cronJobSettled(t *testing.T, ns, name, env, hash string) bool {
	t.Helper()
	cj := getCronJob(t, ns, name)
	v, _ := envOf(cj.Spec.JobTemplate.Spec.Template, env)
	return v == hash && cj.Annotations[pausedAt] == "" && cj.Annotations["reloader/pending-job"] == ""
}

// A CronJob whose reload and pause-period annotations are on its pod template (read from there
// when its metadata has none) runs one Job for a change, at the end of the pause, and none
// more; a change after the pause runs exactly one more. Starting and ending the pause writes
// the CronJob's metadata and runs nothing.
func TestACronJobWithAPausePeriodOnItsPodTemplateRunsOneJobPerChange(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	cj := createCronJobFrom(t, ns, "nightly", func(cj *batchv1.CronJob) {
		cj.Spec.JobTemplate.Spec.Template.Annotations = withAnnotations(named("configmap", "app-config"), pauseFor("3s"))
	})
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)

	// wantRuns waits for the change and its pause to be over (or for a runaway past want Jobs),
	// then for one more pause period, in which a pause started again would run another Job.
	wantRuns := func(hash string, want int) {
		t.Helper()
		waitFor(t, 30*time.Second, "the CronJob's pause over with the marker "+hash, func() (bool, error) {
			return cronJobSettled(t, ns, "nightly", cmVar, hash) || len(jobsOf(t, ns, cj.UID)) > want, nil
		})
		time.Sleep(3 * time.Second)
		settle(t)
		jobs := jobsOf(t, ns, cj.UID)
		if len(jobs) != want {
			t.Fatalf("%d Jobs run by the CronJob, want %d", len(jobs), want)
		}
		last := slices.MaxFunc(jobs, func(a, b batchv1.Job) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
		if got := jobEnv(&last, cmVar); got != hash {
			t.Fatalf("the last Job run has the marker %q, want %q", got, hash)
		}
	}
	wantRuns(updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"}), 1)
	wantRuns(updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"}), 2) // the positive control
}

// With a pause period, a CronJob runs one Job, and a Job is recreated once, for a change: at the
// end of the pause, not also at its start. A change reverted inside the pause runs and recreates
// nothing; a later change of that config does, once (the positive control).
func TestPausePeriodOnACronJobOrAJobRunsOnceWhenItEnds(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createConfigMap(t, ns, "flip-config", map[string]string{"v": "A"})
	const flipVar = "_RELOADER_-configmap-flip-config"
	onApp := withAnnotations(named("configmap", "app-config"), pauseFor("3s"))
	onFlip := withAnnotations(named("configmap", "flip-config"), pauseFor("3s"))
	nightly := createCronJob(t, ns, "nightly", onApp)
	createJob(t, ns, "migrate", onApp)
	flipCron := createCronJob(t, ns, "flip-cron", onFlip)
	createJob(t, ns, "flip-job", onFlip)
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)
	created := jobCreations(t, ns)

	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	updateConfigMap(t, ns, "flip-config", map[string]string{"v": "B"})
	waitFor(t, 10*time.Second, "the pauses of flip-cron and flip-job begun", func() (bool, error) {
		return getCronJob(t, ns, "flip-cron").Annotations[pausedAt] != "" && jobNow(ns, "flip-job").Annotations[pausedAt] != "", nil
	})
	updateConfigMap(t, ns, "flip-config", map[string]string{"v": "A"})
	waitFor(t, 30*time.Second, "every pause over", func() (bool, error) {
		j, flip := jobNow(ns, "migrate"), jobNow(ns, "flip-job")
		return cronJobSettled(t, ns, "nightly", cmVar, hash) && jobEnv(j, cmVar) == hash && j.Annotations[pausedAt] == "" &&
			getCronJob(t, ns, "flip-cron").Annotations[pausedAt] == "" && flip.UID != "" && flip.Annotations[pausedAt] == "", nil
	})
	if jobs := jobsOf(t, ns, nightly.UID); len(jobs) != 1 || jobEnv(&jobs[0], cmVar) != hash {
		t.Errorf("the CronJob ran %d Jobs for one change, want 1 with the marker %s", len(jobs), hash)
	}
	if n := created("migrate"); n != 1 {
		t.Errorf("the Job was created %d times for one change, want 1", n)
	}
	if n := len(jobsOf(t, ns, flipCron.UID)); n != 0 {
		t.Errorf("the CronJob ran %d Jobs for a change reverted inside its pause, want 0", n)
	}
	if n := created("flip-job"); n != 0 {
		t.Errorf("the Job was created %d times for a change reverted inside its pause, want 0", n)
	}
	if t.Failed() {
		t.FailNow()
	}

	hash = updateConfigMap(t, ns, "flip-config", map[string]string{"v": "C"})
	waitFor(t, 30*time.Second, "flip-cron and flip-job reloaded", func() (bool, error) {
		return cronJobSettled(t, ns, "flip-cron", flipVar, hash) && jobEnv(jobNow(ns, "flip-job"), flipVar) == hash, nil
	})
	if n := len(jobsOf(t, ns, flipCron.UID)); n != 1 {
		t.Errorf("the CronJob ran %d Jobs for one change, want 1", n)
	}
	if n := created("flip-job"); n != 1 {
		t.Errorf("the Job was created %d times for one change, want 1", n)
	}
}

// The Jobs a CronJob ran carry its template's annotations, but the CronJob is the workload: a
// change runs one Job from it, and recreates none of those it ran (on schedule, or by the
// reload before). A Job of its own reading the same config is recreated (the positive control).
func TestJobsACronJobRanAreLeftAloneWhileItRunsOneJobPerChange(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	cj := createCronJobFrom(t, ns, "nightly", func(cj *batchv1.CronJob) {
		cj.Spec.JobTemplate.Spec.Template.Annotations = named("configmap", "app-config")
	})
	// As the CronJob controller runs it on schedule: the job template, controlled by the CronJob.
	scheduled := createJobFrom(t, ns, "nightly-29000000", func(j *batchv1.Job) {
		j.Labels, j.Spec = cj.Spec.JobTemplate.Labels, *cj.Spec.JobTemplate.Spec.DeepCopy()
		j.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))}
	})
	createJob(t, ns, "migrate", named("configmap", "app-config"))
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle(t)
	created := jobCreations(t, ns)

	for i, v := range []string{"B", "C"} {
		hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": v})
		waitFor(t, 30*time.Second, "the CronJob's Job and the Job recreated", func() (bool, error) {
			return cronJobSettled(t, ns, "nightly", cmVar, hash) && jobEnv(jobNow(ns, "migrate"), cmVar) == hash, nil
		})
		if n := created("migrate"); n != i+1 {
			t.Fatalf("the Job of its own was created %d times after %d changes, want %d", n, i+1, i+1)
		}
		jobs := jobsOf(t, ns, cj.UID)
		if len(jobs) != i+2 {
			t.Fatalf("%d Jobs owned by the CronJob after %d changes, want %d (the scheduled one and one per change)", len(jobs), i+1, i+2)
		}
		for _, j := range jobs {
			if n := created(j.Name); j.Name != scheduled.Name && n != 1 || j.Name == scheduled.Name && n != 0 {
				t.Fatalf("Job %s, run by the CronJob, was created %d times since the start (recreated by a change)", j.Name, n)
			}
		}
	}
}

// A minimum interval on a CronJob without metadata annotations is recorded by its reload (the patch that
// creates the annotations map for the time of the reload also names the Job to run, and must
// keep both), so a second change inside the interval waits for it, then runs one Job.
func TestMinimumIntervalOnACronJobWithoutMetadataAnnotationsHoldsItsNextRun(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	cj := createCronJobFrom(t, ns, "nightly", func(cj *batchv1.CronJob) {
		cj.Spec.JobTemplate.Spec.Template.Annotations = named("configmap", "app-config") // none on its metadata
	})
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond, tweak: func(o *reloader.Options) {
		o.Gate.MinInterval = 5 * time.Second // the flag
	}})
	settle(t)
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitFor(t, 30*time.Second, "the first Job", func() (bool, error) { return cronJobSettled(t, ns, "nightly", cmVar, hash), nil })
	if at := getCronJob(t, ns, "nightly").Annotations[policy.LastReloadAnnotation]; at == "" {
		t.Fatalf("the CronJob's reload did not record its time: annotations %v", getCronJob(t, ns, "nightly").Annotations)
	}
	hash = updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	waitFor(t, 10*time.Second, "the second run held", func() (bool, error) {
		return stateEntry(t, ns, "pending.CronJob_nightly") != "", nil
	})
	waitFor(t, 30*time.Second, "the second Job", func() (bool, error) { return cronJobSettled(t, ns, "nightly", cmVar, hash), nil })
	settle(t)
	if n := len(jobsOf(t, ns, cj.UID)); n != 2 {
		t.Fatalf("%d Jobs for two changes, want 2", n)
	}
}

// refuseJobCreations makes the API server refuse every Job created in ns, through a
// ValidatingAdmissionPolicy, until the returned function lifts it. It returns once the refusal
// is in force.
func refuseJobCreations(t *testing.T, ns string) (lift func()) {
	t.Helper()
	ctx := context.Background()
	remove, err := cluster.DenyWrites(ctx, "refuse-jobs-"+ns,
		admissionv1.Rule{APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs"}}, admissionv1.Create,
		fmt.Sprintf("object.metadata.namespace != %q", ns), "refused by the test's admission policy")
	if err != nil {
		t.Fatal(err)
	}
	probe := func() error {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: batchv1.JobSpec{Template: podTemplate("probe")}}
		job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		_, err := cluster.Client().BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	waitFor(t, 30*time.Second, "the refusal of Job creations in force", func() (bool, error) { return probe() != nil, nil })
	lift = func() {
		_ = remove(ctx)
		waitFor(t, 30*time.Second, "the refusal of Job creations lifted", func() (bool, error) { return probe() == nil, nil })
	}
	t.Cleanup(lift)
	return lift
}

// jobReloads is reloader_reloads_total{kind="Job",result=result}.
func jobReloads(t *testing.T, r *running, result string) float64 {
	t.Helper()
	var m dto.Metric
	if err := r.metrics.Reloads.WithLabelValues("Job", result).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// jobGone reports that no Job ns/name exists.
func jobGone(ns, name string) bool {
	_, err := cluster.Client().BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

// refuseARecreation starts a reloader over Job "migrate" reading app-config, refuses Job
// creations, and changes app-config: the Job is deleted and its create refused. It returns the
// reloader, the new content's hash, the lift of the refusal and the count of creations.
func refuseARecreation(t *testing.T, ns string, o controllerOpts) (r *running, hash string, lift func(), created func(string) int) {
	t.Helper()
	return refuseARecreationOf(t, ns, o, nil)
}

// refuseARecreationOf is refuseARecreation of a Job whose pod spec mutate adjusts.
func refuseARecreationOf(t *testing.T, ns string, o controllerOpts, mutate func(*corev1.PodSpec)) (r *running, hash string, lift func(), created func(string) int) {
	t.Helper()
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createJobFrom(t, ns, "migrate", func(j *batchv1.Job) {
		j.Annotations = named("configmap", "app-config")
		if mutate != nil {
			mutate(&j.Spec.Template.Spec)
		}
	})
	r = startController(t, ns, o)
	settle(t)
	created = jobCreations(t, ns)
	lift = refuseJobCreations(t, ns)
	hash = updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitFor(t, 30*time.Second, "the Job deleted and its create refused", func() (bool, error) {
		return jobGone(ns, "migrate") && jobReloads(t, r, metrics.ResultFailure) > 0, nil
	})
	return r, hash, lift, created
}

// wantMigrateCreated waits for Job "migrate" to carry the marker hash, then fails unless it was
// created want times (why says which).
func wantMigrateCreated(t *testing.T, ns, hash string, within time.Duration, created func(string) int, want int, why string) {
	t.Helper()
	waitFor(t, within, "Job migrate with the marker "+hash, func() (bool, error) { return jobEnv(jobNow(ns, "migrate"), cmVar) == hash, nil })
	settle(t)
	if n := created("migrate"); n != want {
		t.Fatalf(why, n)
	}
}

// A Job deleted to be recreated whose create is refused is created by the running reloader once
// the refusal lifts, with the new marker, without a restart; the failure is counted and said
// once. A later change recreates it once more (the positive control).
func TestAJobWhoseCreateIsRefusedIsCreatedAgainOnceTheRefusalLifts(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	r, hash, lift, created := refuseARecreation(t, ns, controllerOpts{})
	if notes := stateValues(t, ns, "reloader.job-recreation_"); len(notes) != 1 {
		t.Fatalf("recreations written down while the create is refused: %v, want the one", notes)
	}
	lift()
	wantMigrateCreated(t, ns, hash, 45*time.Second, created, 1, "the Job was created %d times for one change, want 1")
	if notes := stateValues(t, ns, "reloader.job-recreation_"); len(notes) != 0 {
		t.Fatalf("the recreation is still written down: %v", notes)
	}
	waitFor(t, 10*time.Second, "the creation said on the Job", func() (bool, error) {
		return strings.Contains(strings.Join(eventMessages(t, ns, "migrate"), "\n"), "Reloaded x1: Created again"), nil
	})
	if n := jobReloads(t, r, metrics.ResultFailure); n != 1 {
		t.Errorf("reloader_reloads_total{kind=Job,result=failure} is %v, want 1: the refused create counted once", n)
	}
	waitFor(t, 10*time.Second, "the refused create said", func() (bool, error) { return countEvents(t, ns, "migrate", "ReloadFailed") > 0, nil })
	if n := countEvents(t, ns, "migrate", "ReloadFailed"); n != 1 {
		t.Errorf("%d ReloadFailed Events for the refused create, want 1: %v", n, eventMessages(t, ns, "migrate"))
	}

	hash = updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	wantMigrateCreated(t, ns, hash, 30*time.Second, created, 2, "the Job was created %d times for two changes, want 2")
}

// A config that changes again while a Job's create is refused is not lost, nor run twice: once
// the refusal lifts, the Job written down is created with the marker of the newest content,
// which its pods read, and not recreated again for it (checker seed 21@3: it was, a run for no
// change). A third change recreates it exactly once more, the positive control.
func TestAJobWhoseConfigChangesWhileItsCreateIsRefusedIsCreatedOnceWithTheNewestMarker(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	_, _, lift, created := refuseARecreation(t, ns, controllerOpts{})
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	settle(t)
	if !jobGone(ns, "migrate") {
		t.Fatal("a Job was created while creations are refused")
	}
	lift()
	wantMigrateCreated(t, ns, hash, 45*time.Second, created, 1, "the Job was created %d times once the refusal lifted, want 1: with the newest marker")
	hash = updateConfigMap(t, ns, "app-config", map[string]string{"v": "D"})
	wantMigrateCreated(t, ns, hash, 30*time.Second, created, 2, "the Job was created %d times after one more change, want 2")
}

// A Job deleted to be recreated and created late (its create refused, then lifted; or finished
// by the next reloader) reads the content of now. While the config it reads holds content that
// does not validate, it is not created, and a Warning says why; fixing the content creates it
// once, with the fixed content's marker (soak seed 1795734170280237636@4: created on the
// invalid content). One more change recreates it once more, the positive control.
const heldInvalidReason = "ReloadHeldInvalidConfig"

func TestAJobCreatedLateWaitsForItsConfigToValidate(t *testing.T) {
	t.Parallel()
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			t.Parallel()
			ns := cluster.NewNamespace(t)
			first, _, lift, created := refuseARecreationOf(t, ns, controllerOpts{}, envFromCM("app-config"))
			if restart {
				first.stop(t)
			}
			setConfigMapAnnotation(t, ns, "app-config", policy.ValidateAnnotation, `"v=json"`) // "B" is not JSON
			lift()
			if restart {
				startController(t, ns, controllerOpts{})
			}
			waitFor(t, 45*time.Second, "the held creation said", func() (bool, error) {
				return countEvents(t, ns, "migrate", heldInvalidReason) > 0, nil
			})
			settle(t)
			if !jobGone(ns, "migrate") {
				t.Fatal("the Job was created while the config it reads does not validate")
			}
			hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
			wantMigrateCreated(t, ns, hash, 30*time.Second, created, 1, "the Job was created %d times once its config validated, want 1")
			if n := countEvents(t, ns, "migrate", heldInvalidReason); n != 1 {
				t.Errorf("%d %s Events, want 1", n, heldInvalidReason)
			}
			hash = updateConfigMap(t, ns, "app-config", map[string]string{"v": "2"})
			wantMigrateCreated(t, ns, hash, 30*time.Second, created, 2, "the Job was created %d times after one more change, want 2")
		})
	}
}

// A reloader started while a Job's create is still refused starts (it does not wait on the
// create), says it cannot finish the recreation, and creates the Job once the refusal lifts,
// without another restart.
func TestAJobRecreationStillRefusedAtTheStartIsFinishedByTheRunningReloader(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	first, hash, lift, created := refuseARecreation(t, ns, controllerOpts{})
	first.stop(t)
	second := startController(t, ns, controllerOpts{})
	waitFor(t, 30*time.Second, "the unfinished recreation said", func() (bool, error) {
		return strings.Contains(second.log.String(), "cannot finish a Job recreation left unfinished"), nil
	})
	lift()
	wantMigrateCreated(t, ns, hash, 45*time.Second, created, 1, "the Job was created %d times for one change, want 1")
	if notes := stateValues(t, ns, "reloader.job-recreation_"); len(notes) != 0 {
		t.Fatalf("the recreation is still written down: %v", notes)
	}
}

// A Job whose recreation a stopped reloader left unfinished, and whose config changed while no
// reloader ran, is created once at the next start, with the marker of the content its pods read
// now, not created with the written-down marker and then recreated (checker soak seed
// 1795656990008005193: a run twice). One more change recreates it once, the positive control.
func TestAJobRecreationLeftUnfinishedIsCreatedOnceAtTheStartWithTheMarkerOfTheContentNow(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	first, _, lift, created := refuseARecreation(t, ns, controllerOpts{})
	first.stop(t)
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	createdOnceAtTheNextStart(t, ns, hash, lift, created)
}

// A Job under a minimum interval whose recreation's create is refused for a while counts its
// next reload from the moment it is created, not from the decision to recreate it: its
// reloader/last-reload is the creation's (soak seed 1795656990008005199: reloaded again 1.9 s
// after a late creation, under a 3 s interval). The next change waits out the interval and
// then recreates it once, the positive control.
func TestAJobCreatedLateAfterARefusalCountsItsMinimumIntervalFromItsCreation(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	ann := named("configmap", "app-config")
	ann[policy.MinIntervalAnnotation] = "1s"
	createJob(t, ns, "migrate", ann)
	r := startController(t, ns, controllerOpts{})
	settle(t)
	created := jobCreations(t, ns)
	lift := refuseJobCreations(t, ns)
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	// Two refused creates: the second is a retry, 2 s after the decision at the earliest.
	waitFor(t, 30*time.Second, "the create refused twice", func() (bool, error) {
		return strings.Count(r.log.String(), "again after deleting it") >= 2, nil
	})
	lifted := time.Now()
	lift()
	waitFor(t, 30*time.Second, "the Job created again", func() (bool, error) { return created("migrate") == 1, nil })
	last, err := time.Parse(time.RFC3339Nano, getJob(t, ns, "migrate").Annotations[policy.LastReloadAnnotation])
	if err != nil {
		t.Fatalf("the Job created again carries no readable %s: %v", policy.LastReloadAnnotation, err)
	}
	if last.Before(lifted) {
		t.Fatalf("the Job created after %s says it was last reloaded at %s: its minimum interval counts from the decision, not the creation", lifted.Format(time.StampMilli), last.Format(time.StampMilli))
	}
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	wantMigrateCreated(t, ns, hash, 30*time.Second, created, 2, "the Job was created %d times after one more change, want 2")
}

// A Job whose recreation's create was refused is created, once the refusal lifts, with the
// markers and last-reload of the moment of its create. A read of the Job before the create,
// held here while the config changes (retried through an outage in soak seed
// 1795716445547611246@4), used to leave it the markers of before the read: it was created with
// them and run again at once for the change, under its minimum interval.
func TestAJobCreatedLateAfterASlowReadCarriesTheMarkersOfItsCreate(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	ann := named("configmap", "app-config")
	ann[policy.MinIntervalAnnotation] = "5s"
	createJob(t, ns, "migrate", ann)
	armed, holdRead, held, release := holdRequest(func(req *http.Request) bool {
		return req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/jobs/migrate")
	})
	r := startController(t, ns, controllerOpts{wrap: holdRead})
	settle(t)
	created := jobCreations(t, ns)
	lift := refuseJobCreations(t, ns)
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitFor(t, 30*time.Second, "the create refused", func() (bool, error) {
		return strings.Contains(r.log.String(), "again after deleting it"), nil
	})
	armed.Store(true)
	lift()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the reloader did not read the Job again to finish its recreation")
	}
	done := configSyncs(t, r)
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	waitFor(t, 30*time.Second, "C judged: the Job does not exist, nothing is due", func() (bool, error) {
		return configSyncs(t, r) > done, nil
	})
	close(release)
	wantMigrateCreated(t, ns, hash, 30*time.Second, created, 1, "the Job was created %d times once its create was allowed, want 1")
}

// A Job whose create is refused keeps its recreation written down when the state ConfigMap is
// deleted: the running reloader recreates the state from memory with the note (at its next
// write, here the one at its stop), so a reloader started after a stop still creates the Job
// once the refusal lifts (soak seed 1795657828041649784@4 lost such a Job: its note went with
// the state). The Job is created once, with the marker of the content now; one more change
// recreates it once more.
func TestAJobRecreationStaysWrittenDownWhenTheStateConfigMapIsDeletedAndRecreated(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	first, _, lift, created := refuseARecreation(t, ns, controllerOpts{})
	if err := cluster.Client().CoreV1().ConfigMaps(ns).Delete(context.Background(), "reloader-state", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A change the running reloader judges; the Job is gone, so it writes nothing of its own.
	done := configSyncs(t, first)
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	judgedAfter(t, first, done, "C")
	first.stop(t)
	if _, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "reloader-state", metav1.GetOptions{}); err != nil {
		t.Fatalf("the state ConfigMap was not recreated by the stop: %v", err)
	}
	if notes := stateValues(t, ns, "reloader.job-recreation_"); len(notes) != 1 {
		t.Fatalf("the state recreated from memory holds the recreations %v, want the refused one", notes)
	}
	createdOnceAtTheNextStart(t, ns, hash, lift, created)
}

// A Job whose recreation a stopped reloader left unfinished is created at the next start even
// though its namespace left the selection meanwhile (it was deleted), with the marker of the
// content its pods read now; when the namespace comes back, it is not recreated for the change
// its pods already run (soak seed 1795668697359437002@4: created with the written-down marker,
// it was run again for nothing). One more change recreates it once, the positive control.
func aJobRecreationFinishedOutOfTheSelectionIsNotRunAgainWhenItsNamespaceComesBack(t *testing.T) {
	ns, in, selected := selectedNamespace(t)
	first, _, lift, created := refuseARecreation(t, ns, selected)
	first.stop(t)
	labelNamespace(t, ns, nil)
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	lift()
	startController(t, ns, selected)
	waitFor(t, 45*time.Second, "Job migrate created again", func() (bool, error) { return created("migrate") == 1, nil })
	if got := jobEnv(jobNow(ns, "migrate"), cmVar); got != hash {
		t.Errorf("the Job created out of the selection carries the marker %q, want %q: that of the content its pods read", got, hash)
	}
	labelNamespace(t, ns, in)
	settle(t)
	if n := created("migrate"); n != 1 {
		t.Fatalf("the Job was created %d times, want 1: run again for nothing when its namespace came back", n)
	}
	hash = updateConfigMap(t, ns, "app-config", map[string]string{"v": "D"})
	wantMigrateCreated(t, ns, hash, 30*time.Second, created, 2, "the Job was created %d times after one more change, want 2")
}

// createdOnceAtTheNextStart lifts the refusal of Job creations, starts a reloader, and fails
// unless Job migrate is created once with the marker hash; one more change must create it once
// more (the positive control).
func createdOnceAtTheNextStart(t *testing.T, ns, hash string, lift func(), created func(string) int) {
	t.Helper()
	lift()
	startController(t, ns, controllerOpts{})
	wantMigrateCreated(t, ns, hash, 45*time.Second, created, 1, "the Job was created %d times at the start, want 1: with the marker of the content now")
	hash = updateConfigMap(t, ns, "app-config", map[string]string{"v": "D"})
	wantMigrateCreated(t, ns, hash, 30*time.Second, created, 2, "the Job was created %d times after one more change, want 2")
}

// A Job whose config changes after the state ConfigMap was deleted is recreated once: the write
// of its recreation's note, the first write after the delete, recreates the state (soak seed
// 1795657828041649799@4: each retry of that write failed with "not found", the Job was never
// recreated). One more change recreates it once more (the positive control).
func TestAJobIsRecreatedWhenTheStateConfigMapWasDeletedBeforeItsChange(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createJob(t, ns, "migrate", named("configmap", "app-config"))
	startController(t, ns, controllerOpts{})
	settle(t)
	created := jobCreations(t, ns)
	if err := cluster.Client().CoreV1().ConfigMaps(ns).Delete(context.Background(), "reloader-state", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	wantMigrateCreated(t, ns, hash, 30*time.Second, created, 1, "the Job was created %d times for one change, want 1")
	hash = updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	wantMigrateCreated(t, ns, hash, 30*time.Second, created, 2, "the Job was created %d times after one more change, want 2")
}
