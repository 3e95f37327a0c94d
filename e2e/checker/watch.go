package checker

import (
	"context"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/reloader/reloader/policy"
)

// RVOf is o's resourceVersion as a number (0 if it does not parse).
func RVOf(o metav1.Object) int64 {
	n, _ := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
	return n
}

// Watch follows the namespace's workloads of every kind from resourceVersion rv until ctx ends.
// client-go's RetryWatcher resumes across broken connections; if the API server can no longer
// serve from the last version seen (410 Gone), a list catches up and the gap is counted.
func (r *Recorder) Watch(ctx context.Context, ns, rv string, dyn dynamic.Interface) {
	for kind, k := range WorkloadKinds {
		if kind == KindRollout && !r.argo {
			continue // no Rollout CRD
		}
		go r.watchKind(ctx, kind, dyn.Resource(k.GVR).Namespace(ns), rv)
	}
}

func (r *Recorder) watchKind(ctx context.Context, kind string, client dynamic.ResourceInterface, rv string) {
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return client.Watch(ctx, o)
	}}
	for ctx.Err() == nil {
		w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
		if err != nil {
			return
		}
		rv = r.follow(ctx, kind, w, rv)
		w.Stop()
		if list, err := client.List(ctx, metav1.ListOptions{}); err == nil && rv == "" {
			r.mu.Lock()
			r.gaps++
			r.mu.Unlock()
			for i := range list.Items {
				r.Seen(kind, &list.Items[i], false)
			}
			rv = list.GetResourceVersion()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// follow records the watch's events until it ends, and returns the last version seen, or "" when
// the watch ended on an error.
func (r *Recorder) follow(ctx context.Context, kind string, w watch.Interface, rv string) string {
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv
			}
			if ev.Type == watch.Error {
				return ""
			}
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				rv = u.GetResourceVersion()
				if ev.Type == watch.Modified || ev.Type == watch.Added {
					r.Seen(kind, u, true)
				}
				if ev.Type == watch.Deleted && kind == KindJob {
					r.jobDeleted(u)
				}
			}
		}
	}
}

// Behind reports whether u, a workload as listed, has a template other than the last one the
// watch showed.
func (r *Recorder) Behind(kind string, u *unstructured.Unstructured) bool {
	o, err := DecodeWorkload(kind, u)
	if err != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.workloads[u.GetUID()]
	return w != nil && (!equality.Semantic.DeepEqual(w.seenTmpl, o.Template) || w.paused != pausedOf(kind, u))
}

// pausedOf reports a Deployment's spec.paused.
func pausedOf(kind string, u *unstructured.Unstructured) bool {
	paused, _, _ := unstructured.NestedBool(u.Object, "spec", "paused")
	return kind == KindDeployment && paused
}

// Seen records a workload's new template, and a Job's creation: a CronJob's run, or a Job
// created again. watched says u is a watch event, right after the one (or the list) before it.
func (r *Recorder) Seen(kind string, u *unstructured.Unstructured, watched bool) {
	o, err := DecodeWorkload(kind, u)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if kind == KindJob {
		if r.jobsSeen[u.GetUID()] {
			return
		}
		r.jobsSeen[u.GetUID()] = true
		r.jobCreated(o)
		return
	}
	// A workload's own creation is no restart: its life starts with that template.
	w := r.workloads[u.GetUID()]
	if w == nil {
		return
	}
	gen, prev := u.GetGeneration(), w.watchGen
	w.watchGen = gen
	if equality.Semantic.DeepEqual(w.seenTmpl, o.Template) && watched && prev > 0 && gen == prev+1 {
		w.sameTmpl = append(w.sameTmpl, genMove{RVOf(u), gen})
	}
	write := markerWrite{RVOf(u), touchedConfigs(&w.seenTmpl, &o.Template)}
	if len(write.touched) > 0 {
		w.seenMarks = markers(&w.seenTmpl)
	}
	w.seenTmpl = *o.Template.DeepCopy()
	// A paused Deployment restarts nothing until it is resumed, and its resume rolls out the
	// template as it is then: the pods read their configs at the resume.
	// A template change while its owner pauses it is the reloader's reload all the same (gen 9):
	// its rollout waits for the resume, and its clock with it.
	wasPaused := w.paused
	if w.paused = pausedOf(kind, u); w.paused && !wasPaused {
		w.pausedAt = time.Now()
	}
	if wasPaused && !w.paused {
		w.unpauses = append(w.unpauses, change{rv: RVOf(u), at: time.Now()})
	}
	if w.paused && !w.ownerPaused() {
		w.folding = append(w.folding, write)
		return
	}
	if equality.Semantic.DeepEqual(w.tmpl, o.Template) {
		w.folding = nil
		return
	}
	if len(w.folding) > 0 {
		w.folding = append(w.folding, write)
	}
	r.restarted(w, o, RVOf(u))
	if wasPaused && !w.paused {
		w.resumes = append(w.resumes, resume{restart: len(w.restarts) - 1, pausedAt: w.pausedAt, carried: len(write.touched) > 0})
	}
}

// resume is a restart of a paused Deployment at its resume, and when its pause began; carried:
// the resume's own write changed a marker (a reload rode on it).
type resume struct {
	restart  int
	pausedAt time.Time
	carried  bool
}

// restarted records a reload of w that gave it o's template. The caller holds r.mu.
func (r *Recorder) restarted(w *WorkloadLife, o *Object, rv int64) {
	w.touched = append(w.touched, touchedConfigs(&w.tmpl, &o.Template))
	if len(w.folding) > 0 {
		if w.folded == nil {
			w.folded = map[int][]markerWrite{}
		}
		w.folded[len(w.restarts)], w.folding = w.folding, nil
		r.refold(w, len(w.restarts))
	}
	w.marks = append(w.marks, markers(&o.Template))
	w.found = append(w.found, w.seenMarks)
	var head policy.Entry
	if h := policy.ParseHistory(o.Obj.GetAnnotations()[policy.HistoryAnnotation]); len(h) > 0 {
		head = h[0]
	}
	w.rolledBack = append(w.rolledBack, head.RolledBack && !(w.lastHead.RolledBack && w.lastHead.At.Equal(head.At)))
	w.lastHead = head
	w.restartAt = append(w.restartAt, time.Now())
	w.tmpl = *o.Template.DeepCopy()
	w.restarts = append(w.restarts, rv)
	r.changedAt = time.Now()
}

// jobCreated records a new Job: a run of the CronJob that controls it, or a Job workload
// created again by the reloader (a new UID under its name). The caller holds r.mu.
func (r *Recorder) jobCreated(o *Object) {
	if cj := r.workloads[o.controller()]; cj != nil && cj.Kind == KindCronJob {
		cj.runs = append(cj.runs, RVOf(o.Obj))
		r.changedAt = time.Now()
		return
	}
	for _, w := range r.workloads {
		if w.Kind == KindJob && w.name == o.Obj.GetName() && w.deletedAt.IsZero() && w.uid != o.Obj.GetUID() && w.createdRV < RVOf(o.Obj) {
			r.workloads[o.Obj.GetUID()] = w
			w.uid = o.Obj.GetUID()
			r.restarted(w, o, RVOf(o.Obj))
			return
		}
	}
}

// touchedConfigs lists the configs whose reloader marker differs between two pod templates.
func touchedConfigs(before, after *corev1.PodTemplateSpec) map[string]bool {
	out := map[string]bool{}
	m0, m1 := markers(before), markers(after)
	for _, c := range JudgedConfigs {
		if m0[c] != m1[c] {
			out[c] = true
		}
	}
	return out
}
