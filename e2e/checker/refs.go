package checker

import (
	"fmt"
	"slices"
	"time"
)

// Generator version 7: what a workload's template reads changes over its life, drawn from an
// eighth stream so that version 6 keeps its sequences. The reloader keeps its own index of
// workloads by the configs they read (reloader/dependents.go), moved by the workload
// informer's updates: these actions are what moves it.
//   - reref: the checker's own rollout of a workload (not a Job: its template cannot change)
//     reading another set of configs, drawn as a creation draws them: a helm upgrade with other
//     values, which renders the chart's template (without the reloader's markers, as a strip)
//     and the mode's annotations for the new configs. Half the time it is followed, past
//     raceMargin, by a change of a config it now reads and did not before (which it must take)
//     or of one it no longer reads (which must restart nothing).
//   - replaceWorkload: a workload deleted and created again at once, of the same kind and under
//     the same name, reading other configs: across an API server restart or a watch gap the
//     reloader may see it as an update with another UID.
//
// What the oracle expects (reads.readSince, readAt): a change counts for a workload by what
// its template read when the change was made; a workload is held to a change only if it still
// reads the config, and read it through every reref since (the reref's own rollout gives its
// pods what the config holds then: the checker's last template change, as for a strip).

// rerefDraws is how often the generator draws, after a main action, a reref (one in rerefEvery)
// and a replacement (one in replaceEvery).
const rerefEvery, replaceEvery = 8, 16

// reref draws a change of what a live workload's template reads, and half the time a change of
// a config it began or stopped reading. Nil when no workload but Jobs lives.
func (g *featureDraws) reref() []Action {
	var live []string
	for _, w := range workloadNames {
		if g.workloads[w] && g.kinds[w] != KindJob {
			live = append(live, w)
		}
	}
	if len(live) == 0 {
		return nil
	}
	w := pick(g.eighth, live)
	before := g.refs[w]
	a := Action{Op: "reref", Target: w, Refs: g.otherRefs(before), Pause: g.eighthPause()}
	g.refs[w] = a.Refs
	if g.eighth.IntN(2) == 0 {
		return []Action{a}
	}
	// Past raceMargin, so that the oracle orders the change after the reref.
	a.Pause = time.Duration(2500+g.eighth.IntN(1000)) * time.Millisecond
	added, dropped := g.readers(a.Refs, before), g.readers(before, a.Refs)
	out := []Action{a}
	for _, cs := range [][]string{added, dropped} {
		if len(cs) > 0 && g.eighth.IntN(3) != 0 {
			g.fresh++ // a JSON number no other action writes, valid where key a is validated
			out = append(out, Action{Op: "update", Target: pick(g.eighth, cs), Key: "a", Value: fmt.Sprint(100 + g.fresh), Pause: g.eighthPause()})
		}
	}
	return out
}

// readers are the existing configs refs reads and others does not.
func (g *featureDraws) readers(refs, others []Ref) []string {
	var out []string
	for _, r := range refs {
		if g.configs[r.Config] && !slices.ContainsFunc(others, func(o Ref) bool { return o.Config == r.Config }) {
			out = append(out, r.Config)
		}
	}
	return out
}

// replaceWorkload deletes a live workload and, with no pause, creates one of the same kind
// under its name reading other configs. Nil when none lives.
func (g *featureDraws) replaceWorkload() []Action {
	var live []string
	for _, n := range workloadNames {
		if g.workloads[n] {
			live = append(live, n)
		}
	}
	if len(live) == 0 {
		return nil
	}
	w := pick(g.eighth, live)
	create := Action{Op: "create-workload", Target: w, Mode: pick(g.eighth, modeDraws), Refs: g.otherRefs(g.refs[w]),
		Kind: KindOrDefault(g.kinds[w]), OnTemplate: g.eighth.IntN(3) == 0, Pause: g.eighthPause()}
	g.created(create)
	return []Action{{Op: "delete-workload", Target: w}, create}
}

// otherRefs draws refs other than before, as a creation draws them.
func (g *featureDraws) otherRefs(before []Ref) []Ref {
	refs := drawRefs(g.eighth, g.eighth)
	for i := 0; i < 10 && slices.Equal(refs, before); i++ {
		refs = drawRefs(g.eighth, g.eighth)
	}
	return refs
}

// eighthPause is a pause after a gen 7 action: mostly short, now and then past raceMargin.
func (g *featureDraws) eighthPause() time.Duration {
	if g.eighth.IntN(3) == 0 {
		return time.Duration(2000+g.eighth.IntN(1500)) * time.Millisecond
	}
	return time.Duration(g.eighth.IntN(400)) * time.Millisecond
}

// RerefTemplate is a helm upgrade with other values: the chart's template for refs, without the
// reloader's markers (stripMarkers), the checker's note of the refs, and the annotations of the
// workload's mode for its new configs (a named mode names them, an exclude excludes the first).
func RerefTemplate(o *Object, onTemplate bool, refs []Ref, mode string) Edited {
	meta := o.Obj.GetAnnotations()
	if meta == nil {
		meta = map[string]string{}
	}
	meta["checker/refs"] = RefsNote(refs)
	o.Obj.SetAnnotations(meta)
	StripMarkers(o, onTemplate)
	ann := o.Annotations(onTemplate)
	SetMode(ann, refs, mode)
	o.SetAnnotations(onTemplate, ann)
	return Edited{Refs: refs}
}
