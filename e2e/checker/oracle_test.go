package checker

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// A Deployment's generation moves with its annotations: the reloader's outcome written alone
// (seed 1795669739113515711@4) is no restart; the same move across a watch gap counts, since a
// reload and its rollback leave the template as it was too; and a template change still counts.
func TestAGenerationMovedWithoutATemplateChangeIsNoRestart(t *testing.T) {
	t.Parallel()
	r := NewRecorder(Sequence{})
	u, err := NewWorkload(KindDeployment, "w-4", nil, PodTemplate(KindDeployment, "w-4", nil))
	if err != nil {
		t.Fatal(err)
	}
	u.SetUID("uid-4")
	o, _ := DecodeWorkload(KindDeployment, u)
	w := &WorkloadLife{Kind: KindDeployment, name: "w-4", uid: u.GetUID(), tmpl: o.Template}
	r.workloads[u.GetUID()] = w
	event := func(gen, rv int64, watched bool, annotation string) {
		v := u.DeepCopy()
		v.SetGeneration(gen)
		v.SetResourceVersion(strconv.FormatInt(rv, 10))
		if annotation != "" {
			tmpl := PodTemplate(KindDeployment, "w-4", nil)
			tmpl.Annotations = map[string]string{"checker/t": annotation}
			raw, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl)
			_ = unstructured.SetNestedMap(v.Object, raw, WorkloadKinds[KindDeployment].tmplPath...)
		}
		r.Seen(KindDeployment, v, watched)
	}
	event(1, 10, true, "")
	event(2, 11, true, "a") // a reload
	event(3, 12, true, "a") // its outcome, written alone into the metadata
	w.generation = 3
	if got := r.byReloader(w); got != 1 {
		t.Errorf("reloads counted %d, want 1: an annotation-only write counted as a restart", got)
	}
	event(5, 20, false, "a") // a gap: a reload and its rollback, caught up by a list
	w.generation = 5
	if got := r.byReloader(w); got != 3 {
		t.Errorf("reloads counted %d after a gap, want 3: the two moves across it count, the annotation-only write does not", got)
	}
	event(6, 21, true, "b") // a positive control: a template change right after counts
	w.generation = 6
	if got := r.byReloader(w); got != 4 {
		t.Errorf("reloads counted %d after a template change, want 4", got)
	}
}

// A restart for another config started the pods on c's held content B while c's marker said A;
// then the reloader was stopped, and c went back to A: the stated limit, excused. The excuse
// needs the stop, and c back at the marker's content, and ends with the next restart.
func TestALossLeftBehindByAStoppedReloaderIsTheStatedLimit(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	r := NewRecorder(Sequence{})
	r.configs["cm-0"] = []configEvent{
		{rv: 5, at: at(5), exists: true, data: Content{"a": "A"}},
		{rv: 15, at: at(15), exists: true, data: Content{"a": "B"}}, // held
		{rv: 25, at: at(25), exists: true, data: Content{"a": "A"}}, // back at the marker's
	}
	w := &WorkloadLife{name: "w-0", refs: []Ref{{Config: "cm-0"}, {Config: "cm-1"}}, modes: []modeEvent{{mode: ModeAuto}},
		restarts:  []int64{10, 20},
		touched:   []map[string]bool{{"cm-0": true}, {"cm-1": true}},
		restartAt: []time.Time{at(10), at(20)}}
	if r.leftBehind(w, "cm-0") {
		t.Fatal("excused without a reloader stop")
	}
	r.starts = []time.Time{at(22)}
	if !r.leftBehind(w, "cm-0") {
		t.Fatal("not excused: the pods of the restart at rv 20 read B, the marker says A, and a stop forgot it")
	}
	r.configs["cm-0"] = append(r.configs["cm-0"], configEvent{rv: 30, at: at(30), exists: true, data: Content{"a": "C"}})
	if r.leftBehind(w, "cm-0") {
		t.Error("excused while c is at neither content: the marker is stale, and any reloader reloads")
	}
	r.configs["cm-0"] = r.configs["cm-0"][:3]
	w.restarts, w.touched, w.restartAt = append(w.restarts, 40), append(w.touched, map[string]bool{"cm-1": true}), append(w.restartAt, at(40))
	r.configs["cm-0"] = append(r.configs["cm-0"][:2], configEvent{rv: 45, at: at(45), exists: true, data: Content{"a": "A"}})
	if r.leftBehind(w, "cm-0") {
		t.Error("excused after a restart made after the stop: its reloader knew what the pods read")
	}
}

// The checker changes a CronJob's image while cm-0 holds B, then cm-0 goes back to A: no Job
// ran in between, so the CronJob's next Job reads A and nothing is owed. A Deployment's pods,
// restarted by the same change, read B (the positive control).
func TestAnotherActorsChangeOfACronJobsTemplateStartsNothing(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	r := NewRecorder(Sequence{})
	r.configs["cm-0"] = []configEvent{
		{rv: 5, at: at(5), exists: true, data: Content{"a": "A"}},
		{rv: 15, at: at(15), exists: true, data: Content{"a": "B"}},
		{rv: 25, at: at(25), exists: true, data: Content{"a": "A"}},
	}
	r.own[20] = true
	for kind, want := range map[string]bool{KindCronJob: false, KindDeployment: true} {
		w := &WorkloadLife{Kind: kind, name: "w-0", createdRV: 8, refs: []Ref{{Config: "cm-0"}}, modes: []modeEvent{{mode: ModeAuto}},
			restarts: []int64{20}, touched: []map[string]bool{{}}, restartAt: []time.Time{at(20)}}
		if got := r.stale(w, "cm-0"); got != want {
			t.Errorf("%s: stale %v after the checker's template change at rv 20 and a revert, want %v", kind, got, want)
		}
	}
}

// Pods restarted while cm-0 and cm-1 were both deleted wait for both: cm-0 coming back alone
// starts nothing, and they read what cm-0 holds when cm-1 is back too (soak seed
// 1796187324768317270@10). The positive control: with cm-1 there all along, the pods start
// on cm-0's first return and run its old content.
func TestPodsWaitForEveryConfigTheyNeedBeforeTheyReadAny(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	final := configEvent{rv: 50, at: at(50), exists: true, data: Content{"a": "F"}}
	cm0 := []configEvent{
		{rv: 5, at: at(5), exists: true, data: Content{"a": "0"}},
		{rv: 15, at: at(15)},
		{rv: 30, at: at(30), exists: true, data: Content{"a": "A"}},
		{rv: 35, at: at(35)},
		final,
	}
	for name, tc := range map[string]struct {
		cm1   []configEvent
		stale bool
	}{
		"cm-1 back with cm-0's last return": {cm1: []configEvent{{rv: 6, at: at(6), exists: true, data: Content{"a": "1"}}, {rv: 16, at: at(16)}, {rv: 51, at: at(51), exists: true, data: Content{"a": "F"}}}},
		"cm-1 there all along":              {cm1: []configEvent{{rv: 6, at: at(6), exists: true, data: Content{"a": "1"}}}, stale: true},
		"cm-1 never back":                   {cm1: []configEvent{{rv: 6, at: at(6), exists: true, data: Content{"a": "1"}}, {rv: 16, at: at(16)}}},
		"cm-1 back without the key read":    {cm1: []configEvent{{rv: 6, at: at(6), exists: true, data: Content{"a": "1"}}, {rv: 16, at: at(16)}, {rv: 31, at: at(31), exists: true, data: Content{"b": "1"}}, {rv: 52, at: at(52), exists: true, data: Content{"a": "F"}}}},
	} {
		r := NewRecorder(Sequence{})
		r.configs["cm-0"], r.configs["cm-1"] = cm0, tc.cm1
		w := &WorkloadLife{Kind: KindDeployment, name: "w-1", createdRV: 8, refs: []Ref{{Config: "cm-0", Whole: true}, {Config: "cm-1"}},
			modes: []modeEvent{{mode: ModeAuto}}, restarts: []int64{20}, touched: []map[string]bool{{}}, restartAt: []time.Time{at(20)}}
		r.own[20] = true
		if got := r.stale(w, "cm-0"); got != tc.stale {
			t.Errorf("%s: stale %v, want %v", name, got, tc.stale)
		}
	}
}

// Pods restarted on cm-0's A while cm-1 was deleted start when cm-1 is back, on cm-0's B; cm-0
// then goes back to A. They run B, but the reloader, which takes them to run A, does not know:
// stale does not judge the pair, and staleAfterOthers counts it. With cm-1 there all along the
// pods run A: neither says anything (the control).
func TestAChangeMadeWhilePodsWaitForAnotherConfigIsCountedNotJudged(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	cm0 := []configEvent{
		{rv: 5, at: at(5), exists: true, data: Content{"a": "A"}},
		{rv: 30, at: at(30), exists: true, data: Content{"a": "B"}},
		{rv: 50, at: at(50), exists: true, data: Content{"a": "A"}},
	}
	for name, tc := range map[string]struct {
		cm1     []configEvent
		counted bool
	}{
		"cm-1 back between": {cm1: []configEvent{{rv: 6, at: at(6), exists: true, data: Content{"a": "1"}}, {rv: 16, at: at(16)}, {rv: 40, at: at(40), exists: true, data: Content{"a": "1"}}}, counted: true},
		"cm-1 there":        {cm1: []configEvent{{rv: 6, at: at(6), exists: true, data: Content{"a": "1"}}}},
	} {
		r := NewRecorder(Sequence{})
		r.configs["cm-0"], r.configs["cm-1"] = cm0, tc.cm1
		w := &WorkloadLife{Kind: KindDeployment, name: "w-1", createdRV: 8, refs: []Ref{{Config: "cm-0", Whole: true}, {Config: "cm-1", Whole: true}},
			modes: []modeEvent{{mode: ModeAuto}}, restarts: []int64{20}, touched: []map[string]bool{{}}, restartAt: []time.Time{at(20)}}
		if r.stale(w, "cm-0") {
			t.Errorf("%s: judged stale", name)
		}
		if got := r.staleAfterOthers(w, "cm-0"); got != tc.counted {
			t.Errorf("%s: staleAfterOthers %v, want %v", name, got, tc.counted)
		}
	}
}

// The hash key is lost while sec-0 holds content that does not validate; the next start takes
// the first valid content after it as current (its entry and the markers were made under the
// lost key), so a workload running another content is excused for it, and only for it.
func TestTheFirstValidContentAfterAStartWithALostKeyIsItsBaseline(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	r := NewRecorder(Sequence{})
	r.configs["sec-0"] = []configEvent{
		{rv: 5, at: at(5), exists: true, data: Content{"a": "1"}},
		{rv: 15, at: at(15), exists: true, data: Content{"a": "{"}, invalid: true},
		{rv: 35, at: at(35), exists: true, data: Content{"a": "2"}},
	}
	r.keyLosses, r.starts = []time.Time{at(20)}, []time.Time{at(30)}
	w := &WorkloadLife{Kind: KindDeployment, name: "w-0", refs: []Ref{{Config: "sec-0"}}, modes: []modeEvent{{mode: ModeAuto}}}
	if !r.keyBaseline(w, "sec-0") {
		t.Error("not excused: the first valid content after the start is what that start took as current")
	}
	r.configs["sec-0"] = append(r.configs["sec-0"], configEvent{rv: 45, at: at(45), exists: true, data: Content{"a": "3"}})
	if r.keyBaseline(w, "sec-0") {
		t.Error("excused for a second valid content: it changed from the one taken as current")
	}
}

// A reloader that starts after a loss of the hash key while its namespace is out of the
// selection first judges the namespace's Secrets when it enters again: the content then is the
// one the lost key's entries are taken for, not the one at the start.
func TestAKeyLossBaselineWaitsForTheNamespaceToEnterTheSelection(t *testing.T) {
	at := secondsFromNow()
	r := NewRecorder(Sequence{})
	r.configs["sec-0"] = []configEvent{
		{rv: 5, at: at(5), exists: true, data: Content{"a": "1"}},
		{rv: 35, at: at(35), exists: true, data: Content{"a": "2"}},
	}
	r.keyLosses, r.starts = []time.Time{at(20)}, []time.Time{at(30)}
	w := &WorkloadLife{Kind: KindDeployment, name: "w-0", refs: []Ref{{Config: "sec-0"}}, modes: []modeEvent{{mode: ModeAuto}}}
	if r.keyBaseline(w, "sec-0") {
		t.Error("the control: with the namespace in the selection, a change after the start is excused")
	}
	r.outs = []outSpan{{left: at(25), leftRV: 25, entered: at(40), enterRV: 40}}
	if !r.keyBaseline(w, "sec-0") {
		t.Error("not excused: the namespace entered the selection after the change, and its first judgement took it as current")
	}
}

// A reload that rode on a resume found the template written during the pause (a marker B of
// cm-0 patched in then); its rollback puts that back, not the markers of the restart before
// (A): it is paired with the resume (soak seed 1796195658658212531@10). The control: the same
// restart taken for no resume is not.
func TestARollbackOfAReloadThatRodeOnAResumePutsBackThePausedTemplate(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	r := NewRecorder(Sequence{Rollback: true})
	w := &WorkloadLife{Kind: KindDeployment, name: "w-2", marks0: map[string]string{},
		restarts:   []int64{100, 200, 210},
		touched:    []map[string]bool{{"cm-0": true}, {"cm-0": true}, {"cm-0": true}},
		marks:      []map[string]string{{"cm-0": "A"}, {"cm-0": "C"}, {"cm-0": "B"}},
		found:      []map[string]string{{}, {"cm-0": "B"}, {"cm-0": "C"}},
		resumes:    []resume{{restart: 1, pausedAt: at(150)}},
		restartAt:  []time.Time{at(100), at(200), at(204)},
		rolledBack: []bool{false, false, true}}
	if p := r.rollbacks(w); !p.rollback[2] || p.of[2] != 1 {
		t.Fatalf("the rollback of the resume's reload was not paired with it: %+v", p)
	}
	w.resumes = nil
	if p := r.rollbacks(w); p.rollback[2] {
		t.Fatalf("paired though the reload was no resume: the markers went back to none of the restart before: %+v", p)
	}
}

// A reload for a config's deletion, rolloutTimeout after the reload that added the config's
// marker, gives back the markers from before that reload, as a rollback of it would; only the
// reloader's history on the workload, written in the rollback's own patch, tells them apart
// (soak seed 1795734170280237632@4: another actor's change in between made the deletion's
// reload a "rollback after another actor's change").
func TestADeletionReloadIsNoRollbackOfTheReloadBefore(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	r := NewRecorder(Sequence{Rollback: true})
	w := &WorkloadLife{Kind: KindDeployment, name: "w-3", marks0: map[string]string{},
		restarts:   []int64{220, 223, 239},
		touched:    []map[string]bool{{"cm--2": true}, {}, {"cm--2": true}},
		marks:      []map[string]string{{"cm--2": "X"}, {"cm--2": "X"}, {}},
		restartAt:  []time.Time{at(0), at(1), at(6)},
		rolledBack: []bool{false, false, false}}
	r.own[223] = true
	if p := r.rollbacks(w); len(p.rollback) != 0 {
		t.Fatalf("the deletion's reload was taken for a rollback: %+v", p)
	}
	if v := r.gated(w); len(v) != 0 {
		t.Fatalf("violations for a deletion's reload: %v", v)
	}
	w.rolledBack[2] = true // the control: the same restart, said to be a rollback
	if p := r.rollbacks(w); !p.rollback[2] || p.of[2] != 0 {
		t.Fatalf("a rollback the history names was not paired with the reload it undid: %+v", p)
	}
	if v := r.gated(w); len(v) != 1 || !strings.Contains(string(v[0]), "the failure was theirs") {
		t.Fatalf("a rollback after another actor's change was not reported: %v", v)
	}
}

// A lost pair's report carries what the oracle knew: each restart, whose it was, and the
// config's events, since a soak's violation is often not reproduced by a replay.
func TestALostPairsReportTellsItsRestartsAndTheConfigsEvents(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	r := NewRecorder(Sequence{})
	r.configs["cm-0"] = []configEvent{
		{rv: 5, at: at(5), exists: true, data: Content{"a": "A"}},
		{rv: 15, at: at(15), exists: true, data: Content{"a": "B"}, by: "action 3 (update)", unknown: true},
	}
	r.own[12] = true
	w := &WorkloadLife{name: "w-0", createdRV: 3, refs: []Ref{{Config: "cm-0"}}, modes: []modeEvent{{mode: ModeAuto}},
		restarts: []int64{10, 12}, touched: []map[string]bool{{"cm-0": true}, {}}, restartAt: []time.Time{at(10), at(12)}}
	got := r.story(w, "cm-0")
	for _, want := range []string{"created at rv 3", "rv 10 at", "for [cm-0]", "rv 12 at", "(the checker's)", `rv 15 at`, `"B" by action 3 (update) (state held none)`} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}

// A reload paused its Deployment for a pause period (rv 611, for cm-1's change at rv 610), the
// checker then rolled out other values of its chart (rv 617, a reref dropping every marker,
// cm--2's among them), and the pause's end rolled both out (rv 621). That resume is the
// reloader's restart for cm-1, not for cm--2: the checker removed cm--2's marker, whether the
// watch shows its write as the checker's before or after the resume (seed 173@9). The same
// writes all by the reloader are a restart for cm--2 with no change to take.
func TestACheckersWriteDuringAPausePeriodTouchesNothingForTheReloader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		own      string // when the checker's write is known as its own: "before", "after", or never
		excessOK bool
	}{
		{name: "known before the resume", own: "before", excessOK: true},
		{name: "known after the resume", own: "after", excessOK: true},
		{name: "all by the reloader", own: "", excessOK: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := secondsFromNow()
			r := NewRecorder(Sequence{})
			r.configs["cm--2"] = []configEvent{{rv: 1, at: at(-30), exists: true, data: Content{"a": "A"}}}
			r.configs["cm-1"] = []configEvent{{rv: 1, at: at(-30), exists: true, data: Content{"a": "A"}},
				{rv: 610, at: at(-10), exists: true, data: Content{"a": "B"}, by: "the change"}}
			read := []Ref{{Config: "cm-1", Whole: true}, {Config: "cm--2"}}
			tmpl := func(refs []Ref, hashes string) corev1.PodTemplateSpec {
				t := PodTemplate(KindDeployment, "w-0", refs)
				if hashes != "" {
					t.Annotations = map[string]string{"reloader/config-hashes": hashes}
				}
				return t
			}
			before := tmpl(read, `{"configmap/cm--2":"h1"}`) // as created, carrying a marker of cm--2
			u, err := NewWorkload(KindDeployment, "w-0", nil, before)
			if err != nil {
				t.Fatal(err)
			}
			u.SetUID("uid-0")
			o, _ := DecodeWorkload(KindDeployment, u)
			w := &WorkloadLife{Kind: KindDeployment, name: "w-0", uid: u.GetUID(), createdRV: 2, createdAt: at(-60),
				refs: []Ref{{Config: "cm-0", Whole: true}}, modes: []modeEvent{{at: at(-60), mode: ModeAuto}},
				rerefs: []reref{{at: at(-5), rv: 617, before: read}}, tmpl: o.Template, seenTmpl: o.Template, watchGen: 1}
			r.workloads[u.GetUID()] = w
			event := func(gen, rv int64, paused bool, tmpl corev1.PodTemplateSpec) {
				v := u.DeepCopy()
				v.SetGeneration(gen)
				v.SetResourceVersion(strconv.FormatInt(rv, 10))
				raw, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl)
				_ = unstructured.SetNestedMap(v.Object, raw, WorkloadKinds[KindDeployment].tmplPath...)
				_ = unstructured.SetNestedField(v.Object, paused, "spec", "paused")
				r.Seen(KindDeployment, v, true)
			}
			event(2, 611, true, tmpl(read, `{"configmap/cm--2":"h1","configmap/cm-1":"h2"}`)) // the reload, paused
			if tc.own == "before" {
				r.OwnWrite(617)
			}
			rerefed := tmpl([]Ref{{Config: "cm-0", Whole: true}}, "")
			event(3, 617, true, rerefed)  // the checker's reref
			event(4, 621, false, rerefed) // the pause period's end
			if tc.own == "after" {
				r.OwnWrite(617)
			}
			w.generation, w.ownChanges = 4, 1
			if tc.own == "" {
				w.ownChanges = 0
			}
			if got := slices.Sorted(maps.Keys(w.touched[len(w.touched)-1])); tc.excessOK && !slices.Equal(got, []string{"cm-1"}) {
				t.Errorf("the resume touched %v, want [cm-1]", got)
			}
			excess := r.Excess()
			if (len(excess) == 0) != tc.excessOK {
				t.Errorf("excess %v, want none %t", excess, tc.excessOK)
			}
			if !tc.excessOK && !strings.Contains(fmt.Sprint(excess), "restarted at rv 621 for [cm--2]") {
				t.Errorf("not reported as a restart for cm--2 without a change: %v", excess)
			}
		})
	}
}

// secondsFromNow returns the moment s seconds from now, for tables of events.
func secondsFromNow() func(s int) time.Time {
	t0 := time.Now()
	return func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
}
