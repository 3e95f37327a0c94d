package checker

import (
	"cmp"
	"slices"
	"time"
)

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
func (r *reads) stale(w *WorkloadLife, c string) bool {
	return r.staleWaiting(w, c, false) && r.staleWaiting(w, c, true)
}

// staleAfterOthers reports whether w's pods, waiting for every config they need, run an old
// content of c, though pods waiting for c alone would not: a change of c the reloader may
// miss, which stale does not judge. The caller holds r.mu.
func (r *reads) staleAfterOthers(w *WorkloadLife, c string) bool {
	return r.staleWaiting(w, c, true) && !r.staleWaiting(w, c, false)
}

// staleWaiting is stale with pods that wait for every config they need (all), or for c alone.
// The caller holds r.mu.
func (r *reads) staleWaiting(w *WorkloadLife, c string, all bool) bool {
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
func (r *reads) lastStart(w *WorkloadLife) int64 {
	started := w.createdRV
	paired := r.gates.rollbacks(w)
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
func (r *reads) podsStart(w *WorkloadLife, rv int64, only string) (int64, time.Time, bool) {
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

// readSince reports whether w reloaded on change ch of c when it was made, and on c through
// every reref since (gen 7): a change of a config its template did not read then is no change
// for it (the reref's rollout, or its next start, gives its pods what the config holds), and
// one it stopped reading meanwhile may have been judged while it did not read it. A CronJob
// still reading c is owed its run: the checker's change of its template runs no Job. The caller
// holds r.mu.
func (r *reads) readSince(w *WorkloadLife, c string, ch change) bool {
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
func (r *reads) readAt(w *WorkloadLife, c string, ch change) bool {
	ok, whole := triggers(w.mode(), w.refsAt(ch.at), c)
	return ok && (whole || slices.ContainsFunc(r.changes(c, false), func(k change) bool { return k.rv == ch.rv }))
}

// baseline reports whether w, which carried no marker of c, runs another content than the one a
// reloader took as its baseline after the state lost c's entry, and c holds that content again:
// for a workload without a marker the state decides, and it says the workload runs the
// baseline (docs/design.md, "How it works"; RELIABILITY.md). Only a workload the reloader has not
// restarted for c since its creation or the checker's last template change counts: one it
// restarted carries a marker, which decides instead, unless a rollback took that reload back.
// The caller holds r.mu.
func (r *reads) baseline(w *WorkloadLife, c string) bool {
	since := w.createdAt
	for i, rv := range w.restarts {
		if r.own[rv] {
			since = w.restartAt[i]
		}
	}
	p := r.gates.rollbacks(w)
	for i, rv := range w.restarts {
		if _, undone := p.undone[i]; undone || p.rollback[i] {
			// A rolled-back reload and its rollback leave the markers as they were before it: a
			// first reload's rollback leaves none (soak seed 1796228396239938668@10).
			continue
		}
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

// keyBaseline reports whether w runs another content of Secret c than the one the first
// reloader to start after a loss of the hash key found, and c holds that content again: state
// entries and markers made under another key cannot be compared, so that start takes every
// Secret as current (docs/design.md, "Secret hash keys": a change made while the reloader was down and
// its key was lost is not caught up). A content that did not validate then was never rolled
// out: the first valid one after it is taken as current instead (seed 1795701072860836929@4).
// The caller holds r.mu.
func (r *reads) keyBaseline(w *WorkloadLife, c string) bool {
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

// readsInvalid reports whether a config w reads holds content that does not validate now: the
// reloader holds every reload of w until it does (a restart would load it). The caller holds
// r.mu.
func (r *reads) readsInvalid(w *WorkloadLife) bool {
	return slices.ContainsFunc(w.refs, r.invalidNow)
}

// readsInvalidSecret is readsInvalid of the Secrets w reads. The caller holds r.mu.
func (r *reads) readsInvalidSecret(w *WorkloadLife) bool {
	return slices.ContainsFunc(w.refs, func(rf Ref) bool { return IsSecret(rf.Config) && r.invalidNow(rf) })
}

// invalidNow reports whether the config rf reads holds content that does not validate now.
// The caller holds r.mu.
func (r *reads) invalidNow(rf Ref) bool {
	es := r.configs[rf.Config]
	return len(es) > 0 && es[len(es)-1].invalid
}
