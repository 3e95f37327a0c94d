package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
// What the oracle expects (recorder.readSince, readAt): a change counts for a workload by what
// its template read when the change was made; a workload is held to a change only if it still
// reads the config, and read it through every reref since (the reref's own rollout gives its
// pods what the config holds then: the checker's last template change, as for a strip).

// rerefDraws is how often the generator draws, after a main action, a reref (one in rerefEvery)
// and a replacement (one in replaceEvery).
const rerefEvery, replaceEvery = 8, 16

// reref draws a change of what a live workload's template reads, and half the time a change of
// a config it began or stopped reading. Nil when no workload but Jobs lives.
func (g *generator) reref() []action {
	var live []string
	for _, w := range workloadNames {
		if g.workloads[w] && g.kinds[w] != kindJob {
			live = append(live, w)
		}
	}
	if len(live) == 0 {
		return nil
	}
	w := pick(g.eighth, live)
	before := g.refs[w]
	a := action{Op: "reref", Target: w, Refs: g.otherRefs(before), Pause: g.eighthPause()}
	g.refs[w] = a.Refs
	if g.eighth.IntN(2) == 0 {
		return []action{a}
	}
	// Past raceMargin, so that the oracle orders the change after the reref.
	a.Pause = time.Duration(2500+g.eighth.IntN(1000)) * time.Millisecond
	added, dropped := g.readers(a.Refs, before), g.readers(before, a.Refs)
	out := []action{a}
	for _, cs := range [][]string{added, dropped} {
		if len(cs) > 0 && g.eighth.IntN(3) != 0 {
			g.fresh++ // a JSON number no other action writes, valid where key a is validated
			out = append(out, action{Op: "update", Target: pick(g.eighth, cs), Key: "a", Value: fmt.Sprint(100 + g.fresh), Pause: g.eighthPause()})
		}
	}
	return out
}

// readers are the existing configs refs reads and others does not.
func (g *generator) readers(refs, others []ref) []string {
	var out []string
	for _, r := range refs {
		if g.configs[r.Config] && !slices.ContainsFunc(others, func(o ref) bool { return o.Config == r.Config }) {
			out = append(out, r.Config)
		}
	}
	return out
}

// replaceWorkload deletes a live workload and, with no pause, creates one of the same kind
// under its name reading other configs. Nil when none lives.
func (g *generator) replaceWorkload() []action {
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
	create := action{Op: "create-workload", Target: w, Mode: pick(g.eighth, modeDraws), Refs: g.otherRefs(g.refs[w]),
		Kind: kindOrDefault(g.kinds[w]), OnTemplate: g.eighth.IntN(3) == 0, Pause: g.eighthPause()}
	g.created(create)
	return []action{{Op: "delete-workload", Target: w}, create}
}

// otherRefs draws refs other than before, as a creation draws them.
func (g *generator) otherRefs(before []ref) []ref {
	refs := drawRefs(g.eighth, g.eighth)
	for i := 0; i < 10 && slices.Equal(refs, before); i++ {
		refs = drawRefs(g.eighth, g.eighth)
	}
	return refs
}

// eighthPause is a pause after a gen 7 action: mostly short, now and then past raceMargin.
func (g *generator) eighthPause() time.Duration {
	if g.eighth.IntN(3) == 0 {
		return time.Duration(2000+g.eighth.IntN(1500)) * time.Millisecond
	}
	return time.Duration(g.eighth.IntN(400)) * time.Millisecond
}

// modeOf is the annotation mode the recorder holds for the live workload name ("" if none).
func (w *world) modeOf(name string) string {
	l := w.rec.live(name)
	if l == nil {
		return ""
	}
	return w.rec.modeNow(l)
}

// rerefTemplate is a helm upgrade with other values: the chart's template for refs, without the
// reloader's markers (stripMarkers), the checker's note of the refs, and the annotations of the
// workload's mode for its new configs (a named mode names them, an exclude excludes the first).
func rerefTemplate(o *wobj, onTemplate bool, refs []ref, mode string) edited {
	meta := o.u.GetAnnotations()
	if meta == nil {
		meta = map[string]string{}
	}
	meta["checker/refs"] = refsNote(refs)
	o.u.SetAnnotations(meta)
	stripMarkers(o, onTemplate)
	ann := o.annotations(onTemplate)
	setMode(ann, refs, mode)
	o.setAnnotations(onTemplate, ann)
	return edited{refs: refs}
}

// Versions 4 to 6 are recorded results: version 7 must leave their sequences exactly as they
// were. The digests are of seeds 1 to 18 of each, taken before version 7 existed.
func TestGenerators4To6KeepTheirSequences(t *testing.T) {
	t.Parallel()
	for gen, want := range map[int]string{
		4: "8cd27af8099c4271135af65edd96d02dd738176c22f44a7c30b96150e0429693",
		5: "97d69d8a44cb15a2be8d82806896fd56e4329e5312e5b846992b5bdd305b774c",
		6: "c01a5e30f65df6f4b72b16ce47ab32c645d215bcd85ccec1e0f3ae60637982c7",
	} {
		sum := sha256.New()
		for seed := uint64(1); seed <= 18; seed++ {
			fmt.Fprint(sum, generate(seed, gen, 40, true))
		}
		if got := hex.EncodeToString(sum.Sum(nil)); got != want {
			t.Errorf("version %d's sequences changed (digest %s, want %s)", gen, got, want)
		}
	}
}

// Version 7 draws rerefs and replacements, and only it: each reref gives a live workload other
// than a Job other refs than it had, and each replacement deletes a workload and creates one of
// the same kind under its name, with no pause between, reading other configs.
func TestGenerator7ChangesWhatWorkloadsRead(t *testing.T) {
	t.Parallel()
	rerefs, followed, replaced := 0, 0, 0
	for seed := uint64(1); seed <= 60; seed++ {
		for _, a := range generate(seed, 6, 40, true).Actions {
			if a.Op == "reref" {
				t.Fatalf("seed %d@6 draws a reref: %s", seed, a)
			}
		}
		s := generate(seed, 7, 40, true)
		refs, kinds := map[string][]ref{}, map[string]string{}
		for i, a := range s.Actions {
			switch a.Op {
			case "create-workload":
				refs[a.Target], kinds[a.Target] = a.Refs, kindOrDefault(a.Kind)
			case "reref":
				rerefs++
				if kinds[a.Target] == kindJob || refs[a.Target] == nil || slices.Equal(refs[a.Target], a.Refs) {
					t.Fatalf("seed %d@7, action %d: %s of a %s reading %v", seed, i+1, a, kinds[a.Target], refs[a.Target])
				}
				if i+1 < len(s.Actions) && s.Actions[i+1].Op == "update" && s.Actions[i+1].Value > "100" && a.Pause > raceMargin {
					followed++
				}
				refs[a.Target] = a.Refs
			case "delete-workload":
				next := s.Actions[min(i+1, len(s.Actions)-1)]
				if a.Pause != 0 || next.Op != "create-workload" || next.Target != a.Target {
					continue // a main action's deletion
				}
				replaced++
				if kindOrDefault(next.Kind) != kinds[a.Target] || slices.Equal(next.Refs, refs[a.Target]) {
					t.Fatalf("seed %d@7, action %d: %s replaced %s %s reading %v", seed, i+1, next, kinds[a.Target], a.Target, refs[a.Target])
				}
			}
		}
	}
	if rerefs < 60 || followed < 20 || replaced < 30 {
		t.Fatalf("60 seeds of version 7: %d rerefs, %d followed by a change past raceMargin, %d replacements", rerefs, followed, replaced)
	}
}

// A reref is the chart's template for the new refs: the checker's note of them, the mode's
// annotations naming the new configs, the reloader's markers gone, the gate kept.
func TestARerefRendersTheTemplateForTheNewRefs(t *testing.T) {
	t.Parallel()
	old := []ref{{Config: "cm-0", Whole: true}, {Config: "sec-0"}}
	refs := []ref{{Config: "cm-1", Optional: true}, {Config: "cm--2", Whole: true}}
	for _, onTemplate := range []bool{false, true} {
		tmpl := podTemplate(kindDeployment, "w-0", old)
		meta := map[string]string{"checker/refs": refsNote(old)}
		ann := meta
		if onTemplate {
			tmpl.Annotations = map[string]string{}
			ann = tmpl.Annotations
		}
		setMode(ann, old, modeNamed)
		setGate(ann, gateSpec{Kind: "min", Value: "2s"}, time.Now())
		tmpl.Spec.Containers[0].Env = append(tmpl.Spec.Containers[0].Env, corev1.EnvVar{Name: stakaterName("cm-0"), Value: "x"})
		u, err := newWorkload(kindDeployment, "w-0", meta, tmpl)
		if err != nil {
			t.Fatal(err)
		}
		o, err := decodeWorkload(kindDeployment, u)
		if err != nil {
			t.Fatal(err)
		}
		if e := rerefTemplate(o, onTemplate, refs, modeNamed); !slices.Equal(e.refs, refs) {
			t.Fatalf("the edit records %v, want %v", e.refs, refs)
		}
		want := podTemplate(kindDeployment, "w-0", refs)
		if !equality.Semantic.DeepEqual(o.tmpl.Spec, want.Spec) {
			t.Errorf("on template %t: the template's spec is %+v, want the chart's for %v", onTemplate, o.tmpl.Spec, refs)
		}
		if got := refsOf(o.u.GetAnnotations()); !slices.Equal(got, refs) {
			t.Errorf("on template %t: the note reads back %v, want %v", onTemplate, got, refs)
		}
		got := o.annotations(onTemplate)
		if got["configmap.reloader.stakater.com/reload"] != "cm-1,cm--2" || got["secret.reloader.stakater.com/reload"] != "" || got[gateAnnotations["min"]] != "2s" {
			t.Errorf("on template %t: annotations %v, want cm-1 and cm--2 named, no Secret, the gate kept", onTemplate, got)
		}
	}
}

// A workload read cm-0, then (rv 10, the checker's rollout) cm-1 instead. A change of cm-0 after
// the reref needs no reload, and a reload for it is one without a change; a change of cm-1 after
// it needs one. Before the reref it is the other way round: cm-0's change allows a reload, and
// cm-1's, not read then, neither needs nor allows one.
func TestARerefMovesWhatAWorkloadIsHeldTo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		config   string
		at       int // when the change is made, the reref at 10
		held     bool
		counts   bool
		excessOK bool // a reload for the change at 25 is no violation
	}{
		{name: "the old config, after", config: "cm-0", at: 20, held: false, counts: false},
		{name: "the new config, after", config: "cm-1", at: 20, held: true, counts: true, excessOK: true},
		{name: "the old config, before", config: "cm-0", at: 5, held: false, counts: true, excessOK: true},
		{name: "the new config, before", config: "cm-1", at: 5, held: false, counts: false},
		{name: "the new config, near", config: "cm-1", at: 9, held: false, counts: true, excessOK: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := secondsFromNow()
			r := newRecorder(sequence{})
			for _, c := range []string{"cm-0", "cm-1"} {
				r.configs[c] = []configEvent{{rv: 1, at: at(-10), exists: true, data: content{"a": "A"}}}
			}
			ch := configEvent{rv: int64(tc.at), at: at(tc.at), exists: true, data: content{"a": "B"}, by: "the change"}
			r.configs[tc.config] = append(r.configs[tc.config], ch)
			r.own[10] = true
			w := &workloadLife{kind: kindDeployment, name: "w-0", uid: "uid-0", createdRV: 2, createdAt: at(-5),
				refs: []ref{{Config: "cm-1", Whole: true}}, modes: []modeEvent{{at: at(-5), mode: modeAuto}},
				rerefs:   []reref{{at: at(10), rv: 10, before: []ref{{Config: "cm-0", Whole: true}}}},
				restarts: []int64{10}, touched: []map[string]bool{{}}, restartAt: []time.Time{at(10)}, generation: 2, ownChanges: 1}
			r.workloads[w.uid] = w
			if _, held := r.held(w, tc.config); held != tc.held {
				t.Errorf("held %t, want %t", held, tc.held)
			}
			if lost := r.lost(); (len(lost) > 0) != tc.held {
				t.Errorf("lost %v, want a loss %t", lost, tc.held)
			}
			if got := r.counts(w, tc.config, change{rv: ch.rv, at: ch.at}); got != tc.counts {
				t.Errorf("counts %t, want %t", got, tc.counts)
			}
			// The reloader restarts it for the config at rv 25.
			w.restarts, w.touched, w.restartAt = append(w.restarts, 25), append(w.touched, map[string]bool{tc.config: true}), append(w.restartAt, at(25))
			w.generation = 3 // its creation, the reref, the reload
			excess := r.excess()
			if (len(excess) == 0) != tc.excessOK {
				t.Errorf("excess %v, want none %t", excess, tc.excessOK)
			}
			if !tc.excessOK && !strings.Contains(fmt.Sprint(excess), "[cm-0] until rv 10, then [cm-1]") {
				t.Errorf("the report does not tell what the workload read over time: %v", excess)
			}
		})
	}
}

// A workload in exclude mode read cm--2 and sec-0, excluding cm--2, when cm--2 changed (at 5);
// a reref (rv 10) moved the exclude to sec-0, and the reloader then restarted it for cm--2. For
// a CronJob the reref is a switch of annotation mode: it ran no Job, and nothing tells the
// reloader whether its last run read cm--2 before or after the change, so the restart is the
// README's stated trade-off, allowed as for an annotate action (seed 228@9). A Deployment's
// reref rolled its pods onto cm--2's content, so a restart of it is one without a change; so is
// one of a CronJob whose reref left cm--2 excluded, or began reading cm--2 only then.
func TestACronJobsRerefThatStopsExcludingAConfigIsASwitchOfMode(t *testing.T) {
	t.Parallel()
	excludes := func(c string, rest ...string) []ref {
		out := []ref{{Config: c, Whole: true}}
		for _, o := range rest {
			out = append(out, ref{Config: o, Whole: true})
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		kind          string
		before, after []ref
		excessOK      bool
	}{
		{name: "a CronJob's exclude moved off the config", kind: kindCronJob, before: excludes("cm--2", "sec-0"), after: excludes("sec-0", "cm--2", "cm-0"), excessOK: true},
		{name: "a Deployment's exclude moved off the config", kind: kindDeployment, before: excludes("cm--2", "sec-0"), after: excludes("sec-0", "cm--2", "cm-0")},
		{name: "a CronJob's exclude kept on the config", kind: kindCronJob, before: excludes("cm--2", "sec-0"), after: excludes("cm--2", "cm-0")},
		{name: "a CronJob that began reading the config", kind: kindCronJob, before: excludes("sec-0", "cm-0"), after: excludes("sec-0", "cm--2")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := secondsFromNow()
			r := newRecorder(sequence{})
			r.configs["cm--2"] = []configEvent{
				{rv: 1, at: at(-10), exists: true, data: content{"a": "A"}},
				{rv: 5, at: at(5), exists: true, data: content{"a": "B"}, by: "the change"},
			}
			r.own[10] = true
			w := &workloadLife{kind: tc.kind, name: "w-4", uid: "uid-4", createdRV: 2, createdAt: at(-5),
				refs: tc.after, modes: []modeEvent{{at: at(-5), mode: modeExclude}},
				rerefs:   []reref{{at: at(10), rv: 10, before: tc.before}},
				restarts: []int64{10, 25}, touched: []map[string]bool{{}, {"cm--2": true}}, restartAt: []time.Time{at(10), at(25)},
				generation: 3, ownChanges: 1} // its creation, the reref, the reload
			if tc.kind == kindCronJob {
				w.runs = []int64{26} // the reload's run
			}
			r.workloads[w.uid] = w
			excess := r.excess()
			if (len(excess) == 0) != tc.excessOK {
				t.Errorf("excess %v, want none %t", excess, tc.excessOK)
			}
			if !tc.excessOK && !strings.Contains(fmt.Sprint(excess), "excess: w-4") {
				t.Errorf("not reported as a restart without a change: %v", excess)
			}
			if _, held := r.held(w, "cm--2"); held {
				t.Errorf("held to the change made before the reref")
			}
		})
	}
}
