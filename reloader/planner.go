package reloader

import (
	"encoding/json"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/reloader/reloader/coalesce"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/jobs"
	"github.com/reloader/reloader/reloader/runs"
	"github.com/reloader/reloader/reloader/safe"
	"github.com/reloader/reloader/reloader/workload"
)

// planner judges a workload now, read only: what is due and which hold keeps it (plan), for the
// sync to act on and Explain to tell.
type planner struct {
	rule       *rule
	caches     *caches
	gates      *safe.Gates
	validation *safe.Validation
	clock      coalesce.Clock
}

// plan judges workload w against every config it reloads on, and says which hold, if any,
// keeps what is due; it only reads.
func (pl *planner) plan(w workload.View) plan {
	p := plan{due: pl.dueChanges(w)}
	due := len(p.changes) > 0
	switch {
	case due && jobs.Suspended(w.Obj):
		p.next = stepSuspended
		return p
	case !due && !pl.gates.Resumes(w):
		return p
	}
	p.validated, p.invalid = true, pl.validation.InvalidUsed(w)
	if due {
		p.gate = pl.gates.Of(w)
		p.verdict = p.gate.Decide(pl.clock.Now())
	}
	switch {
	case len(p.invalid) > 0:
		p.next = stepInvalid
	case !due:
		p.next = stepUpToDate // the resume ends the pause
	case p.verdict.Action == policy.Hold || p.verdict.Action == policy.StartPause:
		p.next = stepGated
	default:
		p.next = stepReload
	}
	return p
}

// dueChanges judges workload w against every config it reloads on; it only reads.
func (pl *planner) dueChanges(w workload.View) due {
	refs := pl.rule.ReloadsOn(w)
	d := due{reads: make(map[policy.ConfigRef]*runs.Read, len(refs)), pairs: make([]pair, 0, len(refs))}
	for _, r := range refs {
		if !pl.caches.Watched(r.Kind) {
			d.pairs = append(d.pairs, pair{ref: r})
			continue
		}
		rec := pl.caches.lookup(workload.ConfigKey(r, w.Key.Namespace))
		j, triggers := pl.rule.judge(w, r, rec)
		d.pairs = append(d.pairs, pair{ref: r, watched: true, rec: rec, j: j, triggers: triggers})
		if j.StaleHold {
			d.staleHolds = append(d.staleHolds, workload.Dependent{Workload: w.Key, Judgement: j})
		}
		switch {
		case triggers && rec != nil:
			// A config this restart leaves behind its marker (its reload held, or left to the
			// state) is read by the new pods as it is: they run it whatever the marker says.
			d.reads[r] = &runs.Read{Value: j.Change.Value, Keys: j.Keys, Vouched: j.Vouched || j.Behind && !j.Reload}
		case triggers && policy.Waits(&w.Tmpl.Spec, r):
			// Left as it is, or set to the deletion: the pods wait for the config (reloader/runs).
			d.reads[r] = &runs.Read{Keys: j.Keys, Absent: true}
		case triggers:
			// Read through optional key refs only: the pods start without it (reloader/runs).
			d.reads[r] = &runs.Read{Keys: j.Keys, None: true}
		}
		if triggers && j.Reload {
			d.changes = append(d.changes, j.Change)
		}
		if triggers && j.Held {
			d.held = append(d.held, r)
		}
		if triggers && rec != nil && !j.OwnMarker() {
			d.unmarked = append(d.unmarked, r)
		}
	}
	return d
}

// CurrentMarkers gives a written-down Job the markers of the content its configs hold now: its
// pods read that content when they start, so the markers of the content the recreation was
// decided on would have it recreated once more, a run for no change (checker seed 21@3). A
// config whose content does not validate keeps its marker, as in any reload. Its gate's
// annotations are those of a reload now: under a minimum interval the next reload counts from
// this creation, not from the decision, which a refusal or a stop may have left far behind
// (soak seed 1795656990008005199). A Job in a namespace that left the selection since the
// decision is created too (it was deleted), and its pods read the content now as well: created
// with the old markers, it was recreated for nothing once the namespace came back (soak seed
// 1795668697359437002@4).
func (pl *planner) CurrentMarkers(job *batchv1.Job) (*batchv1.Job, error) {
	w, ok := pl.rule.viewInAnyNamespace(pl.caches.kinds["Job"], job)
	if !ok {
		return job, nil
	}
	now := pl.clock.Now()
	d := pl.dueChanges(w)
	ops, err := w.Target.Ops(w.Meta, w.Tmpl, d.changes, now)
	if err != nil {
		return job, err
	}
	if len(ops) > 0 {
		ops = ops[1:] // the resourceVersion test: a written-down Job has none
	}
	ops = append(ops, pl.gates.Ops(w, pl.gates.Of(w), policy.Verdict{Action: policy.ReloadNow})...)
	if len(ops) == 0 {
		return job, nil
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encode the markers of Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return jobs.RecreatedJob(job, body)
}

// JobInvalid lists the configs the pods of Job job would read whose content does not validate.
func (pl *planner) JobInvalid(job *batchv1.Job) []string {
	w, ok := pl.rule.viewInAnyNamespace(pl.caches.kinds["Job"], job)
	if !ok {
		return nil
	}
	return pl.validation.InvalidUsed(w)
}
