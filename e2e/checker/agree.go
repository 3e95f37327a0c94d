package checker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// The agreement rule (issue 49, point 5): once the controller has settled, a reloader started
// now must have nothing to do. reloader explain is that reloader: it loads the same state,
// syncs the same caches and runs the same start-up pass and plan, in memory. So at every
// settled point the checker asks it about every live workload, with the replicas' flags, and
// "reload" is a violation: the settled controller left a change undone, or its next start
// would restart the workload once more.

// ExplainReport is what reloader explain -o json prints, as far as the checker reads it.
type ExplainReport struct {
	Reloader struct {
		Found bool   `json:"found"`
		Flags string `json:"flags"`
	} `json:"reloader"`
	reloader.Explanation
}

// ExplainTarget is a live workload to explain, with what the oracle knows holds its reloads.
type ExplainTarget struct {
	Kind, Name string
	gated      bool // its gate holds every reload (a closed window, a value that is none)
	invalid    bool // it reads a config whose content does not validate
	// invalidSecret: one of those is a Secret; withoutSecrets: explain was asked with Secrets
	// ignored (the hash key Secret deleted), so it cannot see that hold, which the planner puts
	// before a gate's and a reload.
	invalidSecret, withoutSecrets bool
	// remembered: configs whose current content the running reloader knows its pods read
	// (reads.remembered), whatever its marker says.
	remembered map[string]bool
	// waiting: configs w's pods have not read yet, since they still wait for a config they need
	// (every one of them then), or read later than the reloader takes them to: they waited for
	// another config too (stale). Whether it reloads them now, after a refused patch's backoff,
	// or not at all, they run each one's current content, and the oracle does not wait for it
	// (soak seed 1796187324768317270@10 made fixed seed 1795446428096566055@1 settle before such
	// a retry). Nor can explain know what the running reloader saw of them: a fresh process
	// reloads pods that waited for a config that came back unseen, the running one knows they
	// took it (soak seed 1796193212583686282@10: cm-1 came back while the namespace was out of
	// the selection).
	waiting map[string]bool
	// forged: configs of a strip the checker forged of w, which no process has loaded since
	// (forgedStripUnread) and which still stands in the state (KeepStanding). The running
	// reloader keeps its strips in memory, does not read it, and writes it away at its next
	// check of the shard; explain, like a reloader started now, takes it and restarts w once,
	// as SECURITY.md allows a strip (the replica down for the forgery was not the leader).
	forged map[string]bool
}

// KeepStanding keeps, of the forged strips tg is excused for, those stands reports still in
// the state as the checker forged them.
func (tg *ExplainTarget) KeepStanding(stands func(kind, name, config string) bool) {
	for c := range tg.forged {
		if !stands(tg.Kind, tg.Name, c) {
			delete(tg.forged, c)
		}
	}
}

// WithoutSecrets notes that explain was asked with Secrets ignored.
func (tg *ExplainTarget) WithoutSecrets() { tg.withoutSecrets = true }

// GateEnds is when the pause or minimum interval that holds a workload's due reload ends, or
// zero: a window does not end by itself in the checker (closed windows open hours later).
func GateEnds(rep ExplainReport) time.Time {
	var at time.Time
	if rep.Next != "held-by-gate" {
		return at
	}
	for _, t := range []*time.Time{rep.Gate.PauseUntil, rep.Gate.NextAllowed} {
		if t != nil && t.After(at) {
			at = *t
		}
	}
	return at
}

// Disagreement is the violation of one explanation, or "". out: the namespace is out of
// --namespace-selector now, where the oracle owes nothing.
func Disagreement(tg ExplainTarget, rep ExplainReport, out bool) Violation {
	var due, whys []string
	for _, c := range rep.Configs {
		if c.Reload && !(tg.remembered[c.Name] && c.Why == policy.MarkerStale.String()) && !tg.waiting[c.Name] &&
			!(tg.forged[c.Name] && c.Why == policy.StripStale.String()) {
			due = append(due, c.Kind+"/"+c.Name)
			whys = append(whys, c.Why)
		}
	}
	why := strings.Join(slices.Compact(whys), "; ")
	next := rep.Next
	if tg.withoutSecrets && tg.invalidSecret && (next == "reload" || next == "held-by-gate") {
		next = "held-invalid" // as the running reloader holds it, for the Secret explain ignored
	}
	switch {
	case next == "up-to-date":
		return ""
	case len(due) == 0 && next != reloader.NextNotWatched:
		return "" // every config due is one the running reloader remembers its pods read
	}
	switch next {
	case reloader.NextNotWatched:
		if out {
			return ""
		}
		return Violation(fmt.Sprintf("disagree: explain says the reloader does not watch %s, but the namespace is in its selection", tg.Name))
	case "held-by-gate":
		if tg.gated {
			return "" // the oracle owes it nothing until its gate opens (Oracle.Lost)
		}
	case "held-invalid":
		if tg.invalid {
			return "" // the oracle owes it nothing while it reads that content
		}
	case "reload":
		return Violation(fmt.Sprintf("disagree: explain says %s reloads for %v (why: %s), but the settled controller does not", tg.Name, due, why))
	}
	return Violation(fmt.Sprintf("disagree: explain says %s is %s for %v (why: %s: %s), which the oracle knows no hold for", tg.Name, next, due, why, rep.Decision))
}

// ExplainTargets are the live workloads, and whether the namespace is out of the selection.
func (r *Oracle) ExplainTargets() ([]ExplainTarget, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ExplainTarget
	for _, w := range r.lives() {
		if w.deletedAt.IsZero() {
			_, _, started := r.reads.podsStart(w, r.reads.lastStart(w), "")
			waiting := !started
			tg := ExplainTarget{Kind: w.Kind, Name: w.name, gated: w.gate().holds(r.window), invalid: r.reads.readsInvalid(w),
				invalidSecret: r.reads.readsInvalidSecret(w), remembered: map[string]bool{}, waiting: map[string]bool{}, forged: map[string]bool{}}
			for _, c := range JudgedConfigs {
				tg.remembered[c] = r.reads.remembered(w, c)
				tg.forged[c] = r.forgedStripUnread(w, c)
				tg.waiting[c] = waiting || r.reads.staleWaiting(w, c, false) && !r.reads.staleWaiting(w, c, true)
			}
			out = append(out, tg)
		}
	}
	slices.SortFunc(out, func(a, b ExplainTarget) int { return strings.Compare(a.Name, b.Name) })
	return out, r.outNow()
}

// remembered reports whether the running reloader knows from its memory of w's last restart
// that w's pods run config c as it is now, which explain cannot know (docs/explain.md, "What it
// cannot know"): that restart was the reloader's, no reloader process began to act since (a
// start forgets it; a restart by a start-up pass, made before its process is seen ready, is in
// that process's memory), and the oracle too finds the pods running c's current content. Their
// marker of c may still name an older one: a reload for another config sets no marker of a
// config not due itself (a creation without --reload-on-create: fixed seed 2@1's final round),
// and pods restarted while c was absent wait for it and start on its recreation (seed 4906@9, a
// Job). A reloader started now would restart w once more for c: no change lost, and none beyond
// the changes of c the oracle counts. The caller holds r.mu.
func (r *reads) remembered(w *WorkloadLife, c string) bool {
	n := len(w.restarts)
	if n == 0 || r.own[w.restarts[n-1]] || r.stale(w, c) {
		return false
	}
	return !slices.ContainsFunc(r.acting, func(st time.Time) bool { return st.After(w.restartAt[n-1]) })
}
