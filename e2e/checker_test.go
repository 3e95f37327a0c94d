package e2e

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reloader/reloader/e2e/checker"
	"github.com/reloader/reloader/internal/dev/testcluster"
)

var (
	checkerSeeds   = flag.String("checker.seeds", "", "comma-separated seeds for TestRandomSequences instead of its fixed set; seed@gen for an older generator")
	checkerActions = flag.Int("checker.actions", 40, "actions per random sequence")
	soakFor        = flag.Duration("soak", 0, "TestSoak: run random sequences for this long (make soak DURATION=30m)")
	minimizeTries  = flag.Int("checker.minimize", 0, "on a violation, rerun up to this many shorter sequences to print a minimal one")
	logTail        = flag.Int("checker.logtail", 60, "on a violation, print this many of each replica's last log lines")
)

// outcome is what one sequence did and found.
type outcome struct {
	actions    int
	faults     map[string]int
	violations []checker.Violation
}

// Every sequence runs at once beside the other tests; one that restarts the API server does so
// on a control plane of its own (ownCluster), where the restarts reach no other test.
func TestRandomSequencesKeepEveryPromise(t *testing.T) {
	t.Parallel()
	seeds := checker.FixedSeeds
	if *checkerSeeds != "" {
		var err error
		if seeds, err = checker.ParseSeeds(*checkerSeeds); err != nil {
			t.Fatalf("-checker.seeds: %v", err)
		}
	}
	for _, sg := range seeds {
		t.Run(fmt.Sprintf("%d@%d", sg.Seed, sg.Gen), func(t *testing.T) {
			t.Parallel()
			seq := checker.Generate(sg.Seed, sg.Gen, *checkerActions, true)
			cl := ownCluster(t, seq)
			o := runSequence(t, cl, seq)
			if len(o.violations) > 0 {
				t.Errorf("%d violation(s):\n  %s\n%s", len(o.violations), joinViolations(o.violations), seq)
				if *minimizeTries > 0 {
					t.Errorf("minimal sequence found:\n%s", minimize(t, cl, seq, *minimizeTries))
				}
			} else if t.Failed() {
				t.Logf("a check of the executor failed in:\n%s", seq)
			}
		})
	}
}

// TestSoak runs random sequences until -soak has passed and prints what it ran and found.
func TestSoak(t *testing.T) {
	if *soakFor == 0 {
		t.Skip("runs only with -soak, e.g. make soak DURATION=30m")
	}
	deadline := time.Now().Add(*soakFor)
	var sequences, actions, violations int
	faults := map[string]int{}
	cov := checker.NewCoverageTable()
	for seed := uint64(time.Now().UnixNano()); time.Now().Before(deadline); seed++ {
		seq := checker.Generate(seed, checker.LatestGen, *checkerActions, true)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			o := runSequence(t, nil, seq)
			sequences++
			actions += o.actions
			for k, n := range o.faults {
				faults[k] += n
			}
			ran := seq
			ran.Actions = seq.Actions[:min(o.actions, len(seq.Actions))]
			cov.Add(ran, o.faults)
			violations += len(o.violations)
			if len(o.violations) > 0 {
				t.Errorf("%d violation(s):\n  %s\n%s", len(o.violations), joinViolations(o.violations), seq)
			} else if t.Failed() {
				t.Logf("a check of the executor failed in:\n%s", seq)
			}
		})
	}
	var fs []string
	for _, k := range slices.Sorted(maps.Keys(faults)) {
		fs = append(fs, fmt.Sprintf("%s %d", k, faults[k]))
	}
	t.Logf("soak for %s: %d sequences, %d actions, faults injected: %s; %d violations",
		*soakFor, sequences, actions, strings.Join(fs, ", "), violations)
	t.Logf("coverage (the actions each sequence ran until it ended or failed):\n%s", cov)
}

// minimize drops ever smaller runs of actions from seq while the rest still breaks a promise,
// within tries reruns on cl, where seq ran. Timing varies between runs, so the result is a
// sequence that failed once, not one that always fails.
func minimize(t *testing.T, cl *testcluster.Cluster, seq checker.Sequence, tries int) checker.Sequence {
	best := seq
	for chunk := len(best.Actions) / 2; chunk >= 1 && tries > 0; chunk /= 2 {
		for i := 0; i < len(best.Actions) && tries > 0; {
			cand := best
			cand.Actions = append(slices.Clone(best.Actions[:i]), best.Actions[min(i+chunk, len(best.Actions)):]...)
			tries--
			var failed bool
			t.Run(fmt.Sprintf("without-%d-%d", i+1, i+chunk), func(t *testing.T) { failed = len(runSequence(t, cl, cand).violations) > 0 })
			if failed {
				best = cand
			} else {
				i += chunk
			}
		}
	}
	return best
}

func joinViolations(vs []checker.Violation) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, "\n  ")
}

// runSequence runs seq in a new namespace of cl (nil: the cluster newWorld picks), waits for
// quiet and judges.
func runSequence(t *testing.T, cl *testcluster.Cluster, seq checker.Sequence) outcome {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := newWorld(t, ctx, cl, seq)
	ran := w.setup()
	if seq.Migrate {
		// The switch from stakater is judged alone, before anything changes: a lagging variable
		// must be rolled out once, a current one must restart nothing.
		if vs := w.judge.settle(); len(vs) > 0 {
			t.Logf("seed %d after the first start: %s", seq.Seed, w.rec.Oracle.Summary())
			w.reps.logTails()
			return outcome{actions: ran, faults: w.faults, violations: vs}
		}
	}
	for i, a := range seq.Actions[ran:] {
		i += ran
		w.reps.wake(false)
		w.rec.SetStep(fmt.Sprintf("action %d (%s)", i+1, a.Op))
		// A quiet point (gen 3): every fault ends and what happened so far is judged, so that a
		// loss a later change would heal is still found. From gen 4 a loss of the hash key comes
		// after one too: with no change left to roll out, any restart of a Secret's dependents
		// that the loss causes is an excess one, not hidden by a reload that was due anyway.
		if a.Op == "quiet" || a.Op == "hashkey" && seq.Gen >= 4 {
			w.heal()
			if vs := w.judge.settle(); len(vs) > 0 {
				t.Logf("seed %d at the quiet point of action %d: %s", seq.Seed, i+1, w.rec.Oracle.Summary())
				w.reps.logTails()
				return outcome{actions: i + 1, faults: w.faults, violations: vs}
			}
			if a.Op == "quiet" {
				continue
			}
		}
		if err := w.do(a); err != nil {
			t.Fatalf("action %d (%s): %v\n%s", i+1, a, err, seq)
		}
		time.Sleep(a.Pause)
	}
	w.heal()
	if w.hooks.recv != nil {
		defer func() { w.t.Logf("seed %d: %d webhook calls", seq.Seed, w.hooks.recv.since(time.Time{})) }()
	}
	o := outcome{actions: len(seq.Actions), faults: w.faults}
	o.violations = w.judge.settle()
	t.Logf("seed %d: %s; faults %v", seq.Seed, w.rec.Oracle.Summary(), w.faults)
	if len(o.violations) == 0 {
		// The positive control: one more change of every config, which every workload that
		// reloads on it must now take, once.
		recreated := w.finalRound()
		o.violations = w.judge.settle()
		t.Logf("seed %d after a final change of every config: %s", seq.Seed, w.rec.Oracle.Summary())
		if len(o.violations) == 0 && len(recreated) > 0 {
			w.changeAgain(recreated)
			o.violations = w.judge.settle()
			t.Logf("seed %d after one more change of the recreated configs: %s", seq.Seed, w.rec.Oracle.Summary())
		}
	}
	if len(o.violations) > 0 {
		w.reps.logTails()
	}
	return o
}

// restartsTheAPIServer reports whether seq restarts the API server: a fault every other test
// using that API server at that moment would see.
func restartsTheAPIServer(seq checker.Sequence) bool {
	return slices.ContainsFunc(seq.Actions, func(a checker.Action) bool { return a.Op == "apiserver-restart" })
}

// ownCluster starts a control plane for seq alone if it restarts the API server, like the
// shared one (with pods that roll out for seq.Rollouts), and stops it after the test; for any
// other sequence it returns nil, the shared cluster. The restarts then reach no other test, so
// the sequence runs beside them instead of before them all.
func ownCluster(t *testing.T, seq checker.Sequence) *testcluster.Cluster {
	t.Helper()
	if !restartsTheAPIServer(seq) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c, err := testcluster.Start(ctx, testcluster.Options{Pods: seq.Rollouts, Log: os.Stderr})
	if err != nil {
		t.Fatalf("start a cluster for a sequence that restarts the API server: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop the sequence's cluster: %v", err)
		}
	})
	return c
}
