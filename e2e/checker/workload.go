package checker

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/policy"
)

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
	// found: for each of restarts, the markers just before the last write that changed a
	// marker, which a rollback of it puts back: for a resume that carries a reload, the
	// template written during the pause; for a resume alone, the template before the reload
	// written with the pause. seenMarks are those, kept as the template is replaced.
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

func (w *WorkloadLife) modeNames() []string {
	out := make([]string, len(w.modes))
	for i, m := range w.modes {
		out[i] = m.mode
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
