package e2e

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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/reloader/reloader/policy"
)

// raceMargin is how close in time a workload's creation or annotation change and a change of a
// config it reads may be before the oracle cannot tell what the reloader should do: its watches
// of the two resources are independent and may deliver the two events in either order.
const raceMargin = 2 * time.Second

// content is a config's data at one point: data and binaryData, by key.
type content map[string]string

// whole is the content as one comparable string.
func (c content) whole() string {
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
	data   content
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

// workloadLife is one workload, from its creation to its deletion. A Job created again by the
// reloader keeps its life: its name is the workload.
type workloadLife struct {
	name string
	kind string
	uid  types.UID // a Job's: the current one
	refs []ref     // what its template reads now
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
	onTemplate bool
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
	// Gen 9: its owner's pauses (checker_ownerpause_test.go), and the writes seen to resume it.
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
	gate gateSpec
}

// gate is the workload's gate now.
func (w *workloadLife) gate() gateSpec {
	if len(w.gates) == 0 {
		return gateSpec{}
	}
	return w.gates[len(w.gates)-1].gate
}

type modeEvent struct {
	at   time.Time
	mode string
}

func (w *workloadLife) mode() string { return w.modes[len(w.modes)-1].mode }

// reref is a change by the checker of the configs a workload's template reads: when it was
// written (before the write, as modes are), its resourceVersion, and the refs before it.
type reref struct {
	at     time.Time
	rv     int64
	before []ref
}

// refsAt is what w's template read at a moment: its refs before the first reref after it.
func (w *workloadLife) refsAt(at time.Time) []ref {
	for _, e := range w.rerefs {
		if e.at.After(at) {
			return e.before
		}
	}
	return w.refs
}

// refsAtRV is what w's template read at resourceVersion rv: its refs before the first reref
// made after it.
func (w *workloadLife) refsAtRV(rv int64) []ref {
	for _, e := range w.rerefs {
		if e.rv > rv {
			return e.before
		}
	}
	return w.refs
}

// reads is what w's template read over its life, for a report: its refs, and each set a reref
// gave it.
func (w *workloadLife) reads() string {
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

// recorder keeps the history the oracle judges: the checker's own writes, and every template
// change the API server reports through a watch that resumes across faults.
type recorder struct {
	mu        sync.Mutex
	configs   map[string][]configEvent
	ignored   map[string][]modeEvent // "true"/"false" per config
	workloads map[types.UID]*workloadLife
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
	rollouts  bool // gen 10: rollouts complete (checker_rollouts_test.go)
	argo      bool // gen 10: Argo Rollouts (checker_argo_test.go)
	validated []string
	keyLosses []time.Time // when the key of Secret hashes was deleted or replaced
	jobsSeen  map[types.UID]bool
	outs      []outSpan // gen 4: when the namespace was out of --namespace-selector
	// stateLosses: when the whole state ConfigMap was deleted (state-delete), Job recreation
	// notes with it (lostWithState).
	stateLosses []time.Time
	// kills: when a replica was killed (kill -9), for unwritten.
	kills []time.Time
	// forgeries: entries the checker forged into the state (gen 9, checker_forge_test.go).
	forgeries []forgery
}

func (r *recorder) lastRestart() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changedAt
}

func newRecorder(seq sequence) *recorder {
	return &recorder{configs: map[string][]configEvent{}, ignored: map[string][]modeEvent{},
		workloads: map[types.UID]*workloadLife{}, own: map[int64]bool{}, amnesia: map[string][]loss{}, unknownNext: map[string]bool{},
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

func rvOf(o metav1.Object) int64 {
	n, _ := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
	return n
}

func (r *recorder) config(name string, e configEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.unknown, e.by = r.unknownNext[name], r.step
	if a, ok := e.data["a"]; ok && e.exists && slices.Contains(r.validated, name) {
		e.invalid = !json.Valid([]byte(a))
	}
	delete(r.unknownNext, name)
	r.configs[name] = append(r.configs[name], e)
}

// unknownBefore notes whether the state holds no content for config name, just before the
// checker's next write of it.
func (r *recorder) unknownBefore(name string, unknown bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unknownNext[name] = unknown
}

// forget notes that the state lost the entries of configs: corrupted, or a tombstone with no
// hash.
func (r *recorder) forget(configs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range configs {
		r.amnesia[c] = append(r.amnesia[c], loss{at: time.Now()})
	}
}

// stateDeleted notes that the checker deleted the state ConfigMap.
func (r *recorder) stateDeleted() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for _, c := range judgedConfigs {
		r.amnesia[c] = append(r.amnesia[c], loss{at: now, deleted: now})
	}
	r.stateLosses = append(r.stateLosses, now)
}

// stateGone notes that the state ConfigMap was found missing before a write of config c: lost
// at its last deletion, or never written.
func (r *recorder) stateGone(c string) {
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
func (r *recorder) lostWithState(w *workloadLife) bool {
	if w.kind != kindJob || len(w.jobGone) == 0 {
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
func (r *recorder) lostWithKey(w *workloadLife) bool {
	if w.kind != kindJob || len(w.jobGone) == 0 || len(r.keyLosses) == 0 {
		return false
	}
	n := len(w.restartAt)
	return n == 0 || !w.restartAt[n-1].After(w.jobGone[len(w.jobGone)-1])
}

func (r *recorder) setStep(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.step = s
}

// stopped notes that a replica was stopped (SIGTERM, kill -9, a downtime), or that a leader exited
// on its own.
func (r *recorder) stopped() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leaderless.IsZero() {
		r.leaderless = time.Now()
	}
}

func (r *recorder) started() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.leaderless.IsZero() {
		r.blind = append(r.blind, [2]time.Time{r.leaderless, time.Now()})
		r.leaderless = time.Time{}
	}
	r.starts = append(r.starts, time.Now())
}

func (r *recorder) ownWrite(rv int64) {
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

func (r *recorder) blindFrom(from, to time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blind = append(r.blind, [2]time.Time{from, to})
}

// watch follows the namespace's workloads of every kind from resourceVersion rv until ctx ends.
// client-go's RetryWatcher resumes across broken connections; if the API server can no longer
// serve from the last version seen (410 Gone), a list catches up and the gap is counted.
func (r *recorder) watch(ctx context.Context, ns, rv string, dyn dynamic.Interface) {
	for kind, k := range wkinds {
		if kind == kindRollout && !r.argo {
			continue // no Rollout CRD
		}
		go r.watchKind(ctx, kind, dyn.Resource(k.gvr).Namespace(ns), rv)
	}
}

func (r *recorder) watchKind(ctx context.Context, kind string, client dynamic.ResourceInterface, rv string) {
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
				r.seen(kind, &list.Items[i], false)
			}
			rv = list.GetResourceVersion()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// follow records the watch's events until it ends, and returns the last version seen, or "" when
// the watch ended on an error.
func (r *recorder) follow(ctx context.Context, kind string, w watch.Interface, rv string) string {
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
					r.seen(kind, u, true)
				}
				if ev.Type == watch.Deleted && kind == kindJob {
					r.jobDeleted(u)
				}
			}
		}
	}
}

// behind reports whether u, a workload as listed, has a template other than the last one the
// watch showed.
func (r *recorder) behind(kind string, u *unstructured.Unstructured) bool {
	o, err := decodeWorkload(kind, u)
	if err != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.workloads[u.GetUID()]
	return w != nil && (!equality.Semantic.DeepEqual(w.seenTmpl, o.tmpl) || w.paused != pausedOf(kind, u))
}

// pausedOf reports a Deployment's spec.paused.
func pausedOf(kind string, u *unstructured.Unstructured) bool {
	paused, _, _ := unstructured.NestedBool(u.Object, "spec", "paused")
	return kind == kindDeployment && paused
}

// seen records a workload's new template, and a Job's creation: a CronJob's run, or a Job
// created again. watched says u is a watch event, right after the one (or the list) before it.
func (r *recorder) seen(kind string, u *unstructured.Unstructured, watched bool) {
	o, err := decodeWorkload(kind, u)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if kind == kindJob {
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
	if equality.Semantic.DeepEqual(w.seenTmpl, o.tmpl) && watched && prev > 0 && gen == prev+1 {
		w.sameTmpl = append(w.sameTmpl, genMove{rvOf(u), gen})
	}
	write := markerWrite{rvOf(u), touchedConfigs(&w.seenTmpl, &o.tmpl)}
	w.seenMarks = markers(&w.seenTmpl)
	w.seenTmpl = *o.tmpl.DeepCopy()
	// A paused Deployment restarts nothing until it is resumed, and its resume rolls out the
	// template as it is then: the pods read their configs at the resume.
	// A template change while its owner pauses it is the reloader's reload all the same (gen 9):
	// its rollout waits for the resume, and its clock with it.
	wasPaused := w.paused
	if w.paused = pausedOf(kind, u); w.paused && !wasPaused {
		w.pausedAt = time.Now()
	}
	if wasPaused && !w.paused {
		w.unpauses = append(w.unpauses, change{rv: rvOf(u), at: time.Now()})
	}
	if w.paused && !w.ownerPaused() {
		w.folding = append(w.folding, write)
		return
	}
	if equality.Semantic.DeepEqual(w.tmpl, o.tmpl) {
		w.folding = nil
		return
	}
	if len(w.folding) > 0 {
		w.folding = append(w.folding, write)
	}
	r.restarted(w, o, rvOf(u))
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
func (r *recorder) restarted(w *workloadLife, o *wobj, rv int64) {
	w.touched = append(w.touched, touchedConfigs(&w.tmpl, &o.tmpl))
	if len(w.folding) > 0 {
		if w.folded == nil {
			w.folded = map[int][]markerWrite{}
		}
		w.folded[len(w.restarts)], w.folding = w.folding, nil
		r.refold(w, len(w.restarts))
	}
	w.marks = append(w.marks, markers(&o.tmpl))
	w.found = append(w.found, w.seenMarks)
	var head policy.Entry
	if h := policy.ParseHistory(o.u.GetAnnotations()[policy.HistoryAnnotation]); len(h) > 0 {
		head = h[0]
	}
	w.rolledBack = append(w.rolledBack, head.RolledBack && !(w.lastHead.RolledBack && w.lastHead.At.Equal(head.At)))
	w.lastHead = head
	w.restartAt = append(w.restartAt, time.Now())
	w.tmpl = *o.tmpl.DeepCopy()
	w.restarts = append(w.restarts, rv)
	r.changedAt = time.Now()
}

// refold sets what restart i of w, a resume, touched: where the checker wrote the template during
// the pause, only the configs whose marker the other writes changed. The caller holds r.mu.
func (r *recorder) refold(w *workloadLife, i int) {
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
func (r *recorder) jobCreated(o *wobj) {
	if cj := r.workloads[o.controller()]; cj != nil && cj.kind == kindCronJob {
		cj.runs = append(cj.runs, rvOf(o.u))
		r.changedAt = time.Now()
		return
	}
	for _, w := range r.workloads {
		if w.kind == kindJob && w.name == o.u.GetName() && w.deletedAt.IsZero() && w.uid != o.u.GetUID() && w.createdRV < rvOf(o.u) {
			r.workloads[o.u.GetUID()] = w
			w.uid = o.u.GetUID()
			r.restarted(w, o, rvOf(o.u))
			return
		}
	}
}

// touchedConfigs lists the configs whose reloader marker differs between two pod templates.
func touchedConfigs(before, after *corev1.PodTemplateSpec) map[string]bool {
	out := map[string]bool{}
	m0, m1 := markers(before), markers(after)
	for _, c := range judgedConfigs {
		if m0[c] != m1[c] {
			out[c] = true
		}
	}
	return out
}

func configRef(c string) policy.ConfigRef {
	if isSecret(c) {
		return policy.ConfigRef{Kind: policy.KindSecret, Name: c}
	}
	return policy.ConfigRef{Kind: policy.KindConfigMap, Name: c}
}

// changes lists the changes of what a reader of config name sees (the whole content, or only
// key "a") that may restart a workload. A content that does not validate counts: no reload may
// take it, but a restart for another config gives the pods it, and the next valid content is
// then a change for them.
func (r *recorder) changes(name string, whole bool) []change {
	return r.changesSince(name, whole, time.Time{}, true)
}

// changesSince is changes for a workload created at from: if the config did not exist then, the
// first content it gets after is what the workload first sees, not a change. Without invalidToo
// a content that does not validate is no change (none is to be rolled out).
func (r *recorder) changesSince(name string, whole bool, from time.Time, invalidToo bool) []change {
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

func (r *recorder) exists(name string) bool {
	es := r.configs[name]
	return len(es) > 0 && es[len(es)-1].exists
}

func (r *recorder) isIgnored(name string) bool {
	es := r.ignored[name]
	return len(es) > 0 && es[len(es)-1].mode == "true"
}

// near reports whether two moments are too close for the reloader to see them in order: within
// raceMargin, or both inside one outage (plus raceMargin after it), when the reloader's watches
// catch up in no particular order.
func (r *recorder) near(a, b time.Time) bool {
	if a.Sub(b).Abs() < raceMargin {
		return true
	}
	for _, w := range r.blind {
		in := func(t time.Time) bool { return !t.Before(w[0].Add(-raceMargin)) && t.Before(w[1].Add(raceMargin)) }
		if in(a) && in(b) {
			return true
		}
	}
	return false
}

// triggers reports whether a workload in mode m reloads on config c, and whether on its whole
// content, as stakater's annotations define.
func triggers(m string, refs []ref, c string) (ok, whole bool) {
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

// summary says how much the oracle had to judge: restarts by the reloader and by the checker,
// how many (workload, config) pairs the lost-change check held to a change, and how many of
// them it could not judge, their pods having waited for another config (stale).
func (r *recorder) summary() string {
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
func (r *recorder) judged() (held, unjudged int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.lives() {
		for _, c := range judgedConfigs {
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

// violation is a broken promise, in words.
type violation string

// lost lists, for each live workload and config it reloads on now, a workload that runs another
// content than the config's current one (stale) although it should have taken its last change
// (held). Pairs whose annotations, ignore flag or creation were too close to that change to be
// ordered are skipped (see near).
func (r *recorder) lost() []violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []violation
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
		for _, c := range judgedConfigs {
			if last, ok := r.held(w, c); ok && r.stale(w, c) && !r.baseline(w, c) && !r.keyBaseline(w, c) && !r.heldByRollback(w, c) && !r.leftBehind(w, c) && !r.heldByForgery(w, c) && !r.deletionMaskedByForgery(w, c) {
				out = append(out, violation(fmt.Sprintf("lost: %s (mode %s, reads %s) runs an old content of %s, changed at rv %d by %s\n%s", w.name, w.mode(), w.reads(), c, last.rv, last.by, r.story(w, c))))
			}
		}
	}
	return out
}

// story is what the oracle knew of a lost pair, for the report: the workload's restarts (and
// which were the checker's, rollbacks, or undone) and the config's events. A soak's violation is
// often not reproduced by a replay; this is what is left to trace it with.
func (r *recorder) story(w *workloadLife, c string) string {
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
func (r *recorder) stale(w *workloadLife, c string) bool {
	return r.staleWaiting(w, c, false) && r.staleWaiting(w, c, true)
}

// staleAfterOthers reports whether w's pods, waiting for every config they need, run an old
// content of c, though pods waiting for c alone would not: a change of c the reloader may
// miss, which stale does not judge. The caller holds r.mu.
func (r *recorder) staleAfterOthers(w *workloadLife, c string) bool {
	return r.staleWaiting(w, c, true) && !r.staleWaiting(w, c, false)
}

// staleWaiting is stale with pods that wait for every config they need (all), or for c alone.
// The caller holds r.mu.
func (r *recorder) staleWaiting(w *workloadLife, c string, all bool) bool {
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
	waitUntil := readyAt.Add(raceMargin)
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
func (r *recorder) lastStart(w *workloadLife) int64 {
	started := w.createdRV
	paired := r.rollbacks(w)
	for i, rv := range w.restarts {
		if w.kind == kindCronJob && r.own[rv] {
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
func (r *recorder) podsStart(w *workloadLife, rv int64, only string) (int64, time.Time, bool) {
	var needs []ref
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
		return !slices.ContainsFunc(needs, func(rf ref) bool {
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
func optionalOnly(refs []ref, c string) bool {
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
func (r *recorder) held(w *workloadLife, c string) (change, bool) {
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
func (r *recorder) readSince(w *workloadLife, c string, ch change) bool {
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
func (r *recorder) readAt(w *workloadLife, c string, ch change) bool {
	ok, whole := triggers(w.mode(), w.refsAt(ch.at), c)
	return ok && (whole || slices.ContainsFunc(r.changes(c, false), func(k change) bool { return k.rv == ch.rv }))
}

// baseline reports whether w, which carried no marker of c, runs another content than the one a
// reloader took as its baseline after the state lost c's entry, and c holds that content again:
// for a workload without a marker the state decides, and it says the workload runs the
// baseline (docs/design.md, "How it works"; RELIABILITY.md). Only a workload the reloader has not
// restarted for c since its creation or the checker's last template change counts: one it
// restarted carries a marker, which decides instead. The caller holds r.mu.
func (r *recorder) baseline(w *workloadLife, c string) bool {
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
		if !r.own[rv] && w.touched[i][c] && w.restartAt[i].After(since) && !(isSecret(c) && r.keyLostAfter(w.restartAt[i])) {
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
func (r *recorder) leftBehind(w *workloadLife, c string) bool {
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
func (r *recorder) forgotten(c string, ch change) bool {
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
func (r *recorder) unordered(w *workloadLife, c string, at time.Time) bool {
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
func (r *recorder) switchedOn(w *workloadLife, c string, at time.Time) bool {
	if w.kind != kindCronJob {
		return false
	}
	for i, e := range w.rerefs {
		after := w.refs
		if i+1 < len(w.rerefs) {
			after = w.rerefs[i+1].before
		}
		read := slices.ContainsFunc(e.before, func(rf ref) bool { return rf.Config == c })
		was, _ := triggers(w.mode(), e.before, c)
		is, _ := triggers(w.mode(), after, c)
		if e.at.After(at) && read && !was && is {
			return true
		}
	}
	return false
}

// excess lists workloads the reloader restarted more often than the changes of what they reload
// on during their life: a double restart, or one without a change. A change counts when the
// workload reloaded on it at the time, or when a creation, annotation or ignore change was too
// close to it to tell. It judges the total, counted exactly by generation, and each restart
// seen through the watch (which may merge restarts across a gap, never split one): it must
// carry a change of one of the configs whose variable it set, changed or removed, made before
// it and not carried by an earlier restart. A restart for one config may set another's
// variable too (the reloader gives a workload every marker it lacks when it restarts it
// anyway), so a restart is not held to each config it touched.
func (r *recorder) excess() []violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []violation
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
			out = append(out, violation(fmt.Sprintf("excess: %s (reads %s, modes %v) restarted at rv %d for %v with no change of them left to take since its restarts before; %s",
				w.name, w.reads(), w.modeNames(), rv, touched, r.history(w))))
		}
		byReloader := r.byReloader(w)
		bound := len(r.rollbacks(w).rollback)
		for _, c := range judgedConfigs {
			bound += r.bound(w, c)
		}
		if byReloader > bound {
			out = append(out, violation(fmt.Sprintf("excess: %s (reads %s, modes %v) restarted %d times by the reloader (seen at rv %v) for %d changes of what it reloads on; generation %d, own changes %d, %s",
				w.name, w.reads(), w.modeNames(), byReloader, watched, bound, w.generation, w.ownChanges, r.history(w))))
		}
	}
	return out
}

// history lists, for a report, the reloader's restarts of w with the configs each touched, and
// the changes that count for w. The caller holds r.mu.
func (r *recorder) history(w *workloadLife) string {
	var b strings.Builder
	b.WriteString("restarts:")
	for i, rv := range w.restarts {
		if !r.own[rv] {
			fmt.Fprintf(&b, " %d%v", rv, slices.Sorted(maps.Keys(w.touched[i])))
		}
	}
	b.WriteString("; changes:")
	for _, c := range judgedConfigs {
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
func (r *recorder) unjustified(w *workloadLife) (int64, []string, bool) {
	pending := map[string][]change{}
	for _, c := range judgedConfigs {
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
		for _, c := range judgedConfigs {
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
	for len(pending) > 0 && pending[0].rv < rv && pending[0].at.Before(at.Add(-raceMargin)) {
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
func (r *recorder) excuses(w *workloadLife, c string) []change {
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
func (r *recorder) holdsLost(w *workloadLife, c string) []change {
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

// killed notes a kill -9 of a replica.
func (r *recorder) killed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kills = append(r.kills, time.Now())
}

// unwritten reports whether t falls within writeBehind before a kill -9: what the reloader saw
// then may be lost with the process, as if it had not seen it (docs/design.md: a kill -9
// before a strip's entry is written restarts it once). The caller holds r.mu.
func (r *recorder) unwritten(t time.Time) bool {
	return slices.ContainsFunc(r.kills, func(k time.Time) bool { return !t.After(k) && k.Sub(t) < writeBehind })
}

// blindAt reports whether t falls in an outage, an API server restart, a replica's downtime or
// a span with no leader after a replica was stopped or a leader exited, or within raceMargin after
// one.
func (r *recorder) blindAt(t time.Time) bool {
	return slices.ContainsFunc(r.blind, func(b [2]time.Time) bool { return !t.Before(b[0]) && t.Before(b[1].Add(raceMargin)) })
}

// bound is how many restarts of w changes of config c allow. The caller holds r.mu.
func (r *recorder) bound(w *workloadLife, c string) int {
	n := len(r.excuses(w, c))
	for _, ch := range r.changes(c, true) {
		if r.counts(w, c, ch) {
			n++
		}
	}
	return n
}

// counts reports whether change ch of config c may restart w.
func (r *recorder) counts(w *workloadLife, c string, ch change) bool {
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

func (w *workloadLife) modeNames() []string {
	out := make([]string, len(w.modes))
	for i, m := range w.modes {
		out[i] = m.mode
	}
	return out
}

// lives lists each workload life once (a Job created again is under two UIDs). The caller holds
// r.mu.
func (r *recorder) lives() []*workloadLife {
	var out []*workloadLife
	seen := map[*workloadLife]bool{}
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
func (r *recorder) byReloader(w *workloadLife) int {
	if w.kind == kindJob {
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
func (r *recorder) gated(w *workloadLife) []violation {
	var out []violation
	paired := r.rollbacks(w)
	for i, rv := range w.restarts {
		if r.own[rv] || paired.rollback[i] {
			continue
		}
		at := w.restartAt[i]
		if g, ok := w.gateSince(at.Add(-raceMargin), at); ok && g.holds(r.window) {
			out = append(out, violation(fmt.Sprintf("gated: %s %s reloaded at rv %d while its gate %s held every reload (reload-window %q)",
				w.kind, w.name, rv, g, r.window)))
		}
		if i == 0 || r.own[w.restarts[i-1]] || paired.rollback[i-1] {
			continue
		}
		prev := w.restartAt[i-1]
		if g, ok := w.gateSince(prev.Add(-raceMargin), at); ok && g.minInterval() > 0 && at.Sub(prev) < g.minInterval()-500*time.Millisecond {
			out = append(out, violation(fmt.Sprintf("gated: %s %s reloaded at rv %d and %d, %s apart, under %s",
				w.kind, w.name, w.restarts[i-1], rv, at.Sub(prev).Round(time.Millisecond), g)))
		}
	}
	resumed := map[int]bool{}
	for _, rs := range w.resumes {
		resumed[rs.restart] = true
	}
	for i, rv := range w.restarts {
		if w.kind != kindDeployment || r.own[rv] || paired.rollback[i] || resumed[i] || w.ownerPausedAt(w.restartAt[i]) {
			continue
		}
		at := w.restartAt[i]
		if g, ok := w.gateSince(at.Add(-raceMargin), at); ok && g.pausePeriod() > 0 {
			out = append(out, violation(fmt.Sprintf("gated: %s %s reloaded at rv %d without a pause, under %s",
				w.kind, w.name, rv, g)))
		}
	}
	for _, rs := range w.resumes {
		if r.own[w.restarts[rs.restart]] {
			continue // its owner's resume
		}
		at := w.restartAt[rs.restart]
		g, ok := w.gateSince(rs.pausedAt.Add(-raceMargin), at)
		if d := g.pausePeriod(); ok && d > 0 && at.Sub(rs.pausedAt) < d-500*time.Millisecond {
			out = append(out, violation(fmt.Sprintf("gated: %s %s resumed at rv %d, %s after its pause began, under %s",
				w.kind, w.name, w.restarts[rs.restart], at.Sub(rs.pausedAt).Round(time.Millisecond), g)))
		}
	}
	out = append(out, r.ownerPauseViolations(w, paired)...)
	out = append(out, r.rolloutViolations(w, paired)...)
	for i := range paired.rollback {
		j := paired.of[i]
		for k := j + 1; k < i; k++ {
			if r.own[w.restarts[k]] && w.restartAt[k].Before(w.restartAt[i].Add(-raceMargin)) {
				out = append(out, violation(fmt.Sprintf("rollback: %s %s rolled back its reload at rv %d (rv %d) after another actor changed its template (rv %d): the failure was theirs",
					w.kind, w.name, w.restarts[j], w.restarts[i], w.restarts[k])))
			}
		}
	}
	for i, rv := range w.restarts {
		for c := range w.touched[i] {
			if !r.own[rv] && !paired.rollback[i] && r.invalidAt(c, w.restartAt[i]) {
				out = append(out, violation(fmt.Sprintf("invalid: %s %s reloaded at rv %d for %s, whose content did not validate", w.kind, w.name, rv, c)))
			}
		}
	}
	if w.kind == kindCronJob {
		reloads := r.byReloader(w)
		if len(w.runs) > reloads || w.deletedAt.IsZero() && len(w.runs) < reloads {
			out = append(out, violation(fmt.Sprintf("runs: CronJob %s ran %d Jobs (at rv %v) for %d reloads of its template",
				w.name, len(w.runs), w.runs, reloads)))
		}
	}
	return out
}

// gateSince returns the gate w had throughout [from, to], if no gate was written in between.
func (w *workloadLife) gateSince(from, to time.Time) (gateSpec, bool) {
	var g gateSpec
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

// keyLost notes that the key of Secret hashes was deleted or replaced.
func (r *recorder) keyLost() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keyLosses = append(r.keyLosses, time.Now())
}

// keyLostAfter reports whether the hash key was lost after t. The caller holds r.mu.
func (r *recorder) keyLostAfter(t time.Time) bool {
	return slices.ContainsFunc(r.keyLosses, func(f time.Time) bool { return f.After(t) })
}

// keyBaseline reports whether w runs another content of Secret c than the one the first
// reloader to start after a loss of the hash key found, and c holds that content again: state
// entries and markers made under another key cannot be compared, so that start takes every
// Secret as current (docs/design.md, "Secret hash keys": a change made while the reloader was down and
// its key was lost is not caught up). A content that did not validate then was never rolled
// out: the first valid one after it is taken as current instead (seed 1795701072860836929@4).
// The caller holds r.mu.
func (r *recorder) keyBaseline(w *workloadLife, c string) bool {
	es := r.configs[c]
	if !isSecret(c) || len(es) == 0 || !es[len(es)-1].exists {
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
func (r *recorder) rollbacks(w *workloadLife) pairs {
	p := pairs{rollback: map[int]bool{}, of: map[int]int{}, undone: map[int]int{}}
	if !r.rollback || w.kind == kindJob || w.kind == kindCronJob {
		// CronJobs and Jobs are not followed, so never rolled back (docs/safe-reloads.md, "Safe reloads"):
		// a reload that puts a marker back (a deletion after a recreation) is a run (seed 13@3).
		return p
	}
	j := -1 // the reloader's last restart before i that is no rollback
	for i, rv := range w.restarts {
		if r.own[rv] {
			continue
		}
		if j >= 0 && i < len(w.rolledBack) && w.rolledBack[i] && w.restartAt[i].Sub(w.restartAt[j]) >= rolloutTimeout-500*time.Millisecond && maps.Equal(w.touched[i], w.touched[j]) {
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
func (r *recorder) heldByRollback(w *workloadLife, c string) bool {
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
func (r *recorder) invalidAt(c string, at time.Time) bool {
	var last *configEvent
	for i, e := range r.configs[c] {
		if e.at.Before(at) {
			last = &r.configs[c][i]
		}
	}
	return last != nil && last.invalid && last.at.Before(at.Add(-raceMargin))
}

// readsInvalid reports whether a config w reads holds content that does not validate now: the
// reloader holds every reload of w until it does (a restart would load it). The caller holds
// r.mu.
func (r *recorder) readsInvalid(w *workloadLife) bool {
	return slices.ContainsFunc(w.refs, func(rf ref) bool {
		es := r.configs[rf.Config]
		return len(es) > 0 && es[len(es)-1].invalid
	})
}

// A Deployment's generation moves with its annotations: the reloader's outcome written alone
// (seed 1795669739113515711@4) is no restart; the same move across a watch gap counts, since a
// reload and its rollback leave the template as it was too; and a template change still counts.
func TestAGenerationMovedWithoutATemplateChangeIsNoRestart(t *testing.T) {
	t.Parallel()
	r := newRecorder(sequence{})
	u, err := newWorkload(kindDeployment, "w-4", nil, podTemplate(kindDeployment, "w-4", nil))
	if err != nil {
		t.Fatal(err)
	}
	u.SetUID("uid-4")
	o, _ := decodeWorkload(kindDeployment, u)
	w := &workloadLife{kind: kindDeployment, name: "w-4", uid: u.GetUID(), tmpl: o.tmpl}
	r.workloads[u.GetUID()] = w
	event := func(gen, rv int64, watched bool, annotation string) {
		v := u.DeepCopy()
		v.SetGeneration(gen)
		v.SetResourceVersion(strconv.FormatInt(rv, 10))
		if annotation != "" {
			tmpl := podTemplate(kindDeployment, "w-4", nil)
			tmpl.Annotations = map[string]string{"checker/t": annotation}
			raw, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl)
			_ = unstructured.SetNestedMap(v.Object, raw, wkinds[kindDeployment].tmplPath...)
		}
		r.seen(kindDeployment, v, watched)
	}
	event(1, 10, true, "")
	event(2, 11, true, "a") // a reload
	event(3, 12, true, "a") // its outcome, written alone into the metadata
	w.generation = 3
	if got := r.byReloader(w); got != 1 {
		t.Errorf("reloads counted %d, want 1: an annotation-only write counted as a restart", got)
	}
	event(5, 20, false, "a") // a gap: a reload and its rollback, caught up by a list
	w.generation = 5
	if got := r.byReloader(w); got != 3 {
		t.Errorf("reloads counted %d after a gap, want 3: the two moves across it count, the annotation-only write does not", got)
	}
	event(6, 21, true, "b") // a positive control: a template change right after counts
	w.generation = 6
	if got := r.byReloader(w); got != 4 {
		t.Errorf("reloads counted %d after a template change, want 4", got)
	}
}

// A restart for another config started the pods on c's held content B while c's marker said A;
// then the reloader was stopped, and c went back to A: the stated limit, excused. The excuse
// needs the stop, and c back at the marker's content, and ends with the next restart.
func TestALossLeftBehindByAStoppedReloaderIsTheStatedLimit(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	r := newRecorder(sequence{})
	r.configs["cm-0"] = []configEvent{
		{rv: 5, at: at(5), exists: true, data: content{"a": "A"}},
		{rv: 15, at: at(15), exists: true, data: content{"a": "B"}}, // held
		{rv: 25, at: at(25), exists: true, data: content{"a": "A"}}, // back at the marker's
	}
	w := &workloadLife{name: "w-0", refs: []ref{{Config: "cm-0"}, {Config: "cm-1"}}, modes: []modeEvent{{mode: modeAuto}},
		restarts:  []int64{10, 20},
		touched:   []map[string]bool{{"cm-0": true}, {"cm-1": true}},
		restartAt: []time.Time{at(10), at(20)}}
	if r.leftBehind(w, "cm-0") {
		t.Fatal("excused without a reloader stop")
	}
	r.starts = []time.Time{at(22)}
	if !r.leftBehind(w, "cm-0") {
		t.Fatal("not excused: the pods of the restart at rv 20 read B, the marker says A, and a stop forgot it")
	}
	r.configs["cm-0"] = append(r.configs["cm-0"], configEvent{rv: 30, at: at(30), exists: true, data: content{"a": "C"}})
	if r.leftBehind(w, "cm-0") {
		t.Error("excused while c is at neither content: the marker is stale, and any reloader reloads")
	}
	r.configs["cm-0"] = r.configs["cm-0"][:3]
	w.restarts, w.touched, w.restartAt = append(w.restarts, 40), append(w.touched, map[string]bool{"cm-1": true}), append(w.restartAt, at(40))
	r.configs["cm-0"] = append(r.configs["cm-0"][:2], configEvent{rv: 45, at: at(45), exists: true, data: content{"a": "A"}})
	if r.leftBehind(w, "cm-0") {
		t.Error("excused after a restart made after the stop: its reloader knew what the pods read")
	}
}

// The checker changes a CronJob's image while cm-0 holds B, then cm-0 goes back to A: no Job
// ran in between, so the CronJob's next Job reads A and nothing is owed. A Deployment's pods,
// restarted by the same change, read B (the positive control).
func TestAnotherActorsChangeOfACronJobsTemplateStartsNothing(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	r := newRecorder(sequence{})
	r.configs["cm-0"] = []configEvent{
		{rv: 5, at: at(5), exists: true, data: content{"a": "A"}},
		{rv: 15, at: at(15), exists: true, data: content{"a": "B"}},
		{rv: 25, at: at(25), exists: true, data: content{"a": "A"}},
	}
	r.own[20] = true
	for kind, want := range map[string]bool{kindCronJob: false, kindDeployment: true} {
		w := &workloadLife{kind: kind, name: "w-0", createdRV: 8, refs: []ref{{Config: "cm-0"}}, modes: []modeEvent{{mode: modeAuto}},
			restarts: []int64{20}, touched: []map[string]bool{{}}, restartAt: []time.Time{at(20)}}
		if got := r.stale(w, "cm-0"); got != want {
			t.Errorf("%s: stale %v after the checker's template change at rv 20 and a revert, want %v", kind, got, want)
		}
	}
}

// Pods restarted while cm-0 and cm-1 were both deleted wait for both: cm-0 coming back alone
// starts nothing, and they read what cm-0 holds when cm-1 is back too (soak seed
// 1796187324768317270@10). The positive control: with cm-1 there all along, the pods start
// on cm-0's first return and run its old content.
func TestPodsWaitForEveryConfigTheyNeedBeforeTheyReadAny(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	final := configEvent{rv: 50, at: at(50), exists: true, data: content{"a": "F"}}
	cm0 := []configEvent{
		{rv: 5, at: at(5), exists: true, data: content{"a": "0"}},
		{rv: 15, at: at(15)},
		{rv: 30, at: at(30), exists: true, data: content{"a": "A"}},
		{rv: 35, at: at(35)},
		final,
	}
	for name, tc := range map[string]struct {
		cm1   []configEvent
		stale bool
	}{
		"cm-1 back with cm-0's last return": {cm1: []configEvent{{rv: 6, at: at(6), exists: true, data: content{"a": "1"}}, {rv: 16, at: at(16)}, {rv: 51, at: at(51), exists: true, data: content{"a": "F"}}}},
		"cm-1 there all along":              {cm1: []configEvent{{rv: 6, at: at(6), exists: true, data: content{"a": "1"}}}, stale: true},
		"cm-1 never back":                   {cm1: []configEvent{{rv: 6, at: at(6), exists: true, data: content{"a": "1"}}, {rv: 16, at: at(16)}}},
		"cm-1 back without the key read":    {cm1: []configEvent{{rv: 6, at: at(6), exists: true, data: content{"a": "1"}}, {rv: 16, at: at(16)}, {rv: 31, at: at(31), exists: true, data: content{"b": "1"}}, {rv: 52, at: at(52), exists: true, data: content{"a": "F"}}}},
	} {
		r := newRecorder(sequence{})
		r.configs["cm-0"], r.configs["cm-1"] = cm0, tc.cm1
		w := &workloadLife{kind: kindDeployment, name: "w-1", createdRV: 8, refs: []ref{{Config: "cm-0", Whole: true}, {Config: "cm-1"}},
			modes: []modeEvent{{mode: modeAuto}}, restarts: []int64{20}, touched: []map[string]bool{{}}, restartAt: []time.Time{at(20)}}
		r.own[20] = true
		if got := r.stale(w, "cm-0"); got != tc.stale {
			t.Errorf("%s: stale %v, want %v", name, got, tc.stale)
		}
	}
}

// Pods restarted on cm-0's A while cm-1 was deleted start when cm-1 is back, on cm-0's B; cm-0
// then goes back to A. They run B, but the reloader, which takes them to run A, does not know:
// stale does not judge the pair, and staleAfterOthers counts it. With cm-1 there all along the
// pods run A: neither says anything (the control).
func TestAChangeMadeWhilePodsWaitForAnotherConfigIsCountedNotJudged(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	cm0 := []configEvent{
		{rv: 5, at: at(5), exists: true, data: content{"a": "A"}},
		{rv: 30, at: at(30), exists: true, data: content{"a": "B"}},
		{rv: 50, at: at(50), exists: true, data: content{"a": "A"}},
	}
	for name, tc := range map[string]struct {
		cm1     []configEvent
		counted bool
	}{
		"cm-1 back between": {cm1: []configEvent{{rv: 6, at: at(6), exists: true, data: content{"a": "1"}}, {rv: 16, at: at(16)}, {rv: 40, at: at(40), exists: true, data: content{"a": "1"}}}, counted: true},
		"cm-1 there":        {cm1: []configEvent{{rv: 6, at: at(6), exists: true, data: content{"a": "1"}}}},
	} {
		r := newRecorder(sequence{})
		r.configs["cm-0"], r.configs["cm-1"] = cm0, tc.cm1
		w := &workloadLife{kind: kindDeployment, name: "w-1", createdRV: 8, refs: []ref{{Config: "cm-0", Whole: true}, {Config: "cm-1", Whole: true}},
			modes: []modeEvent{{mode: modeAuto}}, restarts: []int64{20}, touched: []map[string]bool{{}}, restartAt: []time.Time{at(20)}}
		if r.stale(w, "cm-0") {
			t.Errorf("%s: judged stale", name)
		}
		if got := r.staleAfterOthers(w, "cm-0"); got != tc.counted {
			t.Errorf("%s: staleAfterOthers %v, want %v", name, got, tc.counted)
		}
	}
}

// The hash key is lost while sec-0 holds content that does not validate; the next start takes
// the first valid content after it as current (its entry and the markers were made under the
// lost key), so a workload running another content is excused for it, and only for it.
func TestTheFirstValidContentAfterAStartWithALostKeyIsItsBaseline(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	r := newRecorder(sequence{})
	r.configs["sec-0"] = []configEvent{
		{rv: 5, at: at(5), exists: true, data: content{"a": "1"}},
		{rv: 15, at: at(15), exists: true, data: content{"a": "{"}, invalid: true},
		{rv: 35, at: at(35), exists: true, data: content{"a": "2"}},
	}
	r.keyLosses, r.starts = []time.Time{at(20)}, []time.Time{at(30)}
	w := &workloadLife{kind: kindDeployment, name: "w-0", refs: []ref{{Config: "sec-0"}}, modes: []modeEvent{{mode: modeAuto}}}
	if !r.keyBaseline(w, "sec-0") {
		t.Error("not excused: the first valid content after the start is what that start took as current")
	}
	r.configs["sec-0"] = append(r.configs["sec-0"], configEvent{rv: 45, at: at(45), exists: true, data: content{"a": "3"}})
	if r.keyBaseline(w, "sec-0") {
		t.Error("excused for a second valid content: it changed from the one taken as current")
	}
}

// A reloader that starts after a loss of the hash key while its namespace is out of the
// selection first judges the namespace's Secrets when it enters again: the content then is the
// one the lost key's entries are taken for, not the one at the start.
func TestAKeyLossBaselineWaitsForTheNamespaceToEnterTheSelection(t *testing.T) {
	at := secondsFromNow()
	r := newRecorder(sequence{})
	r.configs["sec-0"] = []configEvent{
		{rv: 5, at: at(5), exists: true, data: content{"a": "1"}},
		{rv: 35, at: at(35), exists: true, data: content{"a": "2"}},
	}
	r.keyLosses, r.starts = []time.Time{at(20)}, []time.Time{at(30)}
	w := &workloadLife{kind: kindDeployment, name: "w-0", refs: []ref{{Config: "sec-0"}}, modes: []modeEvent{{mode: modeAuto}}}
	if r.keyBaseline(w, "sec-0") {
		t.Error("the control: with the namespace in the selection, a change after the start is excused")
	}
	r.outs = []outSpan{{left: at(25), leftRV: 25, entered: at(40), enterRV: 40}}
	if !r.keyBaseline(w, "sec-0") {
		t.Error("not excused: the namespace entered the selection after the change, and its first judgement took it as current")
	}
}

// A reload that rode on a resume found the template written during the pause (a marker B of
// cm-0 patched in then); its rollback puts that back, not the markers of the restart before
// (A): it is paired with the resume (soak seed 1796195658658212531@10). The control: the same
// restart taken for no resume is not.
func TestARollbackOfAReloadThatRodeOnAResumePutsBackThePausedTemplate(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	r := newRecorder(sequence{Rollback: true})
	w := &workloadLife{kind: kindDeployment, name: "w-2", marks0: map[string]string{},
		restarts:   []int64{100, 200, 210},
		touched:    []map[string]bool{{"cm-0": true}, {"cm-0": true}, {"cm-0": true}},
		marks:      []map[string]string{{"cm-0": "A"}, {"cm-0": "C"}, {"cm-0": "B"}},
		found:      []map[string]string{{}, {"cm-0": "B"}, {"cm-0": "C"}},
		resumes:    []resume{{restart: 1, pausedAt: at(150)}},
		restartAt:  []time.Time{at(100), at(200), at(204)},
		rolledBack: []bool{false, false, true}}
	if p := r.rollbacks(w); !p.rollback[2] || p.of[2] != 1 {
		t.Fatalf("the rollback of the resume's reload was not paired with it: %+v", p)
	}
	w.resumes = nil
	if p := r.rollbacks(w); p.rollback[2] {
		t.Fatalf("paired though the reload was no resume: the markers went back to none of the restart before: %+v", p)
	}
}

// A reload for a config's deletion, rolloutTimeout after the reload that added the config's
// marker, gives back the markers from before that reload, as a rollback of it would; only the
// reloader's history on the workload, written in the rollback's own patch, tells them apart
// (soak seed 1795734170280237632@4: another actor's change in between made the deletion's
// reload a "rollback after another actor's change").
func TestADeletionReloadIsNoRollbackOfTheReloadBefore(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	r := newRecorder(sequence{Rollback: true})
	w := &workloadLife{kind: kindDeployment, name: "w-3", marks0: map[string]string{},
		restarts:   []int64{220, 223, 239},
		touched:    []map[string]bool{{"cm--2": true}, {}, {"cm--2": true}},
		marks:      []map[string]string{{"cm--2": "X"}, {"cm--2": "X"}, {}},
		restartAt:  []time.Time{at(0), at(1), at(6)},
		rolledBack: []bool{false, false, false}}
	r.own[223] = true
	if p := r.rollbacks(w); len(p.rollback) != 0 {
		t.Fatalf("the deletion's reload was taken for a rollback: %+v", p)
	}
	if v := r.gated(w); len(v) != 0 {
		t.Fatalf("violations for a deletion's reload: %v", v)
	}
	w.rolledBack[2] = true // the control: the same restart, said to be a rollback
	if p := r.rollbacks(w); !p.rollback[2] || p.of[2] != 0 {
		t.Fatalf("a rollback the history names was not paired with the reload it undid: %+v", p)
	}
	if v := r.gated(w); len(v) != 1 || !strings.Contains(string(v[0]), "the failure was theirs") {
		t.Fatalf("a rollback after another actor's change was not reported: %v", v)
	}
}

// A lost pair's report carries what the oracle knew: each restart, whose it was, and the
// config's events, since a soak's violation is often not reproduced by a replay.
func TestALostPairsReportTellsItsRestartsAndTheConfigsEvents(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	r := newRecorder(sequence{})
	r.configs["cm-0"] = []configEvent{
		{rv: 5, at: at(5), exists: true, data: content{"a": "A"}},
		{rv: 15, at: at(15), exists: true, data: content{"a": "B"}, by: "action 3 (update)", unknown: true},
	}
	r.own[12] = true
	w := &workloadLife{name: "w-0", createdRV: 3, refs: []ref{{Config: "cm-0"}}, modes: []modeEvent{{mode: modeAuto}},
		restarts: []int64{10, 12}, touched: []map[string]bool{{"cm-0": true}, {}}, restartAt: []time.Time{at(10), at(12)}}
	got := r.story(w, "cm-0")
	for _, want := range []string{"created at rv 3", "rv 10 at", "for [cm-0]", "rv 12 at", "(the checker's)", `rv 15 at`, `"B" by action 3 (update) (state held none)`} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}

// A reload paused its Deployment for a pause period (rv 611, for cm-1's change at rv 610), the
// checker then rolled out other values of its chart (rv 617, a reref dropping every marker,
// cm--2's among them), and the pause's end rolled both out (rv 621). That resume is the
// reloader's restart for cm-1, not for cm--2: the checker removed cm--2's marker, whether the
// watch shows its write as the checker's before or after the resume (seed 173@9). The same
// writes all by the reloader are a restart for cm--2 with no change to take.
func TestACheckersWriteDuringAPausePeriodTouchesNothingForTheReloader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		own      string // when the checker's write is known as its own: "before", "after", or never
		excessOK bool
	}{
		{name: "known before the resume", own: "before", excessOK: true},
		{name: "known after the resume", own: "after", excessOK: true},
		{name: "all by the reloader", own: "", excessOK: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := secondsFromNow()
			r := newRecorder(sequence{})
			r.configs["cm--2"] = []configEvent{{rv: 1, at: at(-30), exists: true, data: content{"a": "A"}}}
			r.configs["cm-1"] = []configEvent{{rv: 1, at: at(-30), exists: true, data: content{"a": "A"}},
				{rv: 610, at: at(-10), exists: true, data: content{"a": "B"}, by: "the change"}}
			read := []ref{{Config: "cm-1", Whole: true}, {Config: "cm--2"}}
			tmpl := func(refs []ref, hashes string) corev1.PodTemplateSpec {
				t := podTemplate(kindDeployment, "w-0", refs)
				if hashes != "" {
					t.Annotations = map[string]string{"reloader/config-hashes": hashes}
				}
				return t
			}
			before := tmpl(read, `{"configmap/cm--2":"h1"}`) // as created, carrying a marker of cm--2
			u, err := newWorkload(kindDeployment, "w-0", nil, before)
			if err != nil {
				t.Fatal(err)
			}
			u.SetUID("uid-0")
			o, _ := decodeWorkload(kindDeployment, u)
			w := &workloadLife{kind: kindDeployment, name: "w-0", uid: u.GetUID(), createdRV: 2, createdAt: at(-60),
				refs: []ref{{Config: "cm-0", Whole: true}}, modes: []modeEvent{{at: at(-60), mode: modeAuto}},
				rerefs: []reref{{at: at(-5), rv: 617, before: read}}, tmpl: o.tmpl, seenTmpl: o.tmpl, watchGen: 1}
			r.workloads[u.GetUID()] = w
			event := func(gen, rv int64, paused bool, tmpl corev1.PodTemplateSpec) {
				v := u.DeepCopy()
				v.SetGeneration(gen)
				v.SetResourceVersion(strconv.FormatInt(rv, 10))
				raw, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl)
				_ = unstructured.SetNestedMap(v.Object, raw, wkinds[kindDeployment].tmplPath...)
				_ = unstructured.SetNestedField(v.Object, paused, "spec", "paused")
				r.seen(kindDeployment, v, true)
			}
			event(2, 611, true, tmpl(read, `{"configmap/cm--2":"h1","configmap/cm-1":"h2"}`)) // the reload, paused
			if tc.own == "before" {
				r.ownWrite(617)
			}
			rerefed := tmpl([]ref{{Config: "cm-0", Whole: true}}, "")
			event(3, 617, true, rerefed)  // the checker's reref
			event(4, 621, false, rerefed) // the pause period's end
			if tc.own == "after" {
				r.ownWrite(617)
			}
			w.generation, w.ownChanges = 4, 1
			if tc.own == "" {
				w.ownChanges = 0
			}
			if got := slices.Sorted(maps.Keys(w.touched[len(w.touched)-1])); tc.excessOK && !slices.Equal(got, []string{"cm-1"}) {
				t.Errorf("the resume touched %v, want [cm-1]", got)
			}
			excess := r.excess()
			if (len(excess) == 0) != tc.excessOK {
				t.Errorf("excess %v, want none %t", excess, tc.excessOK)
			}
			if !tc.excessOK && !strings.Contains(fmt.Sprint(excess), "restarted at rv 621 for [cm--2]") {
				t.Errorf("not reported as a restart for cm--2 without a change: %v", excess)
			}
		})
	}
}

// secondsFromNow returns the moment s seconds from now, for tables of events.
func secondsFromNow() func(s int) time.Time {
	t0 := time.Now()
	return func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
}
