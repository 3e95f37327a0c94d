package e2e

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/e2e/checker"
	"github.com/reloader/reloader/policy"
)

// workloadEdits are the checker's writes of workloads: creations, deletions, edits of their
// references, modes and gates, the pauses their owner makes, and Argo's part for Rollouts.
type workloadEdits struct {
	*env
	mu sync.Mutex
	// resumes: the owner's resume of each Deployment it paused (gen 9), by name.
	resumes map[string]func()
}

func (wl *workloadEdits) createWorkload(a checker.Action) error {
	kind := checker.KindOrDefault(a.Kind)
	meta := map[string]string{"checker/refs": checker.RefsNote(a.Refs)}
	tmpl := checker.PodTemplate(kind, a.Target, a.Refs)
	broken := wl.seq.Rollouts && a.Broken && kind == checker.KindDeployment
	if broken {
		checker.BreakTemplate(&tmpl)
	}
	ann := meta
	if a.OnTemplate {
		tmpl.Annotations = map[string]string{}
		ann = tmpl.Annotations
	}
	checker.SetMode(ann, a.Refs, a.Mode)
	at := time.Now()
	checker.SetGate(ann, a.Gate, at)
	lagged := checker.StakaterVars(&tmpl, a)
	u, err := checker.NewWorkload(kind, a.Target, meta, tmpl)
	if err != nil {
		return err
	}
	if wl.seq.Rollouts && kind == checker.KindDeployment {
		if err := rolloutSpec(u, broken); err != nil {
			return err
		}
	}
	out, err := wl.workloads(kind).Create(wl.ctx, u, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	o, err := checker.DecodeWorkload(kind, out)
	if err != nil {
		return err
	}
	wl.rec.Workloads.Created(a, kind, out, o, at, lagged, broken)
	if kind == checker.KindRollout {
		go wl.actAsArgo(a.Target, out.GetUID(), a.Dur)
	}
	return nil
}

func (wl *workloadEdits) deleteWorkload(name string) error {
	l := wl.rec.Workloads.Live(name)
	if l == nil {
		return errNotThere
	}
	uid := wl.rec.Workloads.UIDOf(l)
	// The reloader deleted the Job to create it again, and has not yet (a refusal holds the
	// creation): the deletion asked for is done. Its life ends here, so that a Job the checker
	// creates under the name next is not taken for the reloader's creation (seed 2@7: a
	// workload replaced at once, its new Job counted as a restart of the old one).
	jobGone := func(err error) bool {
		if !apierrors.IsNotFound(err) || l.Kind != checker.KindJob {
			return false
		}
		wl.rec.Workloads.JobGone(l, time.Now())
		return true
	}
	o, err := wl.getWorkload(wl.ctx, l.Kind, name)
	if jobGone(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if o.Obj.GetUID() != uid {
		if l.Kind == checker.KindJob { // created again by the reloader, not yet shown by the watch: retried
			return fmt.Errorf("job %s has a UID the watch has not shown yet", name)
		}
		return errNotThere
	}
	at, rv := time.Now(), o.Obj.GetResourceVersion()
	background := metav1.DeletePropagationBackground
	// The precondition makes the generation read the last one: a reload in between fails it.
	err = wl.workloads(l.Kind).Delete(wl.ctx, name, metav1.DeleteOptions{PropagationPolicy: &background,
		Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	if jobGone(err) {
		return nil
	}
	if err == nil {
		wl.rec.Workloads.Deleted(l, at, o.Obj.GetGeneration())
	}
	return err
}

// updateWorkload applies edit to the live workload name and records what it set.
func (wl *workloadEdits) updateWorkload(name string, edit func(o *checker.Object, onTemplate bool) checker.Edited) error {
	l := wl.rec.Workloads.Live(name)
	if l == nil {
		return errNotThere
	}
	o, err := wl.getWorkload(wl.ctx, l.Kind, name)
	if err != nil {
		return err
	}
	uid := wl.rec.Workloads.UIDOf(l)
	if o.Obj.GetUID() != uid {
		return errNotThere
	}
	at, before, read := time.Now(), o.Obj.GetGeneration(), o.Obj.GetResourceVersion()
	e := edit(o, l.OnTemplate)
	if err := o.Store(); err != nil {
		return err
	}
	out, err := wl.workloads(l.Kind).Update(wl.ctx, o.Obj, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	// An update that changes nothing writes nothing: the version it returns is the last
	// writer's, perhaps the reloader's (seed 1795681571291661043@4: a gate set to what it was
	// took the reload before it for the checker's, and its rollback went unpaired).
	if out.GetResourceVersion() != read {
		wl.rec.Workloads.OwnWrite(checker.RVOf(out))
	}
	wl.rec.Workloads.Edited(l, at, checker.RVOf(out), e, out.GetGeneration() != before)
	return nil
}

// getWorkload reads the live workload of kind and name.
func (wl *workloadEdits) getWorkload(ctx context.Context, kind, name string) (*checker.Object, error) {
	u, err := wl.workloads(kind).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return checker.DecodeWorkload(kind, u)
}

// gateEdit sets the gate of action a on its workload.
func (wl *workloadEdits) gateEdit(a checker.Action) func() error {
	return func() error {
		return wl.updateWorkload(a.Target, func(o *checker.Object, onTemplate bool) checker.Edited {
			ann := o.Annotations(onTemplate)
			checker.SetGate(ann, a.Gate, time.Now())
			o.SetAnnotations(onTemplate, ann)
			return checker.Edited{Gate: &a.Gate}
		})
	}
}

// modeOf is the annotation mode the recorder holds for the live workload name ("" if none).
func (wl *workloadEdits) modeOf(name string) string {
	l := wl.rec.Workloads.Live(name)
	if l == nil {
		return ""
	}
	return wl.rec.Workloads.ModeNow(l)
}

// openGates gives every live workload whose gate holds its reloads one that does not: none, or
// a window open all day where --reload-window is closed. Its held reloads then happen, once.
func (wl *workloadEdits) openGates() {
	held := wl.rec.Workloads.HeldByGates(wl.seq.Window)
	open := checker.Action{Op: "gate"}
	if wl.seq.Window == "closed" {
		open.Gate = checker.GateSpec{Kind: "window", Value: "open"}
	}
	for _, name := range held {
		open.Target = name
		wl.must(wl.retryRefused(open.String(), wl.gateEdit(open)))
	}
}

// ownerPause pauses Deployment name as its owner would, and resumes it after d in the
// background (or at the next heal). A Deployment under a pause period of the reloader's is
// left alone: that pause is the reloader's to end.
func (wl *workloadEdits) ownerPause(name string, d time.Duration) error {
	l := wl.rec.Workloads.Live(name)
	if l == nil {
		return nil
	}
	if wl.rec.Workloads.OwnerPauseSkips(l) {
		return nil
	}
	wl.faults["owner pause"]++
	if err := wl.retry("owner-pause "+name, func() error { return wl.setPaused(name, true) }); err != nil {
		return err
	}
	var once sync.Once
	resume := func() {
		once.Do(func() {
			if err := wl.retry("owner-resume "+name, func() error { return wl.setPaused(name, false) }); err != nil {
				wl.t.Errorf("resume %s: %v", name, err)
			}
		})
	}
	wl.mu.Lock()
	wl.resumes[name] = resume
	wl.mu.Unlock()
	time.AfterFunc(d, func() {
		resume()
		wl.mu.Lock()
		delete(wl.resumes, name)
		wl.mu.Unlock()
	})
	return nil
}

// setPaused writes Deployment name's spec.paused, as `kubectl rollout pause` and `resume` do.
func (wl *workloadEdits) setPaused(name string, paused bool) error {
	return wl.updateWorkload(name, func(o *checker.Object, _ bool) checker.Edited {
		if paused {
			_ = unstructured.SetNestedField(o.Obj.Object, true, "spec", "paused")
		} else {
			unstructured.RemoveNestedField(o.Obj.Object, "spec", "paused")
		}
		return checker.Edited{Paused: &paused}
	})
}

// resumeAll resumes every Deployment its owner paused, as heal ends every fault.
func (wl *workloadEdits) resumeAll() {
	wl.mu.Lock()
	var all []func()
	for name, resume := range wl.resumes {
		all = append(all, resume)
		delete(wl.resumes, name)
	}
	wl.mu.Unlock()
	for _, resume := range all {
		resume()
	}
}

// actAsArgo writes Rollout name's status as Argo's controller would, until it is gone: Healthy
// for its first generation and for a rollback; for any other new generation, a pause step for
// pauseFor (if set), then Healthy. Each pause step is recorded as its owner's pause.
func (wl *workloadEdits) actAsArgo(name string, uid types.UID, pauseFor time.Duration) {
	res := wl.workloads(checker.KindRollout)
	var handled int64
	var promoteAt time.Time
	for wl.ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		u, err := res.Get(wl.ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && u.GetUID() != uid {
			return
		}
		if err != nil {
			continue
		}
		gen := u.GetGeneration()
		switch {
		case gen != handled:
			h := policy.ParseHistory(u.GetAnnotations()[policy.HistoryAnnotation])
			pause := handled != 0 && pauseFor > 0 && !(len(h) > 0 && h[0].RolledBack)
			status := map[string]any{"observedGeneration": fmt.Sprint(gen), "phase": "Healthy"}
			if pause {
				status = map[string]any{"observedGeneration": fmt.Sprint(gen), "phase": "Paused", "message": "CanaryPauseStep", "controllerPause": true,
					"pauseConditions": []any{map[string]any{"reason": "CanaryPauseStep", "startTime": time.Now().UTC().Format(time.RFC3339)}}}
			}
			u.Object["status"] = status
			at := time.Now()
			if _, err := res.UpdateStatus(wl.ctx, u, metav1.UpdateOptions{}); err != nil {
				continue
			}
			handled = gen
			if pause {
				promoteAt = at.Add(pauseFor)
				wl.argoPaused(uid, true, at)
			}
		case !promoteAt.IsZero() && time.Now().After(promoteAt):
			u.Object["status"] = map[string]any{"observedGeneration": fmt.Sprint(gen), "phase": "Healthy"}
			if _, err := res.UpdateStatus(wl.ctx, u, metav1.UpdateOptions{}); err != nil {
				continue
			}
			promoteAt = time.Time{}
			wl.argoPaused(uid, false, time.Now())
		}
	}
}

// argoPaused records a pause step of Rollout uid beginning (paused) or ending, as its owner's
// pause: a reload is not timed out nor rolled back while it lasts.
func (wl *workloadEdits) argoPaused(uid types.UID, paused bool, at time.Time) {
	if wl.rec.Workloads.ArgoPaused(uid, paused, at) {
		wl.faults["Argo pause step"]++
	}
}
