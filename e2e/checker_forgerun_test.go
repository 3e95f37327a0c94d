package e2e

import (
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/e2e/checker"
)

// forgeRun writes a forged pending-job annotation on CronJob a.Target, naming a Job
// forged-<n> that nothing else creates, and records it as a forgery whose Job must never exist.
func (w *world) forgeRun(a checker.Action) error {
	if l := w.rec.Workloads.Live(a.Target); l == nil || l.Kind != checker.KindCronJob {
		return nil
	}
	w.mu.Lock()
	w.forgedJobs++
	f := checker.Forgery{Kind: a.Value, Workload: a.Target, Job: fmt.Sprintf("forged-%d", w.forgedJobs), JobNS: w.ns}
	w.mu.Unlock()
	value := f.Job
	if a.Value == checker.ForgeRunOther {
		mac, err := w.runMAC(f.Job)
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
		f.At = time.Now()
		out, err := w.workloads(checker.KindCronJob).Patch(w.ctx, a.Target, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			f.RV = checker.RVOf(out)
			w.rec.Configs.Forged(f)
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
