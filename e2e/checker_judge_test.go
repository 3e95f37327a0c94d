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

	"github.com/reloader/reloader/e2e/checker"
)

// judge waits for a world to settle and judges it: the oracle's lost and excess changes, the
// Jobs forged notes named, the webhook's calls, and the agreement of reloader explain.
type judge struct {
	*env
	reps  *replicas
	api   *apiFaults
	hooks *webhookCheck
}

// settle waits until every change has reached its workloads and nothing has restarted (nor
// been done by the checker) for a quiet period, then judges. A lost change has until the deadline to arrive (a refused patch is
// retried every 30 s at most); an excess restart is judged after the quiet period.
func (j *judge) settle() []checker.Violation {
	quiet := j.seq.Coalesce + 3*time.Second
	if j.seq.Gen >= 3 {
		quiet += maxGate // a pause or minimum interval holds a reload this long
	}
	// The quiet period counts from the last action too: a reload due to a change that the
	// oracle cannot hold it to (made too close to a creation) may still sit in its coalescing
	// window when nothing has restarted yet (soak seed 1796194673289452756@10: explain was asked
	// 0.6 s after the change, in a 1 s window).
	begun := time.Now()
	deadline := begun.Add(90 * time.Second)
	var heldUntil time.Time // a quiet period after the pause or minimum interval explain reported
	for {
		if j.hooks.recv != nil {
			if time.Since(j.rec.LastRestart()) > quiet && time.Since(j.hooks.recv.last()) > quiet || time.Now().After(deadline) {
				if err := j.generations(); err != nil {
					j.t.Fatal(err)
				}
				return slices.Concat(j.hooks.violations(), j.forgedJobsCreated())
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		lost := j.rec.Oracle.Lost()
		done := len(lost) == 0 && time.Since(later(j.rec.LastRestart(), begun)) > quiet && time.Now().After(heldUntil)
		if done || time.Now().After(deadline) {
			if err := j.generations(); err != nil {
				j.t.Fatal(err)
			}
			j.explainLost(lost)
			vs := slices.Concat(lost, j.rec.Oracle.Excess(), j.forgedJobsCreated())
			if len(vs) == 0 && done {
				var until time.Time // settled: a reloader started now has nothing to do (agree)
				if vs, until = j.agree(); !until.IsZero() && until.Add(quiet).Before(deadline) && until.Add(quiet).After(heldUntil) {
					heldUntil = until.Add(quiet) // a due reload waits out a pause or interval: not settled yet
					continue
				}
			}
			return vs
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// agree explains every live workload and returns a violation for each whose answer the
// settled controller contradicts. Only a settled world is asked: the caller has seen every
// change reach its workloads and no restart for the quiet period. heldUntil is when the last
// pause or minimum interval that holds a due reload of a workload ends, if one does: the
// running controller waits for it too (the quiet period counts from the last restart, and a
// reload may be due before any), so the caller asks again after it.
func (j *judge) agree() (vs []checker.Violation, heldUntil time.Time) {
	if !explainKnown() {
		return nil, heldUntil // an older build under test (RELOADER_BINARY), from before reloader explain
	}
	targets, out := j.rec.Oracle.ExplainTargets()
	args, withoutSecrets, err := j.explainArgs()
	if err != nil {
		j.t.Fatal(err)
	}
	forged := j.forgedStrips()
	start := time.Now()
	for _, tg := range targets {
		tg.KeepStanding(forged)
		if withoutSecrets {
			tg.WithoutSecrets()
		}
		rep, err := j.explain(args, tg)
		if err != nil {
			vs = append(vs, checker.Violation(fmt.Sprintf("disagree: explain of %s %s failed: %v", tg.Kind, tg.Name, err)))
			if tg.Kind == checker.KindJob && strings.Contains(err.Error(), "not found") {
				// A Job runs again by being deleted and created: asked between the two, it is
				// asked again once the world is quiet after the run.
				heldUntil = later(heldUntil, time.Now())
			}
			continue
		}
		if rep.Reloader.Found {
			j.t.Fatalf("explain judged %s with a running reloader's flags (%s), not the replicas': the checker's replicas run no pod", tg.Name, rep.Reloader.Flags)
		}
		if v := checker.Disagreement(tg, rep, out); v != "" {
			vs = append(vs, v)
			until := checker.GateEnds(rep)
			if rep.Next == "reload" {
				until = later(until, j.api.retriedBy(tg.Name))
			}
			if until.After(heldUntil) {
				heldUntil = until
			}
		}
	}
	j.t.Logf("seed %d: explain agrees on %d workload(s) in %s", j.seq.Seed, len(targets)-len(vs), time.Since(start).Round(time.Millisecond))
	return vs, heldUntil
}

// explainLost logs what reloader explain says of each workload a lost change names, config by
// config: a fresh start's judgement, in policy's words, of the pair the oracle says was lost.
func (j *judge) explainLost(lost []checker.Violation) {
	if len(lost) == 0 || !explainKnown() {
		return
	}
	targets, _ := j.rec.Oracle.ExplainTargets()
	args, _, err := j.explainArgs()
	if err != nil {
		j.t.Logf("explain the lost changes: %v", err)
		return
	}
	for _, tg := range targets {
		if !slices.ContainsFunc(lost, func(v checker.Violation) bool { return strings.HasPrefix(string(v), "lost: "+tg.Name+" ") }) {
			continue
		}
		rep, err := j.explain(args, tg)
		if err != nil {
			j.t.Logf("explain %s %s, which lost a change: %v", tg.Kind, tg.Name, err)
			continue
		}
		for _, c := range rep.Configs {
			j.t.Logf("explain %s %s, which lost a change: %s/%s exists %t, state %q, markers %v, reload %t: %s (%s)",
				tg.Kind, tg.Name, c.Kind, c.Name, c.Exists, c.State, c.Markers, c.Reload, c.Why, c.Decision)
		}
	}
}

// forgedStrips reports whether the state still holds a strip of a workload (kind, name) for a
// config as the checker forged it; none where the state cannot be read.
func (j *judge) forgedStrips() func(kind, name, config string) bool {
	cm, err := j.cl.Client().CoreV1().ConfigMaps(j.ns).Get(j.ctx, "reloader-state", metav1.GetOptions{})
	if err != nil {
		j.t.Logf("read the state for its forged strips: %v", err)
		return func(string, string, string) bool { return false }
	}
	return func(kind, name, config string) bool {
		return cm.Data[j.workloadEntryKey("strip.", kind, name, config)] == forgedHash
	}
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
// withoutSecrets says that the key Secret is deleted: a Secret that does not validate holds
// the workloads that read it, which explain then cannot see (Disagreement excuses it).
func (j *judge) explainArgs() (args []string, withoutSecrets bool, err error) {
	args = slices.Clone(j.reps.lastArgs())
	for i := range args[:len(args)-1] {
		if args[i] == "--kubeconfig" {
			args[i+1] = j.cl.Kubeconfig
		}
	}
	_, err = j.cl.Client().CoreV1().Secrets(j.ns).Get(j.ctx, "reloader-hash-key", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		args, withoutSecrets = append(args, "--resources-to-ignore", "secrets"), true
	case err != nil:
		return nil, false, fmt.Errorf("read the hash key Secret: %w", err)
	}
	return append(args, "--reloader-namespace", j.ns, "--namespace-of-workload", j.ns, "-o", "json"), withoutSecrets, nil
}

// explain runs reloader explain about one workload.
func (j *judge) explain(args []string, tg checker.ExplainTarget) (checker.ExplainReport, error) {
	ctx, cancel := context.WithTimeout(j.ctx, time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, binary, slices.Concat([]string{"explain"}, args, []string{strings.ToLower(tg.Kind) + "/" + tg.Name})...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return checker.ExplainReport{}, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var rep checker.ExplainReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return checker.ExplainReport{}, fmt.Errorf("decode its JSON: %w\n%s", err, stdout.String())
	}
	return rep, nil
}

// generations reads the generation of every live workload whose template changes in place, for
// the oracle's count.
func (j *judge) generations() error {
	kinds := checker.TemplateKinds
	if j.seq.Argo {
		kinds = append(slices.Clone(kinds), checker.KindRollout)
	}
	for _, kind := range kinds {
		list, err := j.workloads(kind).List(j.ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for i := range list.Items {
			d := &list.Items[i]
			// The watch may lag the list: a template change it has not shown yet is taken from
			// the list, as after a gap, so that generations and restarts describe one moment.
			if j.rec.Behind(kind, d) {
				j.t.Logf("the list shows a template change of %s %s the watch had not shown yet (rv %s)", kind, d.GetName(), d.GetResourceVersion())
				j.rec.Seen(kind, d, false)
			}
			j.rec.GenerationSeen(d.GetUID(), d.GetGeneration())
		}
	}
	return nil
}

// forgedJobsCreated lists, as violations, the Jobs that forged notes named and that exist: a
// note the reloader did not write must create nothing.
func (j *judge) forgedJobsCreated() []checker.Violation {
	var out []checker.Violation
	for _, f := range j.rec.Configs.ForgedNotes() {
		_, err := j.cl.Client().BatchV1().Jobs(f.JobNS).Get(j.ctx, f.Job, metav1.GetOptions{})
		if err == nil {
			out = append(out, checker.Violation(fmt.Sprintf("forged: Job %s/%s exists, created from a forged note (%s, written at rv %d)", f.JobNS, f.Job, f.Kind, f.RV)))
		} else if !apierrors.IsNotFound(err) {
			j.t.Logf("read Job %s/%s of a forged note: %v", f.JobNS, f.Job, err)
		}
	}
	return out
}

// explainKnown reports whether the binary under test has reloader explain: an older build
// given as RELOADER_BINARY may not, and is checked without the agreement rule.
var explainKnown = sync.OnceValue(func() bool {
	return exec.Command(binary, "explain", "--help").Run() == nil
})

// On the real binary: a settled world agrees; a change the stopped reloader never saw is a
// disagreement (the positive control); with the hash key deleted, ConfigMaps are still judged.
func TestExplainDisagreesWithAReloaderThatMissedAChangeAlsoWithoutTheHashKey(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := newWorld(t, ctx, nil, checker.Sequence{Seed: 49, Gen: checker.LatestGen, Replicas: 1})
	w.setup()
	w.must(w.do(checker.Action{Op: "create-workload", Target: "w-0", Mode: checker.ModeAuto, Refs: []checker.Ref{{Config: "cm-0", Whole: true}, {Config: "sec-0", Whole: true}}}))
	if vs := w.judge.settle(); len(vs) > 0 {
		t.Fatalf("a new workload: %s", joinViolations(vs))
	}
	w.must(w.do(checker.Action{Op: "update", Target: "cm-0", Key: "a", Value: "2"}))
	waitFor(t, 30*time.Second, "w-0 restarted for cm-0's change", func() (bool, error) { return !w.rec.LastRestart().IsZero(), nil })
	if vs := w.judge.settle(); len(vs) > 0 {
		t.Fatalf("after a reload: %s", joinViolations(vs))
	}
	w.reps.stop(0)
	if err := w.reps.procs[0].terminate(t); err != nil {
		t.Logf("replica's exit: %v", err)
	}
	w.must(w.do(checker.Action{Op: "update", Target: "cm-0", Key: "a", Value: "3"}))
	want := "disagree: explain says w-0 reloads for [ConfigMap/cm-0]"
	if vs, _ := w.judge.agree(); len(vs) != 1 || !strings.HasPrefix(string(vs[0]), want) {
		t.Fatalf("a change no reloader saw: got %q, want one %q", vs, want)
	}
	w.must(w.state.replaceHashKey(false))
	if vs, _ := w.judge.agree(); len(vs) != 1 || !strings.HasPrefix(string(vs[0]), want) {
		t.Fatalf("the hash key deleted: got %q, want one %q", vs, want)
	}
}
