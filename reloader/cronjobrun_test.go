package reloader_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/reloader"
)

// recordRun writes the reloader/pending-job annotation on CronJob name, as a reload's patch
// leaves it when the reloader stops before the Job exists.
func recordRun(t *testing.T, ns, name, value string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{"reloader/pending-job": value}}})
	if _, err := cluster.Client().BatchV1().CronJobs(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// signedRun is the annotation value the reloader of ns (its hash key made by a first start)
// records for a run of Job job of cj.
func signedRun(t *testing.T, ns string, cj *batchv1.CronJob, job string) string {
	t.Helper()
	return reloader.RecordedRun(hashKeyIn(t, ns), cj, job)
}

// jobNames names the Jobs the object of uid controls.
func jobNames(t *testing.T, ns string, uid types.UID) []string {
	t.Helper()
	var names []string
	for _, j := range jobsOf(t, ns, uid) {
		names = append(names, j.Name)
	}
	return names
}

// pendingJob is CronJob name's reloader/pending-job annotation.
func pendingJob(t *testing.T, ns, name string) string {
	t.Helper()
	cj, err := cluster.Client().BatchV1().CronJobs(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cj.Annotations["reloader/pending-job"]
}

// Anyone who may patch a CronJob may write reloader/pending-job on it. A value the reloader did
// not write starts no Job: one without a MAC (as earlier versions and a person write it), one
// signed under another key, and one signed for another CronJob are removed, each with one
// Warning. The value the reloader records for its own run is started (the positive control).
func TestAPendingJobTheReloaderDidNotRecordRunsNoJob(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	cjs := map[string]*batchv1.CronJob{}
	for _, n := range []string{"bare", "otherkey", "othercj", "ours"} {
		cjs[n] = createCronJob(t, ns, n, named("configmap", "app-config"))
	}
	r := startController(t, ns, controllerOpts{}) // makes the hash key
	r.stop(t)
	other, err := confighash.NewKey([]byte("another reloader's key, 32 bytes"))
	if err != nil {
		t.Fatal(err)
	}
	recordRun(t, ns, "bare", "bare-reload-abc1234")
	recordRun(t, ns, "otherkey", reloader.RecordedRun(other, cjs["otherkey"], "otherkey-reload-abc1234"))
	recordRun(t, ns, "othercj", signedRun(t, ns, cjs["ours"], "othercj-reload-abc1234"))
	recordRun(t, ns, "ours", signedRun(t, ns, cjs["ours"], "ours-reload-abc1234"))

	r = startController(t, ns, controllerOpts{})
	waitFor(t, 30*time.Second, "our recorded run", func() (bool, error) { return len(jobsOf(t, ns, cjs["ours"].UID)) == 1, nil })
	waitFor(t, 10*time.Second, "the forged runs removed", func() (bool, error) {
		for _, n := range []string{"bare", "otherkey", "othercj", "ours"} {
			if pendingJob(t, ns, n) != "" {
				return false, nil
			}
		}
		return true, nil
	})
	settle(t)
	for _, n := range []string{"bare", "otherkey", "othercj"} {
		if jobs := jobNames(t, ns, cjs[n].UID); len(jobs) != 0 {
			t.Errorf("CronJob %s: Jobs %v for a run the reloader did not record", n, jobs)
		}
		if got := countEvents(t, ns, n, reloader.ReasonPendingJobDropped); got != 1 {
			t.Errorf("CronJob %s: %d Warnings %s, want 1", n, got, reloader.ReasonPendingJobDropped)
		}
	}
	if jobs := jobNames(t, ns, cjs["ours"].UID); len(jobs) != 1 || jobs[0] != "ours-reload-abc1234" {
		t.Errorf("our recorded run: Jobs %v, want ours-reload-abc1234", jobs)
	}
	if got := strings.Count(r.log.String(), "dropped a Job run recorded on a CronJob"); got != 3 {
		t.Errorf("the log says %d runs dropped, want 3", got)
	}
}

// A forged run on a CronJob the reloader does not reload (no annotation), written before its
// start, starts nothing either, while a change still runs a Job of an annotated one (the
// positive control).
func TestAPendingJobOnACronJobTheReloaderDoesNotReloadRunsNoJob(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	plain := createCronJob(t, ns, "plain", nil)
	watched := createCronJob(t, ns, "watched", named("configmap", "app-config"))
	recordRun(t, ns, "plain", "plain-reload-abc1234")
	startController(t, ns, controllerOpts{})
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitFor(t, 30*time.Second, "the annotated CronJob's run", func() (bool, error) { return len(jobsOf(t, ns, watched.UID)) == 1, nil })
	settle(t)
	if jobs := jobNames(t, ns, plain.UID); len(jobs) != 0 {
		t.Errorf("Jobs %v of a CronJob the reloader does not reload", jobs)
	}
}

// A reloader judges recorded runs only where it watches. Out of its namespace selection a run
// it cannot verify may be another reloader's (signed under that one's key): it is left alone,
// with no Warning, while the same forgery inside the selection is removed (the positive
// control). A run of its own is still finished there, as it began it (seed 156@10: a reloader
// dropped the runs other sequences' reloaders had recorded in their namespaces).
func TestAPendingJobOutsideTheSelectionIsLeftToWhoeverWatchesIt(t *testing.T) {
	t.Parallel()
	stateNS, in, out := cluster.NewNamespace(t), cluster.NewNamespace(t), cluster.NewNamespace(t)
	labelNamespace(t, in, map[string]string{"reloader-test": in})
	for _, ns := range []string{in, out} {
		createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	}
	forgedIn := createCronJob(t, in, "forged", named("configmap", "app-config"))
	theirs := createCronJob(t, out, "theirs", named("configmap", "app-config"))
	ours := createCronJob(t, out, "ours", named("configmap", "app-config"))
	opts := controllerOpts{tweak: func(o *reloader.Options) {
		o.Namespace = ""
		o.NamespaceSelector = labels.SelectorFromSet(labels.Set{"reloader-test": in})
	}}
	startController(t, stateNS, opts).stop(t) // makes the hash key
	recordRun(t, in, "forged", "forged-reload-abc1234")
	recordRun(t, out, "theirs", "theirs-reload-abc1234")
	recordRun(t, out, "ours", signedRun(t, stateNS, ours, "ours-reload-abc1234"))

	startController(t, stateNS, opts)
	waitFor(t, 30*time.Second, "the forged run inside the selection removed", func() (bool, error) {
		return pendingJob(t, in, "forged") == "", nil
	})
	waitFor(t, 30*time.Second, "our own run outside the selection finished", func() (bool, error) {
		return len(jobsOf(t, out, ours.UID)) == 1 && pendingJob(t, out, "ours") == "", nil
	})
	settle(t)
	if got := countEvents(t, in, "forged", reloader.ReasonPendingJobDropped); got != 1 {
		t.Errorf("inside the selection: %d Warnings %s, want 1", got, reloader.ReasonPendingJobDropped)
	}
	if v := pendingJob(t, out, "theirs"); v != "theirs-reload-abc1234" {
		t.Errorf("outside the selection, a run it cannot verify was changed to %q", v)
	}
	if got := countEvents(t, out, "theirs", reloader.ReasonPendingJobDropped); got != 0 {
		t.Errorf("outside the selection: %d Warnings %s, want none", got, reloader.ReasonPendingJobDropped)
	}
	for _, cj := range []*batchv1.CronJob{forgedIn, theirs} {
		if jobs := jobNames(t, cj.Namespace, cj.UID); len(jobs) != 0 {
			t.Errorf("CronJob %s/%s: Jobs %v for a run the reloader did not record", cj.Namespace, cj.Name, jobs)
		}
	}
}
