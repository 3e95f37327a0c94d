package checker

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

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

// history is what the recorder saw, under one lock, and the questions about it every part of
// the recorder asks. The parts, each over the same history:
//   - ConfigLog and WorkloadLog record the executor's writes of configs and workloads;
//   - reads says what a workload's pods read, and when they started;
//   - Oracle judges changes lost, and excess judges restarts that no change explains;
//   - gates judges reloads against gates, owner pauses and rollbacks.
type history struct {
	Configs   *ConfigLog
	Workloads *WorkloadLog
	Oracle    *Oracle
	reads     *reads
	excess    *excess
	gates     *gates

	mu        sync.Mutex
	configs   map[string][]configEvent
	ignored   map[string][]modeEvent // "true"/"false" per config
	workloads map[types.UID]*WorkloadLife
	own       map[int64]bool    // resourceVersions the checker wrote to Deployments
	blind     [][2]time.Time    // outages, API server restarts, downtimes, spans with no leader
	cuts      [][2]time.Time    // outages and API server restarts: no reloader could watch
	changedAt time.Time         // when a template last changed
	gaps      int               // watch gaps caught up by a list: restarts there may be undercounted
	amnesia   map[string][]loss // when the state lost each config's entry
	// unknownNext: configs whose next write finds no content for them in the state.
	unknownNext map[string]bool
	starts      []time.Time // when reloader processes started
	// acting: when each of starts began to act, its caches synced, by its own log: a restart
	// from then on is its own, which it remembers (remembered), and may come before its start.
	acting []time.Time
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

func (r *history) config(name string, e configEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.unknown, e.by = r.unknownNext[name], r.step
	if a, ok := e.data["a"]; ok && e.exists && slices.Contains(r.validated, name) {
		e.invalid = !json.Valid([]byte(a))
	}
	delete(r.unknownNext, name)
	r.configs[name] = append(r.configs[name], e)
}

// lostWithState reports whether Job w may be gone for good: the reloader deleted it to create
// it again, and before the create (refused, or not yet made) the state ConfigMap holding the
// recreation's note was deleted and a reloader process started after that, so no process
// remembers the Job (seed 1795657828041649784@4: a refused create, state-delete, kill -9).
// Nothing in the cluster records it any more; no reloader can create it. The caller holds r.mu.
func (r *history) lostWithState(w *WorkloadLife) bool {
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
func (r *history) lostWithKey(w *WorkloadLife) bool {
	if w.Kind != KindJob || len(w.jobGone) == 0 || len(r.keyLosses) == 0 {
		return false
	}
	n := len(w.restartAt)
	return n == 0 || !w.restartAt[n-1].After(w.jobGone[len(w.jobGone)-1])
}

// refold sets what restart i of w, a resume, touched: where the checker wrote the template during
// the pause, only the configs whose marker the other writes changed. The caller holds r.mu.
func (r *history) refold(w *WorkloadLife, i int) {
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

// changes lists the changes of what a reader of config name sees (the whole content, or only
// key "a") that may restart a workload. A content that does not validate counts: no reload may
// take it, but a restart for another config gives the pods it, and the next valid content is
// then a change for them.
func (r *history) changes(name string, whole bool) []change {
	return r.changesSince(name, whole, time.Time{}, true)
}

// changesSince is changes for a workload created at from: if the config did not exist then, the
// first content it gets after is what the workload first sees, not a change. Without invalidToo
// a content that does not validate is no change (none is to be rolled out).
func (r *history) changesSince(name string, whole bool, from time.Time, invalidToo bool) []change {
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

func (r *history) exists(name string) bool {
	es := r.configs[name]
	return len(es) > 0 && es[len(es)-1].exists
}

func (r *history) isIgnored(name string) bool {
	es := r.ignored[name]
	return len(es) > 0 && es[len(es)-1].mode == "true"
}

// near reports whether two moments are too close for the reloader to see them in order: within
// raceMargin, or both inside one outage (plus raceMargin after it), when the reloader's watches
// catch up in no particular order.
func (r *history) near(a, b time.Time) bool {
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

// forgotten reports whether the reloader that judged c's change at at may not have known the
// content c had before it: the state held no content for c just before the change (noteUnknown),
// and it had lost c's entry (the ConfigMap deleted, the entry corrupted, a tombstone without a
// hash) or never held one before a reloader process started, which then began from what it
// found. For a workload without a marker such a change is indistinguishable from a first start,
// or a first content, which restarts nothing (docs/design.md, "How it works"). The final round is
// judged the same way: a config that was absent when the state was lost has no content in it.
func (r *history) forgotten(c string, ch change) bool {
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
func (r *history) unordered(w *WorkloadLife, c string, at time.Time) bool {
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
func (r *history) switchedOn(w *WorkloadLife, c string, at time.Time) bool {
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

// writeBehind bounds how long after seeing something the reloader has written what it needs
// of it to the state: the store's 50 ms linger and a write under load.
const writeBehind = 500 * time.Millisecond

// unwritten reports whether t falls within writeBehind before a kill -9: what the reloader saw
// then may be lost with the process, as if it had not seen it (docs/design.md: a kill -9
// before a strip's entry is written restarts it once). The caller holds r.mu.
func (r *history) unwritten(t time.Time) bool {
	return slices.ContainsFunc(r.kills, func(k time.Time) bool { return !t.After(k) && k.Sub(t) < writeBehind })
}

// blindAt reports whether t falls in an outage, an API server restart, a replica's downtime or
// a span with no leader after a replica was stopped or a leader exited, or within raceMargin after
// one.
func (r *history) blindAt(t time.Time) bool {
	return slices.ContainsFunc(r.blind, func(b [2]time.Time) bool { return !t.Before(b[0]) && t.Before(b[1].Add(RaceMargin)) })
}

// lives lists each workload life once (a Job created again is under two UIDs). The caller holds
// r.mu.
func (r *history) lives() []*WorkloadLife {
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

// keyLostAfter reports whether the hash key was lost after t. The caller holds r.mu.
func (r *history) keyLostAfter(t time.Time) bool {
	return slices.ContainsFunc(r.keyLosses, func(f time.Time) bool { return f.After(t) })
}

// invalidAt reports whether config c held content that does not validate, written more than
// raceMargin before, when a restart at rv, seen at at, was written. A write precedes the restart
// when its rv is lower (the executor records a write when its call returns, which may be after
// the watch saw the reload it caused) or it was recorded before (a deletion's rv may come from a
// list after it). The caller holds r.mu.
func (r *history) invalidAt(c string, rv int64, at time.Time) bool {
	var last *configEvent
	for i, e := range r.configs[c] {
		if e.rv < rv || e.at.Before(at) {
			last = &r.configs[c][i]
		}
	}
	return last != nil && last.invalid && last.at.Before(at.Add(-RaceMargin))
}
