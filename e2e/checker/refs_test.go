package checker

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
			fmt.Fprint(sum, Generate(seed, gen, 40, true))
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
		for _, a := range Generate(seed, 6, 40, true).Actions {
			if a.Op == "reref" {
				t.Fatalf("seed %d@6 draws a reref: %s", seed, a)
			}
		}
		s := Generate(seed, 7, 40, true)
		refs, kinds := map[string][]Ref{}, map[string]string{}
		for i, a := range s.Actions {
			switch a.Op {
			case "create-workload":
				refs[a.Target], kinds[a.Target] = a.Refs, KindOrDefault(a.Kind)
			case "reref":
				rerefs++
				if kinds[a.Target] == KindJob || refs[a.Target] == nil || slices.Equal(refs[a.Target], a.Refs) {
					t.Fatalf("seed %d@7, action %d: %s of a %s reading %v", seed, i+1, a, kinds[a.Target], refs[a.Target])
				}
				if i+1 < len(s.Actions) && s.Actions[i+1].Op == "update" && s.Actions[i+1].Value > "100" && a.Pause > RaceMargin {
					followed++
				}
				refs[a.Target] = a.Refs
			case "delete-workload":
				next := s.Actions[min(i+1, len(s.Actions)-1)]
				if a.Pause != 0 || next.Op != "create-workload" || next.Target != a.Target {
					continue // a main action's deletion
				}
				replaced++
				if KindOrDefault(next.Kind) != kinds[a.Target] || slices.Equal(next.Refs, refs[a.Target]) {
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
	old := []Ref{{Config: "cm-0", Whole: true}, {Config: "sec-0"}}
	refs := []Ref{{Config: "cm-1", Optional: true}, {Config: "cm--2", Whole: true}}
	for _, onTemplate := range []bool{false, true} {
		tmpl := PodTemplate(KindDeployment, "w-0", old)
		meta := map[string]string{"checker/refs": RefsNote(old)}
		ann := meta
		if onTemplate {
			tmpl.Annotations = map[string]string{}
			ann = tmpl.Annotations
		}
		SetMode(ann, old, modeNamed)
		SetGate(ann, GateSpec{Kind: "min", Value: "2s"}, time.Now())
		tmpl.Spec.Containers[0].Env = append(tmpl.Spec.Containers[0].Env, corev1.EnvVar{Name: stakaterName("cm-0"), Value: "x"})
		u, err := NewWorkload(KindDeployment, "w-0", meta, tmpl)
		if err != nil {
			t.Fatal(err)
		}
		o, err := DecodeWorkload(KindDeployment, u)
		if err != nil {
			t.Fatal(err)
		}
		if e := RerefTemplate(o, onTemplate, refs, modeNamed); !slices.Equal(e.Refs, refs) {
			t.Fatalf("the edit records %v, want %v", e.Refs, refs)
		}
		want := PodTemplate(KindDeployment, "w-0", refs)
		if !equality.Semantic.DeepEqual(o.Template.Spec, want.Spec) {
			t.Errorf("on template %t: the template's spec is %+v, want the chart's for %v", onTemplate, o.Template.Spec, refs)
		}
		if got := RefsOf(o.Obj.GetAnnotations()); !slices.Equal(got, refs) {
			t.Errorf("on template %t: the note reads back %v, want %v", onTemplate, got, refs)
		}
		got := o.Annotations(onTemplate)
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
			r := NewRecorder(Sequence{})
			for _, c := range []string{"cm-0", "cm-1"} {
				r.configs[c] = []configEvent{{rv: 1, at: at(-10), exists: true, data: Content{"a": "A"}}}
			}
			ch := configEvent{rv: int64(tc.at), at: at(tc.at), exists: true, data: Content{"a": "B"}, by: "the change"}
			r.configs[tc.config] = append(r.configs[tc.config], ch)
			r.own[10] = true
			w := &WorkloadLife{Kind: KindDeployment, name: "w-0", uid: "uid-0", createdRV: 2, createdAt: at(-5),
				refs: []Ref{{Config: "cm-1", Whole: true}}, modes: []modeEvent{{at: at(-5), mode: ModeAuto}},
				rerefs:   []reref{{at: at(10), rv: 10, before: []Ref{{Config: "cm-0", Whole: true}}}},
				restarts: []int64{10}, touched: []map[string]bool{{}}, restartAt: []time.Time{at(10)}, generation: 2, ownChanges: 1}
			r.workloads[w.uid] = w
			if _, held := r.Oracle.held(w, tc.config); held != tc.held {
				t.Errorf("held %t, want %t", held, tc.held)
			}
			if lost := r.Oracle.Lost(); (len(lost) > 0) != tc.held {
				t.Errorf("lost %v, want a loss %t", lost, tc.held)
			}
			if got := r.excess.counts(w, tc.config, change{rv: ch.rv, at: ch.at}); got != tc.counts {
				t.Errorf("counts %t, want %t", got, tc.counts)
			}
			// The reloader restarts it for the config at rv 25.
			w.restarts, w.touched, w.restartAt = append(w.restarts, 25), append(w.touched, map[string]bool{tc.config: true}), append(w.restartAt, at(25))
			w.generation = 3 // its creation, the reref, the reload
			excess := r.Oracle.Excess()
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
	excludes := func(c string, rest ...string) []Ref {
		out := []Ref{{Config: c, Whole: true}}
		for _, o := range rest {
			out = append(out, Ref{Config: o, Whole: true})
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		kind          string
		before, after []Ref
		excessOK      bool
	}{
		{name: "a CronJob's exclude moved off the config", kind: KindCronJob, before: excludes("cm--2", "sec-0"), after: excludes("sec-0", "cm--2", "cm-0"), excessOK: true},
		{name: "a Deployment's exclude moved off the config", kind: KindDeployment, before: excludes("cm--2", "sec-0"), after: excludes("sec-0", "cm--2", "cm-0")},
		{name: "a CronJob's exclude kept on the config", kind: KindCronJob, before: excludes("cm--2", "sec-0"), after: excludes("cm--2", "cm-0")},
		{name: "a CronJob that began reading the config", kind: KindCronJob, before: excludes("sec-0", "cm-0"), after: excludes("sec-0", "cm--2")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := secondsFromNow()
			r := NewRecorder(Sequence{})
			r.configs["cm--2"] = []configEvent{
				{rv: 1, at: at(-10), exists: true, data: Content{"a": "A"}},
				{rv: 5, at: at(5), exists: true, data: Content{"a": "B"}, by: "the change"},
			}
			r.own[10] = true
			w := &WorkloadLife{Kind: tc.kind, name: "w-4", uid: "uid-4", createdRV: 2, createdAt: at(-5),
				refs: tc.after, modes: []modeEvent{{at: at(-5), mode: modeExclude}},
				rerefs:   []reref{{at: at(10), rv: 10, before: tc.before}},
				restarts: []int64{10, 25}, touched: []map[string]bool{{}, {"cm--2": true}}, restartAt: []time.Time{at(10), at(25)},
				generation: 3, ownChanges: 1} // its creation, the reref, the reload
			if tc.kind == KindCronJob {
				w.runs = []int64{26} // the reload's run
			}
			r.workloads[w.uid] = w
			excess := r.Oracle.Excess()
			if (len(excess) == 0) != tc.excessOK {
				t.Errorf("excess %v, want none %t", excess, tc.excessOK)
			}
			if !tc.excessOK && !strings.Contains(fmt.Sprint(excess), "excess: w-4") {
				t.Errorf("not reported as a restart without a change: %v", excess)
			}
			if _, held := r.Oracle.held(w, "cm--2"); held {
				t.Errorf("held to the change made before the reref")
			}
		})
	}
}
