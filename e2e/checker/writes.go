package checker

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// The checker's own writes, as the executor reports them to the recorder: each takes the
// recorder's lock, so that the executor never touches what the recorder keeps.

// Written records the checker's write of content data to config name at rv.
func (r *ConfigLog) Written(name string, rv int64, data Content) {
	r.config(name, configEvent{rv: rv, at: time.Now(), exists: true, data: data})
}

// ConfigDeleted records the checker's deletion of config name, at rv. The ignore annotation
// goes with the object: a recreated config is not ignored.
func (r *ConfigLog) ConfigDeleted(name string, rv int64) {
	r.config(name, configEvent{rv: rv, at: time.Now()})
	r.mu.Lock()
	if r.isIgnored(name) {
		r.ignored[name] = append(r.ignored[name], modeEvent{at: time.Now(), mode: "false"})
	}
	r.mu.Unlock()
}

// IgnoreSet records the checker's write of config name's ignore annotation ("true"/"false").
func (r *ConfigLog) IgnoreSet(name string, at time.Time, value string) {
	r.mu.Lock()
	r.ignored[name] = append(r.ignored[name], modeEvent{at: at, mode: value})
	r.mu.Unlock()
}

// IgnoredNow is whether config name is ignored now.
func (r *ConfigLog) IgnoredNow(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.isIgnored(name)
}

// Previous returns the content config name had before its last write, if it exists now and
// existed then with another content: what a revert of its last change writes.
func (r *ConfigLog) Previous(name string) (Content, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	es := r.configs[name]
	if len(es) < 2 || !es[len(es)-1].exists || !es[len(es)-2].exists || es[len(es)-2].data.whole() == es[len(es)-1].data.whole() {
		return nil, false
	}
	return maps.Clone(es[len(es)-2].data), true
}

// Current returns the content the checker last wrote to config name.
func (r *ConfigLog) Current(name string) (Content, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	es := r.configs[name]
	if len(es) == 0 || !es[len(es)-1].exists {
		return nil, false
	}
	out := Content{}
	for k, v := range es[len(es)-1].data {
		out[k] = v
	}
	return out, true
}

// Created records the workload the checker created by a, as the API server returned it (out,
// decoded as o) at, with the configs whose stakater variable lags.
func (r *WorkloadLog) Created(a Action, kind string, out *unstructured.Unstructured, o *Object, at time.Time, lagged map[string]bool, broken bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.workloads[out.GetUID()] = &WorkloadLife{name: a.Target, Kind: kind, uid: out.GetUID(), refs: a.Refs, createdRV: RVOf(out), createdAt: at,
		modes: []modeEvent{{at: at, mode: a.Mode}}, tmpl: o.Template, seenTmpl: o.Template, marks0: markers(&o.Template), generation: out.GetGeneration(), watchGen: out.GetGeneration(), lagged: lagged,
		OnTemplate: a.OnTemplate, gates: []gateEvent{{at: at, gate: a.Gate}}, broken: broken}
}

// Live is the live workload name, or nil.
func (r *WorkloadLog) Live(name string) *WorkloadLife {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.workloads {
		if l.name == name && l.deletedAt.IsZero() {
			return l
		}
	}
	return nil
}

// UIDOf is l's UID now: a Job's changes as the reloader creates it again.
func (r *WorkloadLog) UIDOf(l *WorkloadLife) types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return l.uid
}

// GenerationSeen records the generation a list showed of the workload uid.
func (r *Recorder) GenerationSeen(uid types.UID, generation int64) {
	r.mu.Lock()
	if l := r.workloads[uid]; l != nil {
		l.generation = generation
	}
	r.mu.Unlock()
}

// JobGone ends the life of a Job found deleted at.
func (r *WorkloadLog) JobGone(l *WorkloadLife, at time.Time) {
	r.mu.Lock()
	l.deletedAt = at
	r.mu.Unlock()
}

// Deleted records the checker's deletion of l at, at its last generation.
func (r *WorkloadLog) Deleted(l *WorkloadLife, at time.Time, generation int64) {
	r.mu.Lock()
	l.deletedAt, l.generation = at, generation
	r.mu.Unlock()
}

// Edited records the checker's update of l at, written at rv, which set e; moved: it moved the
// workload's generation, a template change of the checker's own.
func (r *WorkloadLog) Edited(l *WorkloadLife, at time.Time, rv int64, e Edited, moved bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Mode != "" {
		l.modes = append(l.modes, modeEvent{at: at, mode: e.Mode})
	}
	if e.Gate != nil {
		l.gates = append(l.gates, gateEvent{at: at, gate: *e.Gate})
	}
	if e.Refs != nil {
		l.rerefs = append(l.rerefs, reref{at: at, rv: rv, before: l.refs})
		l.refs = e.Refs
	}
	if e.Paused != nil {
		l.ownerPausedBy(*e.Paused, at)
	}
	if moved { // the update was based on what it read, so only it moved the generation
		l.ownChanges++
		l.strips = append(l.strips, change{rv: rv, at: at})
	}
}

// ModeNow is l's annotation mode now.
func (r *WorkloadLog) ModeNow(l *WorkloadLife) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return l.mode()
}

// OwnerPauseSkips is whether an owner's pause of l is skipped: only a Deployment with no pause
// period of its own and not paused already is paused by its owner.
func (r *WorkloadLog) OwnerPauseSkips(l *WorkloadLife) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return l.Kind != KindDeployment || l.gate().pausePeriod() > 0 || l.ownerPaused()
}

// ArgoPaused records a pause step of Rollout uid beginning (paused) or ending, as its owner's
// pause, and reports whether that began a pause.
func (r *WorkloadLog) ArgoPaused(uid types.UID, paused bool, at time.Time) (began bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.workloads[uid]
	if l == nil || paused == l.ownerPaused() {
		return false
	}
	l.ownerPausedBy(paused, at)
	return paused
}

// HeldByGates names the live workloads whose gate holds their reloads under --reload-window
// window.
func (r *WorkloadLog) HeldByGates(window string) []string {
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

// IsOut is whether the namespace is out of --namespace-selector now.
func (r *Recorder) IsOut() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outNow()
}

// ReloaderRestarts is a violation for each workload the reloader restarted, where it only calls
// a webhook.
func (r *Oracle) ReloaderRestarts() []Violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Violation
	for _, l := range r.lives() {
		if n := r.excess.byReloader(l); n > 0 {
			out = append(out, Violation(fmt.Sprintf("webhook: %s %s was restarted %d time(s) by the reloader, which only calls the webhook", l.Kind, l.name, n)))
		}
	}
	return out
}

func (r *WorkloadLog) OwnWrite(rv int64) {
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
