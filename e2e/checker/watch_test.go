package checker

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

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
	if got := r.excess.byReloader(w); got != 1 {
		t.Errorf("reloads counted %d, want 1: an annotation-only write counted as a restart", got)
	}
	event(5, 20, false, "a") // a gap: a reload and its rollback, caught up by a list
	w.generation = 5
	if got := r.excess.byReloader(w); got != 3 {
		t.Errorf("reloads counted %d after a gap, want 3: the two moves across it count, the annotation-only write does not", got)
	}
	event(6, 21, true, "b") // a positive control: a template change right after counts
	w.generation = 6
	if got := r.excess.byReloader(w); got != 4 {
		t.Errorf("reloads counted %d after a template change, want 4", got)
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
				seeDeployment(r, u, gen, rv, paused, tmpl)
			}
			event(2, 611, true, tmpl(read, `{"configmap/cm--2":"h1","configmap/cm-1":"h2"}`)) // the reload, paused
			if tc.own == "before" {
				r.Workloads.OwnWrite(617)
			}
			rerefed := tmpl([]Ref{{Config: "cm-0", Whole: true}}, "")
			event(3, 617, true, rerefed)  // the checker's reref
			event(4, 621, false, rerefed) // the pause period's end
			if tc.own == "after" {
				r.Workloads.OwnWrite(617)
			}
			w.generation, w.ownChanges = 4, 1
			if tc.own == "" {
				w.ownChanges = 0
			}
			if got := slices.Sorted(maps.Keys(w.touched[len(w.touched)-1])); tc.excessOK && !slices.Equal(got, []string{"cm-1"}) {
				t.Errorf("the resume touched %v, want [cm-1]", got)
			}
			excess := r.Oracle.Excess()
			if (len(excess) == 0) != tc.excessOK {
				t.Errorf("excess %v, want none %t", excess, tc.excessOK)
			}
			if !tc.excessOK && !strings.Contains(fmt.Sprint(excess), "restarted at rv 621 for [cm--2]") {
				t.Errorf("not reported as a restart for cm--2 without a change: %v", excess)
			}
		})
	}
}

// seeDeployment feeds the recorder a watch event of u, a Deployment, at generation gen and
// resourceVersion rv, with template tmpl, paused or not.
func seeDeployment(r *Recorder, u *unstructured.Unstructured, gen, rv int64, paused bool, tmpl corev1.PodTemplateSpec) {
	v := u.DeepCopy()
	v.SetGeneration(gen)
	v.SetResourceVersion(strconv.FormatInt(rv, 10))
	raw, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl)
	_ = unstructured.SetNestedMap(v.Object, raw, WorkloadKinds[KindDeployment].tmplPath...)
	_ = unstructured.SetNestedField(v.Object, paused, "spec", "paused")
	r.Seen(KindDeployment, v, true)
}
