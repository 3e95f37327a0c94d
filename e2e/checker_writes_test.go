package e2e

import (
	"fmt"
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// The checker's own writes, as the executor reports them to the recorder: each takes the
// recorder's lock, so that the executor never touches what the recorder keeps.

// written records the checker's write of content data to config name at rv.
func (r *recorder) written(name string, rv int64, data content) {
	r.config(name, configEvent{rv: rv, at: time.Now(), exists: true, data: data})
}

// configDeleted records the checker's deletion of config name, at rv. The ignore annotation
// goes with the object: a recreated config is not ignored.
func (r *recorder) configDeleted(name string, rv int64) {
	r.config(name, configEvent{rv: rv, at: time.Now()})
	r.mu.Lock()
	if r.isIgnored(name) {
		r.ignored[name] = append(r.ignored[name], modeEvent{at: time.Now(), mode: "false"})
	}
	r.mu.Unlock()
}

// ignoreSet records the checker's write of config name's ignore annotation ("true"/"false").
func (r *recorder) ignoreSet(name string, at time.Time, value string) {
	r.mu.Lock()
	r.ignored[name] = append(r.ignored[name], modeEvent{at: at, mode: value})
	r.mu.Unlock()
}

// ignoredNow is whether config name is ignored now.
func (r *recorder) ignoredNow(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.isIgnored(name)
}

// previous returns the content config name had before its last write, if it exists now and
// existed then with another content: what a revert of its last change writes.
func (r *recorder) previous(name string) (content, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	es := r.configs[name]
	if len(es) < 2 || !es[len(es)-1].exists || !es[len(es)-2].exists || es[len(es)-2].data.whole() == es[len(es)-1].data.whole() {
		return nil, false
	}
	return maps.Clone(es[len(es)-2].data), true
}

// current returns the content the checker last wrote to config name.
func (r *recorder) current(name string) (content, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	es := r.configs[name]
	if len(es) == 0 || !es[len(es)-1].exists {
		return nil, false
	}
	out := content{}
	for k, v := range es[len(es)-1].data {
		out[k] = v
	}
	return out, true
}

// created records the workload the checker created by a, as the API server returned it (out,
// decoded as o) at, with the configs whose stakater variable lags.
func (r *recorder) created(a action, kind string, out *unstructured.Unstructured, o *wobj, at time.Time, lagged map[string]bool, broken bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.workloads[out.GetUID()] = &workloadLife{name: a.Target, kind: kind, uid: out.GetUID(), refs: a.Refs, createdRV: rvOf(out), createdAt: at,
		modes: []modeEvent{{at: at, mode: a.Mode}}, tmpl: o.tmpl, seenTmpl: o.tmpl, marks0: markers(&o.tmpl), generation: out.GetGeneration(), watchGen: out.GetGeneration(), lagged: lagged,
		onTemplate: a.OnTemplate, gates: []gateEvent{{at: at, gate: a.Gate}}, broken: broken}
}

// live is the live workload name, or nil.
func (r *recorder) live(name string) *workloadLife {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.workloads {
		if l.name == name && l.deletedAt.IsZero() {
			return l
		}
	}
	return nil
}

// uidOf is l's UID now: a Job's changes as the reloader creates it again.
func (r *recorder) uidOf(l *workloadLife) types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return l.uid
}

// generationSeen records the generation a list showed of the workload uid.
func (r *recorder) generationSeen(uid types.UID, generation int64) {
	r.mu.Lock()
	if l := r.workloads[uid]; l != nil {
		l.generation = generation
	}
	r.mu.Unlock()
}

// jobGone ends the life of a Job found deleted at.
func (r *recorder) jobGone(l *workloadLife, at time.Time) {
	r.mu.Lock()
	l.deletedAt = at
	r.mu.Unlock()
}

// deleted records the checker's deletion of l at, at its last generation.
func (r *recorder) deleted(l *workloadLife, at time.Time, generation int64) {
	r.mu.Lock()
	l.deletedAt, l.generation = at, generation
	r.mu.Unlock()
}

// edited records the checker's update of l at, written at rv, which set e; moved: it moved the
// workload's generation, a template change of the checker's own.
func (r *recorder) edited(l *workloadLife, at time.Time, rv int64, e edited, moved bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.mode != "" {
		l.modes = append(l.modes, modeEvent{at: at, mode: e.mode})
	}
	if e.gate != nil {
		l.gates = append(l.gates, gateEvent{at: at, gate: *e.gate})
	}
	if e.refs != nil {
		l.rerefs = append(l.rerefs, reref{at: at, rv: rv, before: l.refs})
		l.refs = e.refs
	}
	if e.paused != nil {
		l.ownerPausedBy(*e.paused, at)
	}
	if moved { // the update was based on what it read, so only it moved the generation
		l.ownChanges++
		l.strips = append(l.strips, change{rv: rv, at: at})
	}
}

// modeNow is l's annotation mode now.
func (r *recorder) modeNow(l *workloadLife) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return l.mode()
}

// ownerPauseSkips is whether an owner's pause of l is skipped: only a Deployment with no pause
// period of its own and not paused already is paused by its owner.
func (r *recorder) ownerPauseSkips(l *workloadLife) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return l.kind != kindDeployment || l.gate().pausePeriod() > 0 || l.ownerPaused()
}

// argoPaused records a pause step of Rollout uid beginning (paused) or ending, as its owner's
// pause, and reports whether that began a pause.
func (r *recorder) argoPaused(uid types.UID, paused bool, at time.Time) (began bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.workloads[uid]
	if l == nil || paused == l.ownerPaused() {
		return false
	}
	l.ownerPausedBy(paused, at)
	return paused
}

// heldByGates names the live workloads whose gate holds their reloads under --reload-window
// window.
func (r *recorder) heldByGates(window string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var held []string
	for _, l := range r.lives() {
		if l.deletedAt.IsZero() && l.gate().holds(window) {
			held = append(held, l.name)
		}
	}
	return held
}

// isOut is whether the namespace is out of --namespace-selector now.
func (r *recorder) isOut() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outNow()
}

// reloaderRestarts is a violation for each workload the reloader restarted, where it only calls
// a webhook.
func (r *recorder) reloaderRestarts() []violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []violation
	for _, l := range r.lives() {
		if n := r.byReloader(l); n > 0 {
			out = append(out, violation(fmt.Sprintf("webhook: %s %s was restarted %d time(s) by the reloader, which only calls the webhook", l.kind, l.name, n)))
		}
	}
	return out
}
