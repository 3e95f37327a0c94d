package checker

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

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
		resumes:    []resume{{restart: 1, pausedAt: at(150), carried: true}},
		restartAt:  []time.Time{at(100), at(200), at(204)},
		rolledBack: []bool{false, false, true}}
	if p := r.gates.rollbacks(w); !p.rollback[2] || p.of[2] != 1 {
		t.Fatalf("the rollback of the resume's reload was not paired with it: %+v", p)
	}
	w.resumes = nil
	if p := r.gates.rollbacks(w); p.rollback[2] {
		t.Fatalf("paired though the reload was no resume: the markers went back to none of the restart before: %+v", p)
	}
}

// A reload written with the reloader's own pause (a pause-period gate) restarts at the resume,
// which changes no template; its rollback puts back the template from before the reload, and
// is paired with it (soak seed 1796211078146740227@10 took it for a second reload, ungated).
// With a second reload patched into the pause, the rollback puts back the template from before
// both (seed 1796277877599293987@10 took it for a reload without a pause, and an excess one).
// The control: a reload that rides on the resume is undone to the template of the pause.
func TestARollbackOfAReloadResumedAfterItsPausePutsBackTheTemplateBeforeIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		duringB  bool   // the reload is written with the pause, the resume changes nothing
		again    bool   // with duringB: a second reload is patched in during the pause
		rollBack string // the marker the rollback writes
		paired   bool
	}{
		{"resumed alone, rolled back to the marker before the reload", true, false, "h1", true},
		{"resumed alone, the marker written is no rollback", true, false, "h3", false},
		{"resumed alone after two reloads, rolled back to the marker before both", true, true, "h1", true},
		{"resumed alone after two reloads, the first reload's marker is no rollback", true, true, "h2", false},
		{"rode on the resume, rolled back to the marker of the pause", false, false, "h1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRecorder(Sequence{Rollback: true})
			tmpl := func(hash string) corev1.PodTemplateSpec {
				t := PodTemplate(KindDeployment, "w-3", nil)
				t.Annotations = map[string]string{"reloader/config-hashes": `{"configmap/cm-1":"` + hash + `"}`}
				return t
			}
			u, err := NewWorkload(KindDeployment, "w-3", nil, tmpl("h0"))
			if err != nil {
				t.Fatal(err)
			}
			u.SetUID("uid-3")
			o, _ := DecodeWorkload(KindDeployment, u)
			w := &WorkloadLife{Kind: KindDeployment, name: "w-3", uid: u.GetUID(), marks0: markers(&o.Template),
				tmpl: o.Template, seenTmpl: o.Template, watchGen: 1}
			r.workloads[u.GetUID()] = w
			event := func(gen, rv int64, paused bool, t corev1.PodTemplateSpec) {
				seeDeployment(r, u, gen, rv, paused, t)
			}
			event(2, 300, false, tmpl("h1")) // an earlier reload
			switch {
			case tc.duringB && tc.again:
				event(3, 476, true, tmpl("h2"))  // the reload, with our pause
				event(4, 477, true, tmpl("h4"))  // another, patched into the pause
				event(5, 478, false, tmpl("h4")) // the pause period's end
			case tc.duringB:
				event(3, 476, true, tmpl("h2"))  // the reload, with our pause
				event(4, 478, false, tmpl("h2")) // the pause period's end
			default:
				event(3, 476, true, tmpl("h1"))  // a pause
				event(4, 478, false, tmpl("h2")) // the reload, with the resume
			}
			event(6, 482, false, tmpl(tc.rollBack))
			if len(w.restarts) != 3 {
				t.Fatalf("restarts %v, want 3", w.restarts)
			}
			// The rollout clock and the history, as the reloader writes them with a rollback.
			w.restartAt[2] = w.restartAt[1].Add(RolloutTimeout)
			w.rolledBack[2] = true
			p := r.gates.rollbacks(w)
			if got := p.rollback[2] && p.of[2] == 1; got != tc.paired {
				t.Fatalf("the write at rv 482 paired as a rollback of the reload at rv 478: %t, want %t (%+v; found %v)", got, tc.paired, p, w.found)
			}
		})
	}
}

// A reload patched into a Deployment its owner paused, over an earlier reload patched in during
// the same pause and still followed, is rolled back to the template from before both: nothing of
// the earlier one rolled out (policy.Restore.Since). That rollback is paired with the reload it
// undid, and no violation; the earlier reload's markers are not one. Where the earlier reload
// came too soon after the pause for the reloader to have seen it, either is a rollback. The
// control: without the pause, only the earlier reload's markers are.
func TestARollbackOfReloadsPatchedIntoAnOwnersPausePutsBackTheTemplateBeforeThem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		paused   bool
		earlier  int    // when the earlier reload was patched in, the pause written at 5
		rollBack string // the marker the rollback writes
		paired   bool
	}{
		{"both seen paused, rolled back to the marker before the pause", true, 8, "A", true},
		{"both seen paused, the earlier reload's marker is no rollback", true, 8, "B", false},
		{"both seen paused, another marker is no rollback", true, 8, "X", false},
		{"the earlier reload maybe unseen paused, the marker before the pause", true, 6, "A", true},
		{"the earlier reload maybe unseen paused, its own marker", true, 6, "B", true},
		{"no pause, the marker before the earlier reload is no rollback", false, 8, "A", false},
		{"no pause, the earlier reload's marker", false, 8, "B", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := secondsFromNow()
			r := NewRecorder(Sequence{Rollback: true, Rollouts: true, OnDelete: true})
			r.configs["sec-0"] = []configEvent{
				{rv: 5, at: at(-10), exists: true, data: Content{"a": "0"}},
				{rv: 90, at: at(-1), exists: true, data: Content{"a": "1"}},
				{rv: 190, at: at(5), exists: true, data: Content{"a": "2"}},
				{rv: 205, at: at(8)},
				{rv: 240, at: at(12), exists: true, data: Content{"a": "0"}}, // recreated
			}
			w := &WorkloadLife{Kind: KindDeployment, name: "w-4", uid: "uid-4", broken: true, createdRV: 10, createdAt: at(-5),
				refs: []Ref{{Config: "sec-0"}}, modes: []modeEvent{{mode: modeNamed}}, marks0: map[string]string{},
				restarts:   []int64{100, 150, 200, 210, 300, 320},
				touched:    []map[string]bool{{"sec-0": true}, {}, {"sec-0": true}, {"sec-0": true}, {"sec-0": true}, {"sec-0": true}},
				marks:      []map[string]string{{"sec-0": "A"}, {"sec-0": "A"}, {"sec-0": "B"}, {"sec-0": "D"}, {"sec-0": tc.rollBack}, {"sec-0": "E"}},
				found:      make([]map[string]string, 6),
				restartAt:  []time.Time{at(0), at(3), at(tc.earlier), at(9), at(16), at(17)},
				rolledBack: []bool{false, false, false, false, true, false}}
			r.workloads[w.uid] = w
			r.own[150] = true // another actor's image change
			if tc.paused {
				w.ownerPauses = []pauseSpan{{from: at(5), to: at(11)}}
			}
			p := r.gates.rollbacks(w)
			if got := p.rollback[4] && p.of[4] == 3; got != tc.paired {
				t.Fatalf("the write at rv 300 paired as a rollback of the reload at rv 210: %t, want %t (%+v)", got, tc.paired, p)
			}
			if v := r.gates.gated(w); tc.paired != (len(v) == 0) {
				t.Fatalf("violations %v, want none: %t", v, tc.paired)
			}
			// The reload at rv 320 takes the recreation unless the rollback took it.
			if v := r.Oracle.Excess(); tc.paired != (len(v) == 0) {
				t.Fatalf("excess %v, want none: %t", v, tc.paired)
			}
		})
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
	if p := r.gates.rollbacks(w); len(p.rollback) != 0 {
		t.Fatalf("the deletion's reload was taken for a rollback: %+v", p)
	}
	if v := r.gates.gated(w); len(v) != 0 {
		t.Fatalf("violations for a deletion's reload: %v", v)
	}
	w.rolledBack[2] = true // the control: the same restart, said to be a rollback
	if p := r.gates.rollbacks(w); !p.rollback[2] || p.of[2] != 0 {
		t.Fatalf("a rollback the history names was not paired with the reload it undid: %+v", p)
	}
	if v := r.gates.gated(w); len(v) != 1 || !strings.Contains(string(v[0]), "the failure was theirs") {
		t.Fatalf("a rollback after another actor's change was not reported: %v", v)
	}
}

// A reload is for the content its resourceVersion follows: the executor records a write when its
// call returns, which may be after the watch reported the reload it caused (soak seed
// 1796311406141283755@10: the final round's valid content of cm-0, reloaded within 33 ms, was
// taken for a reload of the invalid content before it). A deletion's resourceVersion may come
// from a list after it, so a write recorded before the restart precedes it too.
func TestAReloadIsForTheContentItsResourceVersionFollows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		rv      int64         // of the write after the invalid content; the reload's is 474
		after   time.Duration // when that write was recorded, after the reload was seen
		deleted bool          // the write is a deletion; else it writes valid content
		invalid bool          // the reload is reported as one for content that did not validate
	}{
		{"valid content written before the reload, recorded after it", 473, 50 * time.Millisecond, false, false},
		{"valid content written and recorded before the reload", 473, -50 * time.Millisecond, false, false},
		{"a deletion recorded before the reload, at a list's later rv", 480, -50 * time.Millisecond, true, false},
		{"valid content written and recorded after the reload", 475, 50 * time.Millisecond, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := secondsFromNow()
			r := NewRecorder(Sequence{Validated: []string{"cm-0"}})
			r.config("cm-0", configEvent{rv: 100, at: at(0), exists: true, data: Content{"a": "{"}})
			next := configEvent{rv: tc.rv, at: at(10).Add(tc.after)}
			if !tc.deleted {
				next.exists, next.data = true, Content{"a": ValidJSON}
			}
			r.config("cm-0", next)
			w := &WorkloadLife{Kind: KindDeployment, name: "w-1", marks0: map[string]string{},
				restarts:  []int64{474},
				touched:   []map[string]bool{{"cm-0": true}},
				marks:     []map[string]string{{"cm-0": "h1"}},
				restartAt: []time.Time{at(10)}}
			v := r.gates.gated(w)
			if got := len(v) == 1 && strings.Contains(string(v[0]), "whose content did not validate"); got != tc.invalid || len(v) > 1 {
				t.Fatalf("violations %v, want one for content that did not validate: %t", v, tc.invalid)
			}
		})
	}
}
