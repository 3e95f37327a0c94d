package e2e

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reloader/reloader/e2e/checker"
)

// ownerPause pauses Deployment name as its owner would, and resumes it after d in the
// background (or at the next heal). A Deployment under a pause period of the reloader's is
// left alone: that pause is the reloader's to end.
func (w *world) ownerPause(name string, d time.Duration) error {
	l := w.rec.Workloads.Live(name)
	if l == nil {
		return nil
	}
	if w.rec.Workloads.OwnerPauseSkips(l) {
		return nil
	}
	w.faults["owner pause"]++
	if err := w.retry("owner-pause "+name, func() error { return w.setPaused(name, true) }); err != nil {
		return err
	}
	var once sync.Once
	resume := func() {
		once.Do(func() {
			if err := w.retry("owner-resume "+name, func() error { return w.setPaused(name, false) }); err != nil {
				w.t.Errorf("resume %s: %v", name, err)
			}
		})
	}
	w.mu.Lock()
	w.resumes[name] = resume
	w.mu.Unlock()
	time.AfterFunc(d, func() {
		resume()
		w.mu.Lock()
		delete(w.resumes, name)
		w.mu.Unlock()
	})
	return nil
}

// setPaused writes Deployment name's spec.paused, as `kubectl rollout pause` and `resume` do.
func (w *world) setPaused(name string, paused bool) error {
	return w.updateWorkload(name, func(o *checker.Object, _ bool) checker.Edited {
		if paused {
			_ = unstructured.SetNestedField(o.Obj.Object, true, "spec", "paused")
		} else {
			unstructured.RemoveNestedField(o.Obj.Object, "spec", "paused")
		}
		return checker.Edited{Paused: &paused}
	})
}

// resumeAll resumes every Deployment its owner paused, as heal ends every fault.
func (w *world) resumeAll() {
	w.mu.Lock()
	var all []func()
	for name, resume := range w.resumes {
		all = append(all, resume)
		delete(w.resumes, name)
	}
	w.mu.Unlock()
	for _, resume := range all {
		resume()
	}
}
