package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// The agreement rule (issue 49, point 5): once the controller has settled, a reloader started
// now must have nothing to do. reloader explain is that reloader: it loads the same state,
// syncs the same caches and runs the same start-up pass and plan, in memory. So at every
// settled point the checker asks it about every live workload, with the replicas' flags, and
// "reload" is a violation: the settled controller left a change undone, or its next start
// would restart the workload once more.

// explainReport is what reloader explain -o json prints, as far as the checker reads it.
type explainReport struct {
	Reloader struct {
		Found bool   `json:"found"`
		Flags string `json:"flags"`
	} `json:"reloader"`
	reloader.Explanation
}

// explainTarget is a live workload to explain, with what the oracle knows holds its reloads.
type explainTarget struct {
	kind, name string
	gated      bool // its gate holds every reload (a closed window, a value that is none)
	invalid    bool // it reads a config whose content does not validate
	// remembered: configs whose current content the running reloader knows its pods read
	// (recorder.remembered), whatever its marker says.
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
}

// agree explains every live workload and returns a violation for each whose answer the
// settled controller contradicts. Only a settled world is asked: the caller has seen every
// change reach its workloads and no restart for the quiet period. heldUntil is when the last
// pause or minimum interval that holds a due reload of a workload ends, if one does: the
// running controller waits for it too (the quiet period counts from the last restart, and a
// reload may be due before any), so the caller asks again after it.
func (w *world) agree() (vs []violation, heldUntil time.Time) {
	if !explainKnown() {
		return nil, heldUntil // an older build under test (RELOADER_BINARY), from before reloader explain
	}
	targets, out := w.rec.explainTargets()
	args, err := w.explainArgs()
	if err != nil {
		w.t.Fatal(err)
	}
	start := time.Now()
	for _, tg := range targets {
		rep, err := w.explain(args, tg)
		if err != nil {
			vs = append(vs, violation(fmt.Sprintf("disagree: explain of %s %s failed: %v", tg.kind, tg.name, err)))
			continue
		}
		if rep.Reloader.Found {
			w.t.Fatalf("explain judged %s with a running reloader's flags (%s), not the replicas': the checker's replicas run no pod", tg.name, rep.Reloader.Flags)
		}
		if v := disagreement(tg, rep, out); v != "" {
			vs = append(vs, v)
			until := gateEnds(rep)
			if rep.Next == "reload" {
				until = later(until, w.retriedBy(tg.name))
			}
			if until.After(heldUntil) {
				heldUntil = until
			}
		}
	}
	w.t.Logf("seed %d: explain agrees on %d workload(s) in %s", w.seq.Seed, len(targets)-len(vs), time.Since(start).Round(time.Millisecond))
	return vs, heldUntil
}

// refusedRetry is how long after a refusal ends the reloader retries the refused patch at the
// latest (reloader's refusedRetryMax), with a margin.
const refusedRetry = 31 * time.Second

// retriedBy is when the reloader has retried a patch of workload name that a refusal of the
// checker's refused, if that may still be ahead: a reload explain finds due may be waiting
// for it, so the caller asks again after it. Zero otherwise.
func (w *world) retriedBy(name string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	till, ok := w.refusedTill[name]
	if !ok || time.Since(till) > refusedRetry {
		return time.Time{}
	}
	return till.Add(refusedRetry)
}

// gateEnds is when the pause or minimum interval that holds a workload's due reload ends, or
// zero: a window does not end by itself in the checker (closed windows open hours later).
func gateEnds(rep explainReport) time.Time {
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

// disagreement is the violation of one explanation, or "". out: the namespace is out of
// --namespace-selector now, where the oracle owes nothing.
func disagreement(tg explainTarget, rep explainReport, out bool) violation {
	var due, whys []string
	for _, c := range rep.Configs {
		if c.Reload && !(tg.remembered[c.Name] && c.Why == policy.MarkerStale.String()) && !tg.waiting[c.Name] {
			due = append(due, c.Kind+"/"+c.Name)
			whys = append(whys, c.Why)
		}
	}
	why := strings.Join(slices.Compact(whys), "; ")
	switch {
	case rep.Next == "up-to-date":
		return ""
	case len(due) == 0 && rep.Next != reloader.NextNotWatched:
		return "" // every config due is one the running reloader remembers its pods read
	}
	switch rep.Next {
	case reloader.NextNotWatched:
		if out {
			return ""
		}
		return violation(fmt.Sprintf("disagree: explain says the reloader does not watch %s, but the namespace is in its selection", tg.name))
	case "held-by-gate":
		if tg.gated {
			return "" // the oracle owes it nothing until its gate opens (recorder.lost)
		}
	case "held-invalid":
		if tg.invalid {
			return "" // the oracle owes it nothing while it reads that content
		}
	case "reload":
		return violation(fmt.Sprintf("disagree: explain says %s reloads for %v (why: %s), but the settled controller does not", tg.name, due, why))
	}
	return violation(fmt.Sprintf("disagree: explain says %s is %s for %v (why: %s: %s), which the oracle knows no hold for", tg.name, rep.Next, due, why, rep.Decision))
}

// explainTargets are the live workloads, and whether the namespace is out of the selection.
func (r *recorder) explainTargets() ([]explainTarget, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []explainTarget
	for _, w := range r.lives() {
		if w.deletedAt.IsZero() {
			_, _, started := r.podsStart(w, r.lastStart(w), "")
			waiting := !started
			tg := explainTarget{kind: w.kind, name: w.name, gated: w.gate().holds(r.window), invalid: r.readsInvalid(w), remembered: map[string]bool{}, waiting: map[string]bool{}}
			for _, c := range judgedConfigs {
				tg.remembered[c] = r.remembered(w, c)
				tg.waiting[c] = waiting || r.staleWaiting(w, c, false) && !r.staleWaiting(w, c, true)
			}
			out = append(out, tg)
		}
	}
	slices.SortFunc(out, func(a, b explainTarget) int { return strings.Compare(a.name, b.name) })
	return out, r.outNow()
}

// remembered reports whether the running reloader knows from its memory of w's last restart
// that w's pods run config c as it is now, which explain cannot know (docs/explain.md, "What it
// cannot know"): that restart was the reloader's, no reloader process began since (a start
// forgets it), and the oracle too finds the pods running c's current content. Their marker of c
// may still name an older one: a reload for another config sets no marker of a config not due
// itself (a creation without --reload-on-create: fixed seed 2@1's final round), and pods
// restarted while c was absent wait for it and start on its recreation (seed 4906@9, a Job).
// A reloader started now would restart w once more for c: no change lost, and none beyond the
// changes of c the oracle counts. The caller holds r.mu.
func (r *recorder) remembered(w *workloadLife, c string) bool {
	n := len(w.restarts)
	if n == 0 || r.own[w.restarts[n-1]] || r.stale(w, c) {
		return false
	}
	return !slices.ContainsFunc(r.starts, func(st time.Time) bool { return st.After(w.restartAt[n-1]) })
}

// explainArgs are the flags the replica launched last runs with, its kubeconfig (through the
// gate) replaced by the cluster's: explain judges with them, since it finds no reloader pod.
// Its Lease holder is a process, not a pod, so explain falls back to its own flags (agree
// checks that it did).
//
// An exception: with the hash key Secret deleted (a hashkey action), explain judges
// ConfigMaps only. It refuses to make up a key, while the next start makes one, under which a
// Secret's marker counts as none and its state entry as current: nothing restarts for a Secret
// (docs/design.md, "A lost or rotated key restarts nothing"). A replaced key is judged whole.
func (w *world) explainArgs() ([]string, error) {
	p := w.procs[len(w.procs)-1]
	args := slices.Clone(p.cmd.Args[1:])
	for i := range args[:len(args)-1] {
		if args[i] == "--kubeconfig" {
			args[i+1] = w.cl.Kubeconfig
		}
	}
	_, err := w.cl.Client().CoreV1().Secrets(w.ns).Get(w.ctx, "reloader-hash-key", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		args = append(args, "--resources-to-ignore", "secrets")
	case err != nil:
		return nil, fmt.Errorf("read the hash key Secret: %w", err)
	}
	return append(args, "--reloader-namespace", w.ns, "--namespace-of-workload", w.ns, "-o", "json"), nil
}

// explain runs reloader explain about one workload.
func (w *world) explain(args []string, tg explainTarget) (explainReport, error) {
	ctx, cancel := context.WithTimeout(w.ctx, time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, binary, slices.Concat([]string{"explain"}, args, []string{strings.ToLower(tg.kind) + "/" + tg.name})...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return explainReport{}, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var rep explainReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return explainReport{}, fmt.Errorf("decode its JSON: %w\n%s", err, stdout.String())
	}
	return rep, nil
}

// explainKnown reports whether the binary under test has reloader explain: an older build
// given as RELOADER_BINARY may not, and is checked without the agreement rule.
var explainKnown = sync.OnceValue(func() bool {
	return exec.Command(binary, "explain", "--help").Run() == nil
})

// The rule, in process: reload is a violation; a hold only where the oracle knows it holds.
func TestExplainsAnswerAtASettledPointIsJudgedByWhatTheOracleKnowsHolds(t *testing.T) {
	t.Parallel()
	report := func(next string, reload bool) explainReport {
		var r explainReport
		r.Next = next
		r.Configs = []reloader.Config{{Kind: "ConfigMap", Name: "cm-0", Reload: reload, Why: policy.MarkerStale.String()}, {Kind: "Secret", Name: "sec-0"}}
		return r
	}
	free := explainTarget{kind: kindDeployment, name: "w-1"}
	held := explainTarget{kind: kindDeployment, name: "w-1", gated: true, invalid: true}
	known := explainTarget{kind: kindDeployment, name: "w-1", remembered: map[string]bool{"cm-0": true}}
	other := report("reload", true)
	other.Configs[0].Why = policy.StateDiffers.String()
	for _, c := range []struct {
		name   string
		tg     explainTarget
		rep    explainReport
		out    bool
		want   string // a prefix of the violation; "" for none
		reason string
	}{
		{"up to date", free, report("up-to-date", false), false, "", "nothing to do"},
		{"reload", free, report("reload", true), false, "disagree: explain says w-1 reloads for [ConfigMap/cm-0] (why: the marker says the pods run another content), but the settled controller does not", "a fresh start would restart it"},
		{"reload, held where the oracle knows", held, report("reload", true), false, "disagree: explain says w-1 reloads", "the oracle's holds excuse no reload"},
		{"gated where the oracle knows", held, report("held-by-gate", true), false, "", "the final round opens it"},
		{"gated where the oracle knows no gate", free, report("held-by-gate", true), false, "disagree: explain says w-1 is held-by-gate for [ConfigMap/cm-0]", "a gate the checker never set"},
		{"invalid where the oracle knows", held, report("held-invalid", true), false, "", "the content does not validate"},
		{"invalid where the oracle knows none", free, report("held-invalid", true), false, "disagree: explain says w-1 is held-invalid", "a content the checker wrote valid"},
		{"suspended", held, report("held-suspended", true), false, "disagree: explain says w-1 is held-suspended", "the checker suspends no CronJob"},
		{"reload the running reloader knows its pods need not", known, report("reload", true), false, "", "its memory of the last restart"},
		{"reload it knows for another reason", known, other, false, "disagree: explain says w-1 reloads for [ConfigMap/cm-0] (why: there is no marker", "only a stale marker is excused"},
		{"not watched while out", free, report(reloader.NextNotWatched, false), true, "", "out of the selection"},
		{"not watched while in", free, report(reloader.NextNotWatched, false), false, "disagree: explain says the reloader does not watch w-1", "in the selection"},
	} {
		got := string(disagreement(c.tg, c.rep, c.out))
		if c.want == "" && got != "" || c.want != "" && !strings.HasPrefix(got, c.want) {
			t.Errorf("%s (%s): got %q, want %q", c.name, c.reason, got, c.want)
		}
	}
}

// On the real binary: a settled world agrees; a change the stopped reloader never saw is a
// disagreement (the positive control); with the hash key deleted, ConfigMaps are still judged.
func TestExplainDisagreesWithAReloaderThatMissedAChangeAlsoWithoutTheHashKey(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := newWorld(t, ctx, sequence{Seed: 49, Gen: latestGen, Replicas: 1})
	w.setup()
	w.must(w.do(action{Op: "create-workload", Target: "w-0", Mode: modeAuto, Refs: []ref{{Config: "cm-0", Whole: true}, {Config: "sec-0", Whole: true}}}))
	if vs := w.settle(); len(vs) > 0 {
		t.Fatalf("a new workload: %s", joinViolations(vs))
	}
	w.must(w.do(action{Op: "update", Target: "cm-0", Key: "a", Value: "2"}))
	waitFor(t, 30*time.Second, "w-0 restarted for cm-0's change", func() (bool, error) { return !w.rec.lastRestart().IsZero(), nil })
	if vs := w.settle(); len(vs) > 0 {
		t.Fatalf("after a reload: %s", joinViolations(vs))
	}
	w.stop(0)
	if err := w.procs[0].terminate(t); err != nil {
		t.Logf("replica's exit: %v", err)
	}
	w.must(w.do(action{Op: "update", Target: "cm-0", Key: "a", Value: "3"}))
	want := "disagree: explain says w-0 reloads for [ConfigMap/cm-0]"
	if vs, _ := w.agree(); len(vs) != 1 || !strings.HasPrefix(string(vs[0]), want) {
		t.Fatalf("a change no reloader saw: got %q, want one %q", vs, want)
	}
	w.must(w.replaceHashKey(false))
	if vs, _ := w.agree(); len(vs) != 1 || !strings.HasPrefix(string(vs[0]), want) {
		t.Fatalf("the hash key deleted: got %q, want one %q", vs, want)
	}
}

// The running reloader remembers what its last restart's pods read until a process starts.
func TestTheRunningReloaderRemembersWhatItsLastRestartsPodsRead(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	v := func(x string) content { return content{"a": x, "b": x} }
	r := newRecorder(sequence{})
	r.configs["cm-1"] = []configEvent{{rv: 1, at: at(0), exists: true, data: v("1")}, {rv: 5, at: at(10), exists: true, data: v("2")}}
	w := &workloadLife{name: "w-0", refs: []ref{{Config: "cm-1", Whole: true}}, modes: []modeEvent{{at: at(0), mode: modeAuto}},
		restarts: []int64{3, 6}, restartAt: []time.Time{at(5), at(11)}}
	r.starts = []time.Time{at(1)}
	if !r.remembered(w, "cm-1") {
		t.Error("a restart after the config's last write, by the process running since: not remembered")
	}
	r.own[6] = true
	if r.remembered(w, "cm-1") {
		t.Error("the checker's own restart counted as the reloader's memory")
	}
	r.own[6] = false
	r.configs["cm-1"] = append(r.configs["cm-1"], configEvent{rv: 7, at: at(12), exists: true, data: v("3")})
	if r.remembered(w, "cm-1") {
		t.Error("a write after the last restart counted as read by its pods")
	}
	r.configs["cm-1"][1] = configEvent{rv: 5, at: at(10)} // deleted before the restart: its pods wait for it
	if !r.remembered(w, "cm-1") {
		t.Error("pods restarted while the config was absent, which started on its recreation: not remembered")
	}
	r.starts = append(r.starts, at(13))
	if r.remembered(w, "cm-1") {
		t.Error("a process started after the restart counted as remembering it")
	}
}

// A pause or minimum interval explain reports holding a due reload is waited out, a window not.
func TestThePauseOrIntervalThatHoldsADueReloadIsWaitedOut(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	pause, next := at(2), at(3)
	var r explainReport
	r.Next, r.Gate.PauseUntil, r.Gate.NextAllowed = "held-by-gate", &pause, &next
	if got := gateEnds(r); !got.Equal(next) {
		t.Errorf("a pause and an interval: waited until %v, want the later, %v", got, next)
	}
	opens := at(3600)
	r.Gate = reloader.Gate{WindowOpens: &opens}
	if got := gateEnds(r); !got.IsZero() {
		t.Errorf("a closed window: waited until %v, want not at all", got)
	}
	r.Next, r.Gate.PauseUntil = "up-to-date", &pause
	if got := gateEnds(r); !got.IsZero() {
		t.Errorf("nothing due: waited until %v, want not at all", got)
	}
}
