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

// agree explains every live workload and returns a violation for each whose answer the
// settled controller contradicts. Only a settled world is asked: the caller has seen every
// change reach its workloads and no restart for the quiet period. heldUntil is when the last
// pause or minimum interval that holds a due reload of a workload ends, if one does: the
// running controller waits for it too (the quiet period counts from the last restart, and a
// reload may be due before any), so the caller asks again after it.
func (w *world) agree() (vs []checker.Violation, heldUntil time.Time) {
	if !explainKnown() {
		return nil, heldUntil // an older build under test (RELOADER_BINARY), from before reloader explain
	}
	targets, out := w.rec.Oracle.ExplainTargets()
	args, err := w.explainArgs()
	if err != nil {
		w.t.Fatal(err)
	}
	start := time.Now()
	for _, tg := range targets {
		rep, err := w.explain(args, tg)
		if err != nil {
			vs = append(vs, checker.Violation(fmt.Sprintf("disagree: explain of %s %s failed: %v", tg.Kind, tg.Name, err)))
			continue
		}
		if rep.Reloader.Found {
			w.t.Fatalf("explain judged %s with a running reloader's flags (%s), not the replicas': the checker's replicas run no pod", tg.Name, rep.Reloader.Flags)
		}
		if v := checker.Disagreement(tg, rep, out); v != "" {
			vs = append(vs, v)
			until := checker.GateEnds(rep)
			if rep.Next == "reload" {
				until = later(until, w.retriedBy(tg.Name))
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
func (w *world) explain(args []string, tg checker.ExplainTarget) (checker.ExplainReport, error) {
	ctx, cancel := context.WithTimeout(w.ctx, time.Minute)
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
	w := newWorld(t, ctx, checker.Sequence{Seed: 49, Gen: checker.LatestGen, Replicas: 1})
	w.setup()
	w.must(w.do(checker.Action{Op: "create-workload", Target: "w-0", Mode: checker.ModeAuto, Refs: []checker.Ref{{Config: "cm-0", Whole: true}, {Config: "sec-0", Whole: true}}}))
	if vs := w.settle(); len(vs) > 0 {
		t.Fatalf("a new workload: %s", joinViolations(vs))
	}
	w.must(w.do(checker.Action{Op: "update", Target: "cm-0", Key: "a", Value: "2"}))
	waitFor(t, 30*time.Second, "w-0 restarted for cm-0's change", func() (bool, error) { return !w.rec.LastRestart().IsZero(), nil })
	if vs := w.settle(); len(vs) > 0 {
		t.Fatalf("after a reload: %s", joinViolations(vs))
	}
	w.stop(0)
	if err := w.procs[0].terminate(t); err != nil {
		t.Logf("replica's exit: %v", err)
	}
	w.must(w.do(checker.Action{Op: "update", Target: "cm-0", Key: "a", Value: "3"}))
	want := "disagree: explain says w-0 reloads for [ConfigMap/cm-0]"
	if vs, _ := w.agree(); len(vs) != 1 || !strings.HasPrefix(string(vs[0]), want) {
		t.Fatalf("a change no reloader saw: got %q, want one %q", vs, want)
	}
	w.must(w.replaceHashKey(false))
	if vs, _ := w.agree(); len(vs) != 1 || !strings.HasPrefix(string(vs[0]), want) {
		t.Fatalf("the hash key deleted: got %q, want one %q", vs, want)
	}
}
