package reloader_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// setSuspend sets CronJob name's spec.suspend.
func setSuspend(t *testing.T, ns, name string, suspend bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"suspend":%t}}`, suspend)
	if _, err := cluster.Client().BatchV1().CronJobs(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// suspendedCronJob creates CronJob name, suspended, reloading on app-config.
func suspendedCronJob(t *testing.T, ns, name string) *batchv1.CronJob {
	t.Helper()
	return createCronJobFrom(t, ns, name, func(cj *batchv1.CronJob) {
		cj.Annotations = named("configmap", "app-config")
		cj.Spec.Suspend = new(true)
	})
}

// wantJobs settles, then fails unless the CronJob uid ran n Jobs; it returns them.
func wantJobs(t *testing.T, ns string, uid types.UID, n int, what string) []batchv1.Job {
	t.Helper()
	settle(t)
	jobs := jobsOf(t, ns, uid)
	if len(jobs) != n {
		t.Fatalf("%s: %d Jobs, want %d", what, len(jobs), n)
	}
	return jobs
}

// A suspended CronJob runs no Job for config changes, and says why once, not per change; a
// restart of the reloader runs none either. Its resume runs one Job, with the content of the
// last change, for all of them. The positive control, a CronJob that is not suspended, runs one
// Job per change.
func TestASuspendedCronJobRunsNoJobUntilItsResumeThenOne(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	held := suspendedCronJob(t, ns, "held")
	control := createCronJob(t, ns, "control", named("configmap", "app-config"))
	first := startController(t, ns, controllerOpts{})
	settle(t)

	updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitFor(t, 30*time.Second, "the control's Job", func() (bool, error) { return len(jobsOf(t, ns, control.UID)) == 1, nil })
	wantJobs(t, ns, held.UID, 0, "suspended, after one change")
	waitFor(t, 10*time.Second, "the suspended CronJob's Warning", func() (bool, error) {
		return countEvents(t, ns, "held", "ReloadHeldSuspended") == 1, nil
	})
	hashC := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	waitFor(t, 30*time.Second, "the control's second Job", func() (bool, error) { return len(jobsOf(t, ns, control.UID)) == 2, nil })
	wantJobs(t, ns, held.UID, 0, "suspended, after two changes")
	if n := countEvents(t, ns, "held", "ReloadHeldSuspended"); n != 1 {
		t.Fatalf("%d ReloadHeldSuspended Events for one suspension, want 1", n)
	}

	first.stop(t) // abandons everything, as a crash would
	startController(t, ns, controllerOpts{})
	waitFor(t, 10*time.Second, "the restarted reloader's Warning", func() (bool, error) {
		return countEvents(t, ns, "held", "ReloadHeldSuspended") == 2, nil
	})
	wantJobs(t, ns, held.UID, 0, "suspended, after a restart")

	setSuspend(t, ns, "held", false)
	waitFor(t, 30*time.Second, "the resumed CronJob's Job", func() (bool, error) { return len(jobsOf(t, ns, held.UID)) > 0, nil })
	jobs := wantJobs(t, ns, held.UID, 1, "resumed after two changes")
	if got := jobEnv(&jobs[0], cmVar); got != hashC {
		t.Fatalf("the Job run at the resume reads %q, want the last content %q", got, hashC)
	}
	wantJobs(t, ns, control.UID, 2, "the control, after the resume of the other")
}

// A change reverted while the CronJob was suspended runs no Job at its resume: its job template
// already holds that content. A change after the resume runs one (the positive control).
func TestAChangeRevertedWhileACronJobIsSuspendedRunsNoJobAtItsResume(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	held := suspendedCronJob(t, ns, "held")
	startController(t, ns, controllerOpts{})
	settle(t)

	updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitFor(t, 10*time.Second, "the suspended CronJob's Warning", func() (bool, error) {
		return countEvents(t, ns, "held", "ReloadHeldSuspended") == 1, nil
	})
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	// The revert is seen while the CronJob is suspended. The config and CronJob watches are
	// separate streams: a resume seen before the revert is a resume with B, then a change to A,
	// and each runs a Job (seen once in CI, 2026-12-04).
	settle(t)
	setSuspend(t, ns, "held", false)
	wantJobs(t, ns, held.UID, 0, "resumed after a reverted change")

	hashD := updateConfigMap(t, ns, "app-config", map[string]string{"v": "D"})
	waitFor(t, 30*time.Second, "a Job for the change after the resume", func() (bool, error) { return len(jobsOf(t, ns, held.UID)) > 0, nil })
	jobs := wantJobs(t, ns, held.UID, 1, "one change after the resume")
	if got := jobEnv(&jobs[0], cmVar); got != hashD {
		t.Fatalf("the Job reads %q, want %q", got, hashD)
	}
}

// A reload recorded on a CronJob whose Job was not created yet (the reloader stopped in
// between; simulated by the annotation that reload's patch leaves) and that is suspended before
// the next start runs that Job only when it is resumed, once.
func TestAPendingJobOfASuspendedCronJobWaitsForItsResume(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	held := suspendedCronJob(t, ns, "held")
	startController(t, ns, controllerOpts{}).stop(t) // makes the hash key runs are signed with
	recordRun(t, ns, "held", signedRun(t, ns, held, "held-reload-abc1234"))
	startController(t, ns, controllerOpts{})
	wantJobs(t, ns, held.UID, 0, "suspended with a pending Job, after the start")

	setSuspend(t, ns, "held", false)
	waitFor(t, 30*time.Second, "the pending Job at the resume", func() (bool, error) { return len(jobsOf(t, ns, held.UID)) > 0, nil })
	if jobs := wantJobs(t, ns, held.UID, 1, "resumed with a pending Job"); jobs[0].Name != "held-reload-abc1234" {
		t.Fatalf("Job %s, want held-reload-abc1234", jobs[0].Name)
	}
}

// The other order of the test above: a resume the reloader sees before the revert resumes with
// the held change, and the revert is then a change of its own. Each runs a Job, in that order,
// and neither twice.
func TestAResumeSeenBeforeARevertRunsTheHeldChangeThenTheRevert(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	held := suspendedCronJob(t, ns, "held")
	startController(t, ns, controllerOpts{})
	settle(t)

	hashB := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitFor(t, 10*time.Second, "the suspended CronJob's Warning", func() (bool, error) {
		return countEvents(t, ns, "held", "ReloadHeldSuspended") == 1, nil
	})
	setSuspend(t, ns, "held", false)
	first := wantJobs(t, ns, held.UID, 1, "resumed with the held change")
	if got := jobEnv(&first[0], cmVar); got != hashB {
		t.Fatalf("the Job run at the resume reads %q, want the held change %q", got, hashB)
	}
	hashA := updateConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	jobs := wantJobs(t, ns, held.UID, 2, "the revert after the resume")
	var reads []string
	for i := range jobs {
		reads = append(reads, jobEnv(&jobs[i], cmVar))
	}
	if !slices.Contains(reads, hashA) || !slices.Contains(reads, hashB) {
		t.Fatalf("the Jobs read %q, want one each of %q and %q", reads, hashB, hashA)
	}
}
