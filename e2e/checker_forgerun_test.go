package e2e

import (
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/confighash"
)

// Generator version 10: a forged CronJob run. The reloader names the Job a CronJob's reload is
// to run in the CronJob's reloader/pending-job annotation, "<job> <mac>", signed under the hash
// key for that CronJob's UID (reloader/cronjobrun.go). Whoever may patch a CronJob may write
// that annotation: one without a MAC, or signed under the real key for another CronJob, must
// start no Job (the forged Job never exists: `forged:`; and a CronJob runs one Job per reload
// of its template: `runs:`).

// forgeRunEvery: how often, after a main action, the eleventh stream forges a run.
const forgeRunEvery = 8

// Forged runs.
const (
	forgeRunUnsigned = "run-unsigned" // a Job name with no MAC
	forgeRunOther    = "run-other"    // signed under the reloader's key, for another CronJob's UID
)

// forgeRun draws a forged run of a live CronJob. Nil when none lives.
func (g *generator) forgeRun() []action {
	var live []string
	for _, w := range workloadNames {
		if g.workloads[w] && g.kinds[w] == kindCronJob {
			live = append(live, w)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return []action{{Op: "forge-run", Target: pick(g.eleventh, live), Value: pick(g.eleventh, []string{forgeRunUnsigned, forgeRunOther}),
		Pause: time.Duration(g.eleventh.IntN(400)) * time.Millisecond}}
}

// forgeRun writes a forged pending-job annotation on CronJob a.Target, naming a Job
// forged-<n> that nothing else creates, and records it as a forgery whose Job must never exist.
func (w *world) forgeRun(a action) error {
	if l := w.rec.live(a.Target); l == nil || l.kind != kindCronJob {
		return nil
	}
	w.mu.Lock()
	w.forgedJobs++
	f := forgery{kind: a.Value, workload: a.Target, job: fmt.Sprintf("forged-%d", w.forgedJobs), jobNS: w.ns}
	w.mu.Unlock()
	value := f.job
	if a.Value == forgeRunOther {
		mac, err := w.runMAC(f.job)
		if err != nil {
			return err
		}
		value += " " + mac
	}
	w.faults["forged "+a.Value]++
	return w.retry(a.String(), func() error {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{"reloader/pending-job": value}}})
		if err != nil {
			return err
		}
		f.at = time.Now()
		out, err := w.workloads(kindCronJob).Patch(w.ctx, a.Target, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			f.rv = rvOf(out)
			w.rec.forged(f)
		}
		return err
	})
}

// runMAC signs job as the reloader signs a run, under its own key (read from its Secret, as
// anyone who may read it can), for a CronJob UID that is not the target's.
func (w *world) runMAC(job string) (string, error) {
	secret, err := w.reloaderKey(make([]byte, 32))
	if err != nil {
		return "", fmt.Errorf("read the hash key to sign a run: %w", err)
	}
	k, err := confighash.NewKey(secret)
	if err != nil {
		return "", fmt.Errorf("the key to sign a run with: %w", err)
	}
	other := fmt.Sprintf("00000000-0000-0000-0000-%012d", w.rnd.IntN(1e9))
	return k.NoteMAC("cronjob-run", []byte(other+"\x00"+job)), nil
}

// reloaderKey is the reloader's hash key, read from its Secret as anyone who may read it can,
// or fallback while that Secret is gone (a hashkey action deleted it and no replica has made
// another yet): a forgery is then signed under another key, and must create nothing all the same.
func (w *world) reloaderKey(fallback []byte) ([]byte, error) {
	s, err := w.cl.Client().CoreV1().Secrets(w.ns).Get(w.ctx, "reloader-hash-key", metav1.GetOptions{})
	switch {
	case err == nil:
		return s.Data["key"], nil
	case apierrors.IsNotFound(err):
		w.t.Logf("no hash key Secret: a forgery is signed under another key")
		return fallback, nil
	}
	return nil, err
}
