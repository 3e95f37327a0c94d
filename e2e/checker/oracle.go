package checker

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/reloader/reloader/policy"
)

// RaceMargin is how close in time a workload's creation or annotation change and a change of a
// config it reads may be before the oracle cannot tell what the reloader should do: its watches
// of the two resources are independent and may deliver the two events in either order.
const RaceMargin = 2 * time.Second

// Content is a config's data at one point: data and binaryData, by key.
type Content map[string]string

// whole is the content as one comparable string.
func (c Content) whole() string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(c)) {
		fmt.Fprintf(&b, "%q=%q;", k, c[k])
	}
	return b.String()
}

// configEvent is one write of a config by the checker.
type configEvent struct {
	rv     int64
	at     time.Time
	exists bool
	data   Content
	// unknown: the state held no content for the config just before this write (noteUnknown).
	unknown bool
	by      string // the action that wrote it, for the report
	// invalid: the config is validated and its key a does not parse: no change to roll out.
	invalid bool
}

// change is a change of what a workload reads of a config: the content (or one key) differs from
// the last content that existed before it.
type change struct {
	rv      int64
	at      time.Time
	unknown bool   // the state held no content for the config just before it
	by      string // the action that made it
	// deleted: a deletion, whose rv comes from its watch event or, when that watch failed, from
	// a list just after it, so a reload it caused may have the same or a lower one; it is
	// ordered by time too.
	deleted bool
}

// WorkloadLife is one workload, from its creation to its deletion. A Job created again by the
// reloader keeps its life: its name is the workload.
type WorkloadLife struct {
	name string
	Kind string
	uid  types.UID // a Job's: the current one
	refs []Ref     // what its template reads now
	// rerefs: the checker's changes of what its template reads (gen 7), oldest first.
	rerefs    []reref
	createdRV int64
	createdAt time.Time
	deletedAt time.Time              // zero while it lives
	modes     []modeEvent            // annotation modes, oldest first
	tmpl      corev1.PodTemplateSpec // the template its pods run: the last one rolled out
	// seenTmpl is the last template seen, and paused its spec.paused (a Deployment's): a paused
	// Deployment's template changes roll out only when it is resumed, and that is its restart.
	seenTmpl corev1.PodTemplateSpec
	paused   bool
	// pausedAt is when the watch saw it paused; resumes are its restarts that were resumes, with
	// when the pause began, for gated to hold to the pause period.
	pausedAt time.Time
	resumes  []resume
	restarts []int64 // resourceVersions at which its template changed
	// touched: for each of restarts, the configs whose reloader marker it set, changed or
	// removed: the configs the restart was for.
	touched   []map[string]bool
	restartAt []time.Time // when the watch reported each of restarts
	// folding: the template changes seen while the reloader pauses it, which its resume rolls
	// out as one restart, each with the configs whose marker it changed; folded keeps them by
	// the index in restarts of that resume, so that the checker's own among them (a reref, an
	// image), known by rv perhaps only later, touch nothing for the reloader (seed 173@9).
	folding []markerWrite
	folded  map[int][]markerWrite
	// lagged: configs it carried stakater Reloader's variable for, with an older content's hash,
	// at its creation (a switch from stakater): it runs lagContent of them until restarted.
	lagged map[string]bool
	// Template changes counted exactly, by metadata.generation, which spec changes move, less
	// the moves seen without a template change (sameTmpl; the checker's own writes are counted
	// in ownChanges): the watch above
	// may have gaps across an API server restart. A Job's reloads are its new Jobs, counted by
	// the watch of Jobs.
	generation int64    // the last generation seen: at the end, or just before deletion
	ownChanges int      // template changes the checker made
	strips     []change // the checker's template changes (helm-style strips), when and at which rv
	// A Deployment's generation also moves when only its metadata annotations change (the API
	// server bumps it for them), and any kind's when its spec changes outside the template (a
	// pause): such writes restart nothing (seed 1795669739113515711@4: the reloader's "superseded"
	// outcome, written alone into reloader/history, was counted as a 9th restart). watchGen is
	// the generation of the last event seen; sameTmpl the writes that the watch showed, right
	// after the event before them, to move it by one and leave the template as it was. Only
	// consecutive watch events count: across a gap, a reload and its rollback look like that.
	watchGen int64
	sameTmpl []genMove
	// Gen 3: a CronJob's runs (Jobs it controls, created after it), and the workload's gates,
	// oldest first.
	runs       []int64
	OnTemplate bool
	gates      []gateEvent
	// marks0 are the reloader's markers at its creation, marks after each of restarts.
	marks0 map[string]string
	marks  []map[string]string
	// found: for each of restarts, the markers of the template seen just before it; for a
	// resume, the last template written during the pause, which a rollback of it puts back.
	// seenMarks are those of seenTmpl, kept as it is replaced.
	found     []map[string]string
	seenMarks map[string]string
	// rolledBack: for each of restarts, whether the reloader's history on the workload says, as
	// of that write, that its newest reload was rolled back, where the restart before did not:
	// a rollback writes that in the same patch as the template it restores. A reload for a
	// deletion gives back the markers from before the reload it follows too, but says no such
	// thing (soak seed 1795734170280237632@4 took one for a rollback).
	rolledBack []bool
	lastHead   policy.Entry
	// jobGone: when the watch saw the Job deleted (the first half of a reload), for
	// outOfScope.
	jobGone []time.Time
	// Gen 9: its owner's pauses (ownerpause.go), and the writes seen to resume it.
	ownerPauses []pauseSpan
	// broken (gen 10, where rollouts complete): a Deployment whose pods never become Ready.
	broken   bool
	unpauses []change
}

// markerWrite is a write of a workload's template, and the configs whose marker it changed.
type markerWrite struct {
	rv      int64
	touched map[string]bool
}

// genMove is a write seen through the watch that moved a workload's generation to gen.
type genMove struct{ rv, gen int64 }

// gateEvent is a gate annotation written at a moment.
type gateEvent struct {
	at   time.Time
	gate GateSpec
}

// gate is the workload's gate now.
func (w *WorkloadLife) gate() GateSpec {
	if len(w.gates) == 0 {
		return GateSpec{}
	}
	return w.gates[len(w.gates)-1].gate
}

type modeEvent struct {
	at   time.Time
	mode string
}

func (w *WorkloadLife) mode() string { return w.modes[len(w.modes)-1].mode }

// reref is a change by the checker of the configs a workload's template reads: when it was
// written (before the write, as modes are), its resourceVersion, and the refs before it.
type reref struct {
	at     time.Time
	rv     int64
	before []Ref
}

// refsAt is what w's template read at a moment: its refs before the first reref after it.
func (w *WorkloadLife) refsAt(at time.Time) []Ref {
	for _, e := range w.rerefs {
		if e.at.After(at) {
			return e.before
		}
	}
	return w.refs
}

// refsAtRV is what w's template read at resourceVersion rv: its refs before the first reref
// made after it.
func (w *WorkloadLife) refsAtRV(rv int64) []Ref {
	for _, e := range w.rerefs {
		if e.rv > rv {
			return e.before
		}
	}
	return w.refs
}

// reads is what w's template read over its life, for a report: its refs, and each set a reref
// gave it.
func (w *WorkloadLife) reads() string {
	if len(w.rerefs) == 0 {
		return fmt.Sprint(w.refs)
	}
	var b strings.Builder
	for _, e := range w.rerefs {
		fmt.Fprintf(&b, "%v until rv %d, then ", e.before, e.rv)
	}
	fmt.Fprint(&b, w.refs)
	return b.String()
}

// Recorder keeps the history the oracle judges: the checker's own writes, and every template
// change the API server reports through a watch that resumes across faults.
type Recorder struct {
	mu        sync.Mutex
	configs   map[string][]configEvent
	ignored   map[string][]modeEvent // "true"/"false" per config
	workloads map[types.UID]*WorkloadLife
	own       map[int64]bool    // resourceVersions the checker wrote to Deployments
	blind     [][2]time.Time    // outages and API server restarts
	changedAt time.Time         // when a template last changed
	gaps      int               // watch gaps caught up by a list: restarts there may be undercounted
	amnesia   map[string][]loss // when the state lost each config's entry
	// unknownNext: configs whose next write finds no content for them in the state.
	unknownNext map[string]bool
	starts      []time.Time // when reloader processes started
	// leaderless: since when a replica was stopped with no start since; the span until the
	// next leader is ready counts as blind, as an outage does.
	leaderless time.Time
	step       string // the action being done, for configEvent.by
	// onCreate and onDelete: the reloader runs with --reload-on-create, --reload-on-delete. With
	// the latter a deletion is a change, to absent, that workloads must restart for. With either,
	// a deletion and a creation count as changes that may restart a workload (excess).
	onCreate, onDelete bool
	// window is the reloader's --reload-window, as the generator names it ("", open, closed).
	window    string
	rollback  bool
	rollouts  bool // gen 10: rollouts complete (rollouts.go)
	argo      bool // gen 10: Argo Rollouts (argo.go)
	validated []string
	keyLosses []time.Time // when the key of Secret hashes was deleted or replaced
	jobsSeen  map[types.UID]bool
	outs      []outSpan // gen 4: when the namespace was out of --namespace-selector
	// stateLosses: when the whole state ConfigMap was deleted (state-delete), Job recreation
	// notes with it (lostWithState).
	stateLosses []time.Time
	// kills: when a replica was killed (kill -9), for unwritten.
	kills []time.Time
	// forgeries: entries the checker forged into the state (gen 9, forge.go).
	forgeries []Forgery
}

func (r *Recorder) LastRestart() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changedAt
}

func NewRecorder(seq Sequence) *Recorder {
	return &Recorder{configs: map[string][]configEvent{}, ignored: map[string][]modeEvent{},
		workloads: map[types.UID]*WorkloadLife{}, own: map[int64]bool{}, amnesia: map[string][]loss{}, unknownNext: map[string]bool{},
		onCreate: seq.OnCreate, onDelete: seq.OnDelete, window: seq.Window, rollback: seq.Rollback, rollouts: seq.Rollouts, argo: seq.Argo, validated: seq.Validated, jobsSeen: map[types.UID]bool{}}
}

// absent is what a workload reads of a deleted config, with --reload-on-delete.
const absent = "\x00absent"

// read is what a reader of e sees: the whole content, or only key "a".
func (e configEvent) read(whole bool) string {
	switch {
	case !e.exists:
		return absent
	case whole:
		return e.data.whole()
	}
	return e.data["a"]
}

func RVOf(o metav1.Object) int64 {
	n, _ := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
	return n
}

func (r *Recorder) config(name string, e configEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.unknown, e.by = r.unknownNext[name], r.step
	if a, ok := e.data["a"]; ok && e.exists && slices.Contains(r.validated, name) {
		e.invalid = !json.Valid([]byte(a))
	}
	delete(r.unknownNext, name)
	r.configs[name] = append(r.configs[name], e)
}

// UnknownBefore notes whether the state holds no content for config name, just before the
// checker's next write of it.
func (r *Recorder) UnknownBefore(name string, unknown bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unknownNext[name] = unknown
}

// Forget notes that the state lost the entries of configs: corrupted, or a tombstone with no
// hash.
func (r *Recorder) Forget(configs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range configs {
		r.amnesia[c] = append(r.amnesia[c], loss{at: time.Now()})
	}
}

// StateDeleted notes that the checker deleted the state ConfigMap.
func (r *Recorder) StateDeleted() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for _, c := range JudgedConfigs {
		r.amnesia[c] = append(r.amnesia[c], loss{at: now, deleted: now})
	}
	r.stateLosses = append(r.stateLosses, now)
}

// StateGone notes that the state ConfigMap was found missing before a write of config c: lost
// at its last deletion, or never written.
func (r *Recorder) StateGone(c string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := loss{at: time.Now()}
	if n := len(r.stateLosses); n > 0 {
		l.deleted = r.stateLosses[n-1]
	}
	r.amnesia[c] = append(r.amnesia[c], l)
}

// lostWithState reports whether Job w may be gone for good: the reloader deleted it to create
// it again, and before the create (refused, or not yet made) the state ConfigMap holding the
// recreation's note was deleted and a reloader process started after that, so no process
// remembers the Job (seed 1795657828041649784@4: a refused create, state-delete, kill -9).
// Nothing in the cluster records it any more; no reloader can create it. The caller holds r.mu.
func (r *Recorder) lostWithState(w *WorkloadLife) bool {
	if w.Kind != KindJob || len(w.jobGone) == 0 {
		return false
	}
	gone := w.jobGone[len(w.jobGone)-1]
	if n := len(w.restartAt); n > 0 && w.restartAt[n-1].After(gone) {
		return false // created again since
	}
	for _, f := range r.stateLosses {
		if f.After(gone) && slices.ContainsFunc(r.starts, func(s time.Time) bool { return s.After(f) }) && r.unknowable(loss{at: f, deleted: f}) {
			return true
		}
	}
	return false
}

// lostWithKey reports whether Job w may be gone for good because the note of its recreation
// was dropped: it was signed under a hash key that was deleted or replaced, and the next leader,
// loading the key at its start, drops a note it cannot verify (docs/design.md, "Signed Job
// recreation notes"). Which key signed it is not observed, so any key loss in the sequence
// excuses a Job never created again since its deletion. The caller holds r.mu.
func (r *Recorder) lostWithKey(w *WorkloadLife) bool {
	if w.Kind != KindJob || len(w.jobGone) == 0 || len(r.keyLosses) == 0 {
		return false
	}
	n := len(w.restartAt)
	return n == 0 || !w.restartAt[n-1].After(w.jobGone[len(w.jobGone)-1])
}

func (r *Recorder) SetStep(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.step = s
}

// Stopped notes that a replica was stopped (SIGTERM, kill -9, a downtime), or that a leader exited
// on its own.
func (r *Recorder) Stopped() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leaderless.IsZero() {
		r.leaderless = time.Now()
	}
}

func (r *Recorder) Started() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.leaderless.IsZero() {
		r.blind = append(r.blind, [2]time.Time{r.leaderless, time.Now()})
		r.leaderless = time.Time{}
	}
	r.starts = append(r.starts, time.Now())
}

func (r *Recorder) OwnWrite(rv int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.own[rv] = true
	for _, w := range r.lives() {
		for i, fold := range w.folded {
			if slices.ContainsFunc(fold, func(m markerWrite) bool { return m.rv == rv }) {
				r.refold(w, i)
			}
		}
	}
}

func (r *Recorder) BlindFrom(from, to time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blind = append(r.blind, [2]time.Time{from, to})
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
	w.seenMarks = markers(&w.seenTmpl)
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
		w.resumes = append(w.resumes, resume{restart: len(w.restarts) - 1, pausedAt: w.pausedAt})
	}
}

// resume is a restart of a paused Deployment at its resume, and when its pause began.
type resume struct {
	restart  int
	pausedAt time.Time
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

// refold sets what restart i of w, a resume, touched: where the checker wrote the template during
// the pause, only the configs whose marker the other writes changed. The caller holds r.mu.
func (r *Recorder) refold(w *WorkloadLife, i int) {
	fold := w.folded[i]
	if !slices.ContainsFunc(fold, func(m markerWrite) bool { return r.own[m.rv] }) {
		return
	}
	touched := map[string]bool{}
	for _, m := range fold {
		if !r.own[m.rv] {
			maps.Copy(touched, m.touched)
		}
	}
	w.touched[i] = touched
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

func configRef(c string) policy.ConfigRef {
	if IsSecret(c) {
		return policy.ConfigRef{Kind: policy.KindSecret, Name: c}
	}
	return policy.ConfigRef{Kind: policy.KindConfigMap, Name: c}
}

// changes lists the changes of what a reader of config name sees (the whole content, or only
// key "a") that may restart a workload. A content that does not validate counts: no reload may
// take it, but a restart for another config gives the pods it, and the next valid content is
// then a change for them.
func (r *Recorder) changes(name string, whole bool) []change {
	return r.changesSince(name, whole, time.Time{}, true)
}

// changesSince is changes for a workload created at from: if the config did not exist then, the
// first content it gets after is what the workload first sees, not a change. Without invalidToo
// a content that does not validate is no change (none is to be rolled out).
func (r *Recorder) changesSince(name string, whole bool, from time.Time, invalidToo bool) []change {
	var out []change
	last, seen, exists, reset := "", false, false, !from.IsZero()
	for _, e := range r.configs[name] {
		if reset && e.at.After(from) {
			seen, reset = seen && exists, false
		}
		exists = e.exists
		if e.invalid && !invalidToo {
			continue // not rolled out: the content before it stays the reference
		}
		if !e.exists && !r.onDelete && !r.onCreate {
			continue // a deletion is no change; the content before it stays the reference
		}
		v := e.read(whole)
		if seen && v != last {
			out = append(out, change{rv: e.rv, at: e.at, unknown: e.unknown, by: e.by, deleted: !e.exists})
		}
		last, seen = v, true
	}
	return out
}

func (r *Recorder) exists(name string) bool {
	es := r.configs[name]
	return len(es) > 0 && es[len(es)-1].exists
}

func (r *Recorder) isIgnored(name string) bool {
	es := r.ignored[name]
	return len(es) > 0 && es[len(es)-1].mode == "true"
}

// near reports whether two moments are too close for the reloader to see them in order: within
// raceMargin, or both inside one outage (plus raceMargin after it), when the reloader's watches
// catch up in no particular order.
func (r *Recorder) near(a, b time.Time) bool {
	if a.Sub(b).Abs() < RaceMargin {
		return true
	}
	for _, w := range r.blind {
		in := func(t time.Time) bool { return !t.Before(w[0].Add(-RaceMargin)) && t.Before(w[1].Add(RaceMargin)) }
		if in(a) && in(b) {
			return true
		}
	}
	return false
}

// triggers reports whether a workload in mode m reloads on config c, and whether on its whole
// content, as stakater's annotations define.
func triggers(m string, refs []Ref, c string) (ok, whole bool) {
	var reads, wholeRef bool
	for _, rf := range refs {
		if rf.Config == c {
			reads, wholeRef = true, wholeRef || rf.Whole
		}
	}
	switch {
	case !reads || m == modeNone:
		return false, false
	case m == modeNamed || m == modePattern:
		return true, true
	case m == modeExclude && refs[0].Config == c:
		return false, false
	}
	return true, wholeRef
}

// Summary says how much the oracle had to judge: restarts by the reloader and by the checker,
// how many (workload, config) pairs the lost-change check held to a change, and how many of
// them it could not judge, their pods having waited for another config (stale).
func (r *Recorder) Summary() string {
	r.mu.Lock()
	var byReloader, byChecker int
	for _, w := range r.lives() {
		byReloader += r.byReloader(w)
		byChecker += w.ownChanges
	}
	rollbacks := r.brokenRollbacks()
	r.mu.Unlock()
	judged, unjudged := r.judged()
	s := fmt.Sprintf("%d workloads, %d restarts by the reloader, %d by the checker, %d (workload, config) pairs held to a change (%d not judged: waited for another config), %d watch gaps",
		len(r.workloads), byReloader, byChecker, judged, unjudged, r.gaps)
	if r.rollouts {
		s += fmt.Sprintf(", %d rollbacks of broken Deployments", rollbacks)
	}
	return s
}

// judged counts the pairs lost() holds to a change.
func (r *Recorder) judged() (held, unjudged int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.lives() {
		for _, c := range JudgedConfigs {
			if _, ok := r.held(w, c); ok {
				held++
				if r.staleAfterOthers(w, c) {
					unjudged++
				}
			}
		}
	}
	return held, unjudged
}

// Violation is a broken promise, in words.
type Violation string

// Lost lists, for each live workload and config it reloads on now, a workload that runs another
// content than the config's current one (stale) although it should have taken its last change
// (held). Pairs whose annotations, ignore flag or creation were too close to that change to be
// ordered are skipped (see near).
func (r *Recorder) Lost() []Violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Violation
	if r.outNow() {
		return nil // nothing is owed while the namespace is out of the selection
	}
	for _, w := range r.lives() {
		if w.ownerPaused() {
			continue // its owner's resume rolls out what its template holds then
		}
		if w.gate().holds(r.window) || r.readsInvalid(w) {
			continue // held until its gate opens, or what it reads validates: the final round does both
		}
		if r.lostWithState(w) || r.lostWithKey(w) {
			continue // runs nothing: its recreation went with the state and the process, or was dropped
		}
		for _, c := range JudgedConfigs {
			if last, ok := r.held(w, c); ok && r.stale(w, c) && !r.baseline(w, c) && !r.keyBaseline(w, c) && !r.heldByRollback(w, c) && !r.leftBehind(w, c) && !r.heldByForgery(w, c) && !r.deletionMaskedByForgery(w, c) {
				out = append(out, Violation(fmt.Sprintf("lost: %s (mode %s, reads %s) runs an old content of %s, changed at rv %d by %s\n%s", w.name, w.mode(), w.reads(), c, last.rv, last.by, r.story(w, c))))
			}
		}
	}
	return out
}

// story is what the oracle knew of a lost pair, for the report: the workload's restarts (and
// which were the checker's, rollbacks, or undone) and the config's events. A soak's violation is
// often not reproduced by a replay; this is what is left to trace it with.
func (r *Recorder) story(w *WorkloadLife, c string) string {
	var b strings.Builder
	p := r.rollbacks(w)
	fmt.Fprintf(&b, "      %s created at rv %d; restarts:", w.name, w.createdRV)
	for i, rv := range w.restarts {
		fmt.Fprintf(&b, "\n        rv %d at %s for %v", rv, w.restartAt[i].Format("15:04:05.000"), slices.Sorted(maps.Keys(w.touched[i])))
		switch _, undone := p.undone[i]; {
		case r.own[rv]:
			b.WriteString(" (the checker's)")
		case p.rollback[i]:
			fmt.Fprintf(&b, " (rollback of rv %d)", w.restarts[p.of[i]])
		case undone:
			b.WriteString(" (rolled back)")
		}
	}
	_, whole := triggers(w.mode(), w.refs, c)
	fmt.Fprintf(&b, "\n      %s events:", c)
	for _, e := range r.configs[c] {
		fmt.Fprintf(&b, "\n        rv %d at %s %q by %s", e.rv, e.at.Format("15:04:05.000"), e.read(whole), e.by)
		if e.unknown {
			b.WriteString(" (state held none)")
		}
		if e.invalid {
			b.WriteString(" (invalid)")
		}
	}
	return b.String()
}

// stale reports whether what w reads of c differs from what its pods read when they last
// started: at its last template change (for a CronJob, its last run: the reloader's), or its
// creation. Pods started while a config they need was absent, or lacked a key they need, wait
// for all of them and start when the kubelet next tries, some time after the last one is there
// (podsStart): they are taken to read what c holds raceMargin after that (a content replaced
// sooner than that may or may not have been read, and no reloader can know which). Pods still
// waiting read nothing yet: they will read what c holds when they start (soak seed
// 1796187324768317270@10: cm-0 came back while cm-1, which the pods also need, did not). Pods
// that read c only through optional key refs do not wait for it: they run without it.
//
// The reloader judges each config apart: it takes waiting pods to read c when c itself is back,
// not when the last config they need is (docs/design.md, "How it works"). So a pair is stale
// only when both ways of waiting say so; pairs stale only when the pods wait for every config
// are not judged, and summary counts them (staleAfterOthers). The caller holds r.mu.
func (r *Recorder) stale(w *WorkloadLife, c string) bool {
	return r.staleWaiting(w, c, false) && r.staleWaiting(w, c, true)
}

// staleAfterOthers reports whether w's pods, waiting for every config they need, run an old
// content of c, though pods waiting for c alone would not: a change of c the reloader may
// miss, which stale does not judge. The caller holds r.mu.
func (r *Recorder) staleAfterOthers(w *WorkloadLife, c string) bool {
	return r.staleWaiting(w, c, true) && !r.staleWaiting(w, c, false)
}

// staleWaiting is stale with pods that wait for every config they need (all), or for c alone.
// The caller holds r.mu.
func (r *Recorder) staleWaiting(w *WorkloadLife, c string, all bool) bool {
	if es := r.configs[c]; len(es) > 0 && es[len(es)-1].invalid {
		return false // a content that does not validate is never rolled out
	}
	_, whole := triggers(w.mode(), w.refs, c)
	started := r.lastStart(w)
	only := c
	if all {
		only = ""
	}
	readyRV, readyAt, ready := r.podsStart(w, started, only)
	if !ready {
		return false
	}
	// Pods read an optional key ref of a missing config as no key at all, and start without
	// waiting for it (seed 1795657828041649782@4 took such pods to read the next content).
	gone := absent
	if optionalOnly(w.refs, c) {
		gone = ""
	}
	waitUntil := readyAt.Add(RaceMargin)
	var then, now, first string
	unseenLater := false
	for _, e := range r.configs[c] {
		v := e.read(whole)
		if !e.exists {
			v = gone
		}
		switch {
		case e.rv <= readyRV:
			then, first = v, v
		case readyRV > started && e.at.Before(waitUntil):
			then, unseenLater = v, unseenLater || r.blindAt(e.at)
		}
		if e.exists {
			now = v
		}
	}
	if r.onDelete && !r.exists(c) { // the deletion is what the workload should run
		now = gone
	}
	if w.lagged[c] && len(w.restarts) == 0 {
		then = configEvent{exists: true, data: lagContent}.read(whole)
	}
	// Which content within the margin the waiting pods read, no reloader can know; one that saw
	// the reappearance takes the first, and one that was not running for a later change in the
	// margin cannot tell it happened: the first counts too (seed 1795759253685912069@5: changed
	// 1.3 s after the reappearance while the reloader was down, and reverted before it came back).
	if then != now && unseenLater && first == now {
		return false
	}
	return then != now
}

// lastStart is the resourceVersion at which w's pods last started: its last template change
// that was not undone by a rollback (for a CronJob, its last run: the reloader's), or its
// creation. The caller holds r.mu.
func (r *Recorder) lastStart(w *WorkloadLife) int64 {
	started := w.createdRV
	paired := r.rollbacks(w)
	for i, rv := range w.restarts {
		if w.Kind == KindCronJob && r.own[rv] {
			continue // another actor's change of a CronJob's template runs no Job (seed 1795701072860836955@4)
		}
		if _, undone := paired.undone[i]; !undone && !paired.rollback[i] {
			started = max(started, rv)
		}
	}
	return started
}

// podsStart is when the pods that started at rv started to run: rv itself when every config
// their template needs (a ref that is not optional) was there with the keys they read, else the
// first event after rv that completed the set. ok is false while one is still missing. With
// only set, the pods are taken to wait for that config's existence alone, as the reloader
// takes them to. The caller holds r.mu.
func (r *Recorder) podsStart(w *WorkloadLife, rv int64, only string) (int64, time.Time, bool) {
	var needs []Ref
	for _, rf := range w.refsAtRV(rv) {
		if !rf.Optional && (only == "" || rf.Config == only) {
			needs = append(needs, rf)
		}
	}
	type event struct {
		config string
		configEvent
	}
	var after []event
	have := map[string]configEvent{}
	for _, rf := range needs {
		for _, e := range r.configs[rf.Config] {
			if e.rv <= rv {
				have[rf.Config] = e
			} else {
				after = append(after, event{rf.Config, e})
			}
		}
	}
	complete := func() bool {
		return !slices.ContainsFunc(needs, func(rf Ref) bool {
			e := have[rf.Config]
			_, key := e.data["a"]
			return !e.exists || only == "" && !rf.Whole && !key
		})
	}
	if complete() {
		return rv, time.Time{}, true
	}
	slices.SortStableFunc(after, func(a, b event) int { return cmp.Compare(a.rv, b.rv) })
	for _, e := range after {
		have[e.config] = e.configEvent
		if complete() {
			return e.rv, e.at, true
		}
	}
	return 0, time.Time{}, false
}

// optionalOnly reports whether every ref of refs to config c is an optional key ref.
func optionalOnly(refs []Ref, c string) bool {
	found := false
	for _, rf := range refs {
		if rf.Config == c {
			if !rf.Optional {
				return false
			}
			found = true
		}
	}
	return found
}

// held returns the last change of config c that live workload w must have taken, if any. The
// caller holds r.mu.
func (r *Recorder) held(w *WorkloadLife, c string) (change, bool) {
	ok, whole := triggers(w.mode(), w.refs, c)
	if !w.deletedAt.IsZero() || !ok || !r.exists(c) && !r.onDelete || r.isIgnored(c) {
		return change{}, false
	}
	chs := r.changesSince(c, whole, w.createdAt, false)
	if len(chs) == 0 && w.lagged[c] && len(w.modes) == 1 {
		// Switched from stakater, which missed a change: the first start rolls it out.
		return change{rv: w.createdRV, at: w.createdAt, by: "the switch from stakater"}, true
	}
	if len(chs) == 0 {
		return change{}, false
	}
	last := chs[len(chs)-1]
	if w.createdRV > last.rv || r.unordered(w, c, last.at) || r.forgotten(c, last) || !r.readSince(w, c, last) {
		return change{}, false
	}
	return last, true
}

// readSince reports whether w reloaded on change ch of c when it was made, and on c through
// every reref since (gen 7): a change of a config its template did not read then is no change
// for it (the reref's rollout, or its next start, gives its pods what the config holds), and
// one it stopped reading meanwhile may have been judged while it did not read it. A CronJob
// still reading c is owed its run: the checker's change of its template runs no Job. The caller
// holds r.mu.
func (r *Recorder) readSince(w *WorkloadLife, c string, ch change) bool {
	if ok, _ := triggers(w.mode(), w.refs, c); !ok || !r.readAt(w, c, ch) {
		return false
	}
	for _, e := range w.rerefs { // the refs each reref after ch replaced
		if ok, _ := triggers(w.mode(), e.before, c); e.at.After(ch.at) && !ok {
			return false
		}
	}
	return true
}

// readAt reports whether w reloaded on change ch of config c, by what its template read when
// it was made: the whole content, or key a, which ch changed. The caller holds r.mu.
func (r *Recorder) readAt(w *WorkloadLife, c string, ch change) bool {
	ok, whole := triggers(w.mode(), w.refsAt(ch.at), c)
	return ok && (whole || slices.ContainsFunc(r.changes(c, false), func(k change) bool { return k.rv == ch.rv }))
}

// baseline reports whether w, which carried no marker of c, runs another content than the one a
// reloader took as its baseline after the state lost c's entry, and c holds that content again:
// for a workload without a marker the state decides, and it says the workload runs the
// baseline (docs/design.md, "How it works"; RELIABILITY.md). Only a workload the reloader has not
// restarted for c since its creation or the checker's last template change counts: one it
// restarted carries a marker, which decides instead. The caller holds r.mu.
func (r *Recorder) baseline(w *WorkloadLife, c string) bool {
	since := w.createdAt
	for i, rv := range w.restarts {
		if r.own[rv] {
			since = w.restartAt[i]
		}
	}
	for i, rv := range w.restarts {
		// A Secret's marker made before its hash key was lost counts as none (keyBaseline):
		// the state decides for it too (soak seed 1795806970990510843@6: the key replaced, the
		// reload for the next change refused until a kill, the Secret's entry corrupt).
		if !r.own[rv] && w.touched[i][c] && w.restartAt[i].After(since) && !(IsSecret(c) && r.keyLostAfter(w.restartAt[i])) {
			return false
		}
	}
	_, whole := triggers(w.mode(), w.refs, c)
	es := r.configs[c]
	if len(es) == 0 || !es[len(es)-1].exists && !r.onDelete {
		return false // with --reload-on-delete, an absence is a baseline too
	}
	now := es[len(es)-1].read(whole)
	for _, l := range r.amnesia[c] {
		if !r.unknowable(l) {
			continue // written back from memory by the reloader that ran through it
		}
		for _, st := range r.starts {
			if st.Before(l.at) {
				continue
			}
			var at string
			for _, e := range es {
				if e.at.After(st) {
					break
				}
				at = e.read(whole)
			}
			if at == now {
				return true
			}
			break // the first start after this loss made the baseline
		}
	}
	return false
}

// leftBehind reports whether w's pods started at a restart that left c's marker as it was while
// c had another content (a reload of ours for other configs, c's reload held or deferred; or
// another actor's change of the template), a reloader process started after that restart, and
// c is back at the content of the marker. The reloader knew what those pods read in memory
// only, and a stop forgets it: the limit RELIABILITY.md states as "A reloader stopped between a
// restart and acting on what it remembered of it" (seed 1795669739113515711@4, after its fixes;
// another actor's restart: seed 1795768489456149832@5, the marker `deleted`, the config
// recreated, the image changed, then a new process and a second deletion). The fault is the
// stop; the excuse ends with w's next restart. The caller holds r.mu.
func (r *Recorder) leftBehind(w *WorkloadLife, c string) bool {
	paired := r.rollbacks(w)
	last, marked := -1, -1
	for i := range w.restarts {
		if _, undone := paired.undone[i]; undone || paired.rollback[i] {
			continue
		}
		last = i
		if w.touched[i][c] {
			marked = i
		}
	}
	if last < 0 || marked < 0 || marked == last {
		return false
	}
	if !slices.ContainsFunc(r.starts, func(s time.Time) bool { return s.After(w.restartAt[last]) }) {
		return false
	}
	_, whole := triggers(w.mode(), w.refs, c)
	es := r.configs[c]
	at := func(rv int64) string {
		v := absent
		for _, e := range es {
			if e.rv > rv {
				break
			}
			v = e.read(whole)
		}
		return v
	}
	now := at(math.MaxInt64)
	return at(w.restarts[marked]) == now && at(w.restarts[last]) != now
}

// forgotten reports whether the reloader that judged c's change at at may not have known the
// content c had before it: the state held no content for c just before the change (noteUnknown),
// and it had lost c's entry (the ConfigMap deleted, the entry corrupted, a tombstone without a
// hash) or never held one before a reloader process started, which then began from what it
// found. For a workload without a marker such a change is indistinguishable from a first start,
// or a first content, which restarts nothing (docs/design.md, "How it works"). The final round is
// judged the same way: a config that was absent when the state was lost has no content in it.
func (r *Recorder) forgotten(c string, ch change) bool {
	if !ch.unknown {
		return false
	}
	for _, l := range r.amnesia[c] {
		if l.at.Before(ch.at) && slices.ContainsFunc(r.starts, func(s time.Time) bool { return s.After(l.at) }) && r.unknowable(l) {
			return true
		}
	}
	return false
}

// unordered reports whether anything deciding if w reloads on c happened too close to at.
func (r *Recorder) unordered(w *WorkloadLife, c string, at time.Time) bool {
	if r.near(w.createdAt, at) {
		return true
	}
	for _, m := range w.modes[1:] {
		if r.near(m.at, at) || m.at.After(at) {
			return true
		}
	}
	// A reref is ordered with a change past raceMargin: the reloader then judges the change by
	// what the template read when it was made (readAt).
	for _, e := range w.rerefs {
		if r.near(e.at, at) {
			return true
		}
	}
	if r.switchedOn(w, c, at) {
		return true
	}
	for _, e := range r.ignored[c] {
		if r.near(e.at, at) || e.at.After(at) {
			return true
		}
	}
	return false
}

// switchedOn reports whether a reref of CronJob w after at made it reload on c, which its
// template read before without reloading on it (an exclude moved off c, or named mode naming c):
// that is a switch of annotation mode, as an annotate action is (README, the stated trade-off of
// a switch made while a change has not reached every dependent). A Deployment's reref rolls its
// pods, which read c's content then; a CronJob's runs nothing, so the reloader cannot tell
// whether its last run read c before or after the change (seed 228@9). The caller holds r.mu.
func (r *Recorder) switchedOn(w *WorkloadLife, c string, at time.Time) bool {
	if w.Kind != KindCronJob {
		return false
	}
	for i, e := range w.rerefs {
		after := w.refs
		if i+1 < len(w.rerefs) {
			after = w.rerefs[i+1].before
		}
		read := slices.ContainsFunc(e.before, func(rf Ref) bool { return rf.Config == c })
		was, _ := triggers(w.mode(), e.before, c)
		is, _ := triggers(w.mode(), after, c)
		if e.at.After(at) && read && !was && is {
			return true
		}
	}
	return false
}

// Excess lists workloads the reloader restarted more often than the changes of what they reload
// on during their life: a double restart, or one without a change. A change counts when the
// workload reloaded on it at the time, or when a creation, annotation or ignore change was too
// close to it to tell. It judges the total, counted exactly by generation, and each restart
// seen through the watch (which may merge restarts across a gap, never split one): it must
// carry a change of one of the configs whose variable it set, changed or removed, made before
// it and not carried by an earlier restart. A restart for one config may set another's
// variable too (the reloader gives a workload every marker it lacks when it restarts it
// anyway), so a restart is not held to each config it touched.
func (r *Recorder) Excess() []Violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Violation
	for _, w := range r.lives() {
		out = append(out, r.gated(w)...)
		out = append(out, r.outOfScope(w)...)
		var watched []int64
		for _, rv := range w.restarts {
			if !r.own[rv] {
				watched = append(watched, rv)
			}
		}
		if rv, touched, bad := r.unjustified(w); bad {
			out = append(out, Violation(fmt.Sprintf("excess: %s (reads %s, modes %v) restarted at rv %d for %v with no change of them left to take since its restarts before; %s",
				w.name, w.reads(), w.modeNames(), rv, touched, r.history(w))))
		}
		byReloader := r.byReloader(w)
		bound := len(r.rollbacks(w).rollback)
		for _, c := range JudgedConfigs {
			bound += r.bound(w, c)
		}
		if byReloader > bound {
			out = append(out, Violation(fmt.Sprintf("excess: %s (reads %s, modes %v) restarted %d times by the reloader (seen at rv %v) for %d changes of what it reloads on; generation %d, own changes %d, %s",
				w.name, w.reads(), w.modeNames(), byReloader, watched, bound, w.generation, w.ownChanges, r.history(w))))
		}
	}
	return out
}

// history lists, for a report, the reloader's restarts of w with the configs each touched, and
// the changes that count for w. The caller holds r.mu.
func (r *Recorder) history(w *WorkloadLife) string {
	var b strings.Builder
	b.WriteString("restarts:")
	for i, rv := range w.restarts {
		if !r.own[rv] {
			fmt.Fprintf(&b, " %d%v", rv, slices.Sorted(maps.Keys(w.touched[i])))
		}
	}
	b.WriteString("; changes:")
	for _, c := range JudgedConfigs {
		for _, ch := range r.changes(c, true) {
			if r.counts(w, c, ch) {
				fmt.Fprintf(&b, " %s@%d(%s)", c, ch.rv, ch.by)
			}
		}
	}
	return b.String()
}

// unjustified returns a restart of w by the reloader that carried no change: each restart takes
// the earliest change not yet taken, made before it, of each config whose variable it touched,
// and needs one. The caller holds r.mu.
func (r *Recorder) unjustified(w *WorkloadLife) (int64, []string, bool) {
	pending := map[string][]change{}
	for _, c := range JudgedConfigs {
		pending[c] = r.excuses(w, c)
		for _, ch := range r.changes(c, true) {
			if r.counts(w, c, ch) {
				pending[c] = append(pending[c], ch)
			}
		}
		slices.SortStableFunc(pending[c], func(a, b change) int { return cmp.Compare(a.rv, b.rv) })
	}
	paired := r.rollbacks(w)
	for i, rv := range w.restarts {
		if r.own[rv] || len(w.touched[i]) == 0 || paired.rollback[i] {
			continue
		}
		carried := false
		var touched []string
		for _, c := range JudgedConfigs {
			if !w.touched[i][c] {
				continue
			}
			touched = append(touched, c)
			// A deletion's rv may come from a list after it (deletionRV), so it may equal the
			// rv of the restart that rolled the deletion out (soak seed 1795470267112178618).
			if p := pending[c]; len(p) > 0 && (p[0].rv < rv || p[0].deleted && (p[0].rv <= rv || p[0].at.Before(w.restartAt[i]))) {
				pending[c], carried = paid(p[1:], rv, w.restartAt[i]), true
			}
		}
		if !carried {
			return rv, touched, true
		}
	}
	return 0, nil, false
}

// paid drops from pending the changes a restart at rv and at rolled out besides the earliest: a
// restart gives the pods the content of its moment, so a burst it coalesced leaves no credit
// for a later restart. A change made within raceMargin before it may have come after the
// reloader read the config, and keeps its credit.
func paid(pending []change, rv int64, at time.Time) []change {
	for len(pending) > 0 && pending[0].rv < rv && pending[0].at.Before(at.Add(-RaceMargin)) {
		pending = pending[1:]
	}
	return pending
}

// excuses are the restarts of w for c allowed beyond the changes of c, each as a change a
// restart may take: one for a stakater variable that lagged (the switch from stakater); one for
// a workload created during an outage or while no reloader ran: the reloader sees it at once
// with the changes it missed and, without a marker, while the state is behind (another
// dependent's refusal, or a reload whose patch landed but whose reply the leader lost before
// it died), cannot tell whether it was created before or after a change; and one for each
// strip made in such a span, for the same reason (soak seed 1795547694293124233@2): the
// strip's own rollout gave its pods the content of that moment, which the reloader cannot
// tell from an older one. A creation or strip seen just before a kill -9 counts as unseen
// (unwritten). The caller holds r.mu.
func (r *Recorder) excuses(w *WorkloadLife, c string) []change {
	var out []change
	if w.lagged[c] {
		out = append(out, change{rv: w.createdRV, at: w.createdAt, by: "the switch from stakater"})
	}
	if r.blindAt(w.createdAt) || r.unwritten(w.createdAt) {
		out = append(out, change{rv: w.createdRV, at: w.createdAt, by: "a creation no reloader saw"})
	}
	for _, s := range w.strips {
		if r.blindAt(s.at) || r.unwritten(s.at) {
			out = append(out, change{rv: s.rv, at: s.at, by: "a strip no reloader saw"})
		}
	}
	out = append(out, r.forgedRestarts(w, c)...)
	out = append(out, r.reappearances(w, c)...)
	return append(out, r.holdsLost(w, c)...)
}

// holdsLost are, for each rollback of w's reload for c, one restart allowed once the state
// ConfigMap holding the rollback's hold was deleted and a reloader started after that: no
// process knows the hold then, and the content is reloaded again (soak seed
// 1795100000000000002@5: a stakater variable that lagged, rolled out, rolled back, the state
// deleted while the reloader was down). The caller holds r.mu.
func (r *Recorder) holdsLost(w *WorkloadLife, c string) []change {
	var out []change
	paired := r.rollbacks(w)
	for i := range paired.rollback {
		if !w.touched[paired.of[i]][c] {
			continue
		}
		for _, f := range r.stateLosses {
			if f.After(w.restartAt[i]) && slices.ContainsFunc(r.starts, func(s time.Time) bool { return s.After(f) }) && r.unknowable(loss{at: f, deleted: f}) {
				out = append(out, change{rv: w.restarts[i], at: w.restartAt[i], by: "a hold lost with the state"})
				break
			}
		}
	}
	return out
}

// writeBehind bounds how long after seeing something the reloader has written what it needs
// of it to the state: the store's 50 ms linger and a write under load.
const writeBehind = 500 * time.Millisecond

// Killed notes a kill -9 of a replica.
func (r *Recorder) Killed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kills = append(r.kills, time.Now())
}

// unwritten reports whether t falls within writeBehind before a kill -9: what the reloader saw
// then may be lost with the process, as if it had not seen it (docs/design.md: a kill -9
// before a strip's entry is written restarts it once). The caller holds r.mu.
func (r *Recorder) unwritten(t time.Time) bool {
	return slices.ContainsFunc(r.kills, func(k time.Time) bool { return !t.After(k) && k.Sub(t) < writeBehind })
}

// blindAt reports whether t falls in an outage, an API server restart, a replica's downtime or
// a span with no leader after a replica was stopped or a leader exited, or within raceMargin after
// one.
func (r *Recorder) blindAt(t time.Time) bool {
	return slices.ContainsFunc(r.blind, func(b [2]time.Time) bool { return !t.Before(b[0]) && t.Before(b[1].Add(RaceMargin)) })
}

// bound is how many restarts of w changes of config c allow. The caller holds r.mu.
func (r *Recorder) bound(w *WorkloadLife, c string) int {
	n := len(r.excuses(w, c))
	for _, ch := range r.changes(c, true) {
		if r.counts(w, c, ch) {
			n++
		}
	}
	return n
}

// counts reports whether change ch of config c may restart w.
func (r *Recorder) counts(w *WorkloadLife, c string, ch change) bool {
	if ch.rv < w.createdRV && !r.near(ch.at, w.createdAt) || !w.deletedAt.IsZero() && ch.at.After(w.deletedAt) {
		return false
	}
	if r.unordered(w, c, ch.at) {
		return true // unordered also counts any later mode or ignore change: generous, never wrong
	}
	// What w read when the change was made (gen 7's rerefs): a reload for a config its template
	// no longer read then is a restart without a change.
	return !r.isIgnored(c) && r.readAt(w, c, ch)
}

func (w *WorkloadLife) modeNames() []string {
	out := make([]string, len(w.modes))
	for i, m := range w.modes {
		out[i] = m.mode
	}
	return out
}

// lives lists each workload life once (a Job created again is under two UIDs). The caller holds
// r.mu.
func (r *Recorder) lives() []*WorkloadLife {
	var out []*WorkloadLife
	seen := map[*WorkloadLife]bool{}
	for _, w := range r.workloads {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// byReloader counts the reloads of w: template changes by generation, less the writes by
// others than the checker seen to move it without one, or a Job's new Jobs. The caller holds
// r.mu.
func (r *Recorder) byReloader(w *WorkloadLife) int {
	if w.Kind == KindJob {
		return len(w.restarts)
	}
	n := int(w.generation) - 1 - w.ownChanges
	for _, m := range w.sameTmpl {
		if !r.own[m.rv] && m.gen <= w.generation {
			n--
		}
	}
	return n
}

// gated lists what w's gates forbid that happened: a reload while a gate held it (a closed
// window, a schedule that does not parse), two reloads closer than a minimum interval, and, for
// a CronJob, a Job run by anything but a reload (a metadata write, a pause) or a reload that
// ran none. A gate counts from raceMargin after it was written. The caller holds r.mu.
func (r *Recorder) gated(w *WorkloadLife) []Violation {
	var out []Violation
	paired := r.rollbacks(w)
	for i, rv := range w.restarts {
		if r.own[rv] || paired.rollback[i] {
			continue
		}
		at := w.restartAt[i]
		if g, ok := w.gateSince(at.Add(-RaceMargin), at); ok && g.holds(r.window) {
			out = append(out, Violation(fmt.Sprintf("gated: %s %s reloaded at rv %d while its gate %s held every reload (reload-window %q)",
				w.Kind, w.name, rv, g, r.window)))
		}
		if i == 0 || r.own[w.restarts[i-1]] || paired.rollback[i-1] {
			continue
		}
		prev := w.restartAt[i-1]
		if g, ok := w.gateSince(prev.Add(-RaceMargin), at); ok && g.minInterval() > 0 && at.Sub(prev) < g.minInterval()-500*time.Millisecond {
			out = append(out, Violation(fmt.Sprintf("gated: %s %s reloaded at rv %d and %d, %s apart, under %s",
				w.Kind, w.name, w.restarts[i-1], rv, at.Sub(prev).Round(time.Millisecond), g)))
		}
	}
	resumed := map[int]bool{}
	for _, rs := range w.resumes {
		resumed[rs.restart] = true
	}
	for i, rv := range w.restarts {
		if w.Kind != KindDeployment || r.own[rv] || paired.rollback[i] || resumed[i] || w.ownerPausedAt(w.restartAt[i]) {
			continue
		}
		at := w.restartAt[i]
		if g, ok := w.gateSince(at.Add(-RaceMargin), at); ok && g.pausePeriod() > 0 {
			out = append(out, Violation(fmt.Sprintf("gated: %s %s reloaded at rv %d without a pause, under %s",
				w.Kind, w.name, rv, g)))
		}
	}
	for _, rs := range w.resumes {
		if r.own[w.restarts[rs.restart]] {
			continue // its owner's resume
		}
		at := w.restartAt[rs.restart]
		g, ok := w.gateSince(rs.pausedAt.Add(-RaceMargin), at)
		if d := g.pausePeriod(); ok && d > 0 && at.Sub(rs.pausedAt) < d-500*time.Millisecond {
			out = append(out, Violation(fmt.Sprintf("gated: %s %s resumed at rv %d, %s after its pause began, under %s",
				w.Kind, w.name, w.restarts[rs.restart], at.Sub(rs.pausedAt).Round(time.Millisecond), g)))
		}
	}
	out = append(out, r.ownerPauseViolations(w, paired)...)
	out = append(out, r.rolloutViolations(w, paired)...)
	for i := range paired.rollback {
		j := paired.of[i]
		for k := j + 1; k < i; k++ {
			if r.own[w.restarts[k]] && w.restartAt[k].Before(w.restartAt[i].Add(-RaceMargin)) {
				out = append(out, Violation(fmt.Sprintf("rollback: %s %s rolled back its reload at rv %d (rv %d) after another actor changed its template (rv %d): the failure was theirs",
					w.Kind, w.name, w.restarts[j], w.restarts[i], w.restarts[k])))
			}
		}
	}
	for i, rv := range w.restarts {
		for c := range w.touched[i] {
			if !r.own[rv] && !paired.rollback[i] && r.invalidAt(c, w.restartAt[i]) {
				out = append(out, Violation(fmt.Sprintf("invalid: %s %s reloaded at rv %d for %s, whose content did not validate", w.Kind, w.name, rv, c)))
			}
		}
	}
	if w.Kind == KindCronJob {
		reloads := r.byReloader(w)
		if len(w.runs) > reloads || w.deletedAt.IsZero() && len(w.runs) < reloads {
			out = append(out, Violation(fmt.Sprintf("runs: CronJob %s ran %d Jobs (at rv %v) for %d reloads of its template",
				w.name, len(w.runs), w.runs, reloads)))
		}
	}
	return out
}

// gateSince returns the gate w had throughout [from, to], if no gate was written in between.
func (w *WorkloadLife) gateSince(from, to time.Time) (GateSpec, bool) {
	var g GateSpec
	for _, e := range w.gates {
		if e.at.After(to) {
			break
		}
		if e.at.After(from) {
			return g, false
		}
		g = e.gate
	}
	return g, true
}

// KeyLost notes that the key of Secret hashes was deleted or replaced.
func (r *Recorder) KeyLost() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keyLosses = append(r.keyLosses, time.Now())
}

// keyLostAfter reports whether the hash key was lost after t. The caller holds r.mu.
func (r *Recorder) keyLostAfter(t time.Time) bool {
	return slices.ContainsFunc(r.keyLosses, func(f time.Time) bool { return f.After(t) })
}

// keyBaseline reports whether w runs another content of Secret c than the one the first
// reloader to start after a loss of the hash key found, and c holds that content again: state
// entries and markers made under another key cannot be compared, so that start takes every
// Secret as current (docs/design.md, "Secret hash keys": a change made while the reloader was down and
// its key was lost is not caught up). A content that did not validate then was never rolled
// out: the first valid one after it is taken as current instead (seed 1795701072860836929@4).
// The caller holds r.mu.
func (r *Recorder) keyBaseline(w *WorkloadLife, c string) bool {
	es := r.configs[c]
	if !IsSecret(c) || len(es) == 0 || !es[len(es)-1].exists {
		return false
	}
	_, whole := triggers(w.mode(), w.refs, c)
	now := es[len(es)-1].read(whole)
	for _, f := range r.keyLosses {
		i := slices.IndexFunc(r.starts, func(s time.Time) bool { return s.After(f) })
		if i < 0 {
			continue
		}
		first := r.inScopeFrom(r.starts[i])
		var at string
		invalid := false
		for _, e := range es {
			if e.at.After(first) {
				break
			}
			at, invalid = e.read(whole), e.invalid
		}
		if v, ok := firstValidAfter(es, first, whole); invalid && ok {
			at = v
		} else if invalid {
			continue
		}
		if at == now || keyTombstoneBaseline(es, first, whole) == now {
			return true
		}
	}
	return false
}

// firstValidAfter is the first content of Secret events es after start that validates, if any.
func firstValidAfter(es []configEvent, start time.Time, whole bool) (string, bool) {
	for _, e := range es {
		if e.at.After(start) && e.exists && !e.invalid {
			return e.read(whole), true
		}
	}
	return "", false
}

// keyTombstoneBaseline is the content Secret events es first had again after being absent since
// start, or "" if none. A process loads the key and the state only when it becomes leader, which
// an outage may put seconds after its start (seed 1795657828041649802@4: sec-0 deleted between
// the two). A Secret absent then leaves a tombstone under the lost key, taken as current
// (docs/design.md, "Secret hash keys"): the content the Secret reappears with first restarts nothing.
func keyTombstoneBaseline(es []configEvent, start time.Time, whole bool) string {
	gone := false
	for _, e := range es {
		switch {
		case !e.exists:
			gone = true
		case gone && e.at.After(start):
			return e.read(whole)
		default:
			gone = false
		}
	}
	return ""
}

// pairs are a workload's rollbacks: by the index of the restart that undid a reload, the index
// of that reload (of); undone holds the reloads' indexes.
type pairs struct {
	rollback map[int]bool
	of       map[int]int
	undone   map[int]int
}

// rollbacks finds the restarts of w that undid the reloader's previous restart, in a sequence
// run with --rollback: the same configs touched, each marker back to its value before that
// restart, at least the rollout timeout later (no rollout completes in the checker's cluster,
// so every followed reload times out). The caller holds r.mu.
func (r *Recorder) rollbacks(w *WorkloadLife) pairs {
	p := pairs{rollback: map[int]bool{}, of: map[int]int{}, undone: map[int]int{}}
	if !r.rollback || w.Kind == KindJob || w.Kind == KindCronJob {
		// CronJobs and Jobs are not followed, so never rolled back (docs/safe-reloads.md, "Safe reloads"):
		// a reload that puts a marker back (a deletion after a recreation) is a run (seed 13@3).
		return p
	}
	j := -1 // the reloader's last restart before i that is no rollback
	for i, rv := range w.restarts {
		if r.own[rv] {
			continue
		}
		if j >= 0 && i < len(w.rolledBack) && w.rolledBack[i] && w.restartAt[i].Sub(w.restartAt[j]) >= RolloutTimeout-500*time.Millisecond && maps.Equal(w.touched[i], w.touched[j]) {
			before := w.marks0
			if j > 0 {
				before = w.marks[j-1]
			}
			if j < len(w.found) && w.found[j] != nil && slices.ContainsFunc(w.resumes, func(rs resume) bool { return rs.restart == j }) {
				// A reload that rode on a resume found the template written during the pause
				// (soak seed 1796195658658212531@10: a reload patched in then, its resume held
				// while a config did not validate).
				before = w.found[j]
			}
			back := true
			for c := range w.touched[i] {
				back = back && w.marks[i][c] == before[c]
			}
			if back {
				p.rollback[i], p.of[i], p.undone[j] = true, j, i
				j = -1
				continue
			}
		}
		j = i
	}
	return p
}

// heldByRollback reports whether w's last reload for c was rolled back and c still holds the
// content that reload rolled out: the reloader holds it, and w runs what it ran before
// (docs/safe-reloads.md, "Safe reloads"). The caller holds r.mu.
func (r *Recorder) heldByRollback(w *WorkloadLife, c string) bool {
	if r.completes(w) {
		return false // a rollout that completes is not rolled back (rolloutViolations)
	}
	p := r.rollbacks(w)
	last := -1
	for i, rv := range w.restarts {
		if !r.own[rv] && w.touched[i][c] {
			last = i
		}
	}
	if last < 0 || !p.rollback[last] {
		return false
	}
	_, whole := triggers(w.mode(), w.refs, c)
	var then, now string
	for _, e := range r.configs[c] {
		if e.rv < w.restarts[p.of[last]] {
			then = e.read(whole)
		}
		now = e.read(whole)
	}
	return then == now
}

// invalidAt reports whether, at a moment, config c held content that does not validate, written
// more than raceMargin before. The caller holds r.mu.
func (r *Recorder) invalidAt(c string, at time.Time) bool {
	var last *configEvent
	for i, e := range r.configs[c] {
		if e.at.Before(at) {
			last = &r.configs[c][i]
		}
	}
	return last != nil && last.invalid && last.at.Before(at.Add(-RaceMargin))
}

// readsInvalid reports whether a config w reads holds content that does not validate now: the
// reloader holds every reload of w until it does (a restart would load it). The caller holds
// r.mu.
func (r *Recorder) readsInvalid(w *WorkloadLife) bool {
	return slices.ContainsFunc(w.refs, func(rf Ref) bool {
		es := r.configs[rf.Config]
		return len(es) > 0 && es[len(es)-1].invalid
	})
}
