package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/reloader/reloader/e2e/checker"
	"github.com/reloader/reloader/internal/dev/testcluster"
)

// world runs one sequence: it sets up its namespace and the reloader replicas, runs each action
// through the part that does it, ends the faults in force and makes the final round. The parts
// each hold their own state; env is what they share.
type world struct {
	*env
	reps  *replicas      // the reloader processes (checker_replicas_test.go)
	api   *apiFaults     // outages, restarts and refusals (checker_apifaults_test.go)
	cfgs  *configEdits   // config writes (checker_configs_test.go)
	wls   *workloadEdits // workload writes, owner pauses, Argo (checker_workloads_test.go)
	scope *scope         // the namespace selection (checker_scope_test.go)
	state *stateFaults   // state faults and forgeries (checker_statefaults_test.go)
	hooks *webhookCheck  // --webhook-url's calls (checker_webhook_test.go)
	judge *judge         // settle and judge (checker_judge_test.go)
}

func newWorld(t *testing.T, ctx context.Context, cl *testcluster.Cluster, seq checker.Sequence) *world {
	switch {
	case cl != nil:
	case seq.Rollouts:
		cl = rolloutsCluster(t)
	default:
		cl = cluster
	}
	dyn, err := dynamic.NewForConfig(cl.Config)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: ctx, cl: cl, ns: cl.NewNamespace(t), seq: seq, rec: checker.NewRecorder(seq), dyn: dyn,
		rnd: rand.New(rand.NewPCG(seq.Seed, 7)), faults: map[string]int{}}
	var recv *receiver
	hookURL := ""
	if seq.Webhook {
		recv = newReceiver()
		t.Cleanup(recv.srv.Close)
		hookURL = recv.srv.URL + "/hook"
	}
	if seq.Argo {
		ensureRolloutCRD(ctx, t, cl, dyn)
	}
	g := newGate(t, strings.TrimPrefix(cl.Config.Host, "https://"))
	g.open.Store(true)
	sc := &scope{env: e}
	cfgs := &configEdits{env: e}
	reps := &replicas{env: e, kube: kubeconfigOf(t, cl, g), hookURL: hookURL, scope: sc, downs: map[int]downtime{}, stopping: map[*proc]bool{}}
	api := &apiFaults{env: e, gate: g, lifts: map[string]func(){}, refusedTill: map[string]time.Time{}}
	hooks := &webhookCheck{env: e, recv: recv, cfgs: cfgs}
	return &world{env: e, reps: reps, api: api, cfgs: cfgs, wls: &workloadEdits{env: e, resumes: map[string]func(){}}, scope: sc,
		state: &stateFaults{env: e}, hooks: hooks, judge: &judge{env: e, reps: reps, api: api, hooks: hooks}}
}

// setup makes the world and starts the reloader. For a switch from stakater (sequence.Migrate)
// the sequence's first workloads are created before, and it returns how many actions it ran.
func (w *world) setup() (ran int) {
	ctx := w.ctx
	for _, c := range checker.ConfigNames {
		w.must(w.cfgs.writeConfig(c, checker.FirstContent(c), true))
	}
	if w.seq.Fold {
		w.must(w.cfgs.writeConfig(checker.FoldedName, checker.FirstContent(checker.FoldedName), true))
	}
	list, err := w.cl.Client().AppsV1().Deployments(w.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	w.rec.Watch(ctx, w.ns, list.ResourceVersion, w.dyn)
	if w.seq.NsSelector {
		w.must(w.scope.set(true)) // the namespace starts in the selection
	}
	for w.seq.Migrate && ran < len(w.seq.Actions) && w.seq.Actions[ran].Op == "create-workload" {
		w.must(w.do(w.seq.Actions[ran]))
		ran++
	}
	w.reps.start()
	// A standby is ready at once; the first leader acts a Lease duration later.
	if !w.reps.leading(30 * time.Second) {
		w.t.Fatal("no replica leads 30 s after the start")
	}
	return ran
}

func (w *world) do(a checker.Action) error {
	switch a.Op {
	case "update", "binary":
		w.cfgs.noteUnknown(a.Target)
		return w.retry(a.String(), func() error {
			data, ok := w.rec.Configs.Current(a.Target)
			if !ok {
				return errNotThere
			}
			data[a.Key] = a.Value
			return w.cfgs.writeConfig(a.Target, data, false)
		})
	case "revert":
		w.cfgs.noteUnknown(a.Target)
		return w.retry(a.String(), func() error {
			data, ok := w.rec.Configs.Previous(a.Target)
			if !ok {
				return errNotThere
			}
			return w.cfgs.writeConfig(a.Target, data, false)
		})
	case "down":
		w.reps.down(a.Dur)
	case "delete":
		return w.retry(a.String(), func() error { return w.cfgs.deleteConfig(a.Target) })
	case "recreate":
		w.cfgs.noteUnknown(a.Target)
		data := checker.Content{"a": a.Value, "b": a.Value}
		if a.Only != "" {
			data = checker.Content{a.Only: a.Value}
		}
		return w.retry(a.String(), func() error { return w.cfgs.writeConfig(a.Target, data, true) })
	case "ignore":
		return w.retry(a.String(), func() error { return w.cfgs.ignore(a.Target, a.Value) })
	case "create-workload":
		return w.retry(a.String(), func() error { return w.wls.createWorkload(a) })
	case "delete-workload":
		return w.retry(a.String(), func() error { return w.wls.deleteWorkload(a.Target) })
	case "strip":
		return w.retry(a.String(), func() error { return w.wls.updateWorkload(a.Target, checker.StripMarkers) })
	case "annotate":
		return w.retry(a.String(), func() error {
			return w.wls.updateWorkload(a.Target, func(o *checker.Object, onTemplate bool) checker.Edited {
				ann := o.Annotations(onTemplate)
				checker.SetMode(ann, checker.RefsOf(o.Obj.GetAnnotations()), a.Mode)
				o.SetAnnotations(onTemplate, ann)
				return checker.Edited{Mode: a.Mode}
			})
		})
	case "reref":
		return w.retry(a.String(), func() error {
			mode := w.wls.modeOf(a.Target)
			return w.wls.updateWorkload(a.Target, func(o *checker.Object, onTemplate bool) checker.Edited {
				return checker.RerefTemplate(o, onTemplate, a.Refs, mode)
			})
		})
	case "image":
		return w.retry(a.String(), func() error {
			return w.wls.updateWorkload(a.Target, func(o *checker.Object, _ bool) checker.Edited {
				o.Template.Spec.Containers[0].Image = a.Value
				return checker.Edited{}
			})
		})
	case "gate":
		return w.retry(a.String(), w.wls.gateEdit(a))
	case "sigterm", "kill":
		w.reps.restart(a.Op == "kill")
	case "apiserver-restart":
		return w.api.restart(a.Dur)
	case "outage":
		w.api.outage(a.Dur)
	case "ns-leave", "ns-enter":
		return w.retry(a.String(), func() error { return w.scope.set(a.Op == "ns-enter") })
	case "refuse":
		w.api.refuse(a.Target, a.Dur, a.InForce)
	case "hashkey":
		w.faults["hash key "+a.Value]++
		return w.retry(a.String(), func() error { return w.state.replaceHashKey(a.Value == "replace") })
	case "state-delete":
		return w.state.deleteState(a)
	case "forge":
		return w.state.forge(a)
	case "forge-run":
		return w.state.forgeRun(a)
	case "webhook-invalid":
		return w.hooks.invalid(a)
	case "owner-pause":
		return w.wls.ownerPause(a.Target, a.Dur)
	case "state-corrupt":
		return w.state.corrupt(a)
	default:
		return fmt.Errorf("unknown action %q", a.Op)
	}
	return nil
}

// heal ends every fault in force: the gate opens, refusals are lifted, and every replica runs.
func (w *world) heal() {
	w.api.end()
	w.wls.resumeAll()
	w.reps.wake(true)
	if w.rec.IsOut() {
		w.must(w.retry("ns-enter", func() error { return w.scope.set(true) }))
	}
	w.reps.revive()
}

// finalRound lifts every ignore, then gives every config a content no action writes, recreating
// the deleted ones, which it returns.
func (w *world) finalRound() (recreated []string) {
	w.rec.SetStep("the final round")
	w.hooks.finalAt = time.Now()
	for _, c := range w.cfgs.inWorld() {
		if w.rec.Configs.IgnoredNow(c) {
			w.must(w.do(checker.Action{Op: "ignore", Target: c, Value: "false"}))
		}
	}
	w.wls.openGates()
	time.Sleep(checker.RaceMargin)
	for _, c := range w.cfgs.inWorld() {
		if _, ok := w.rec.Configs.Current(c); ok {
			w.must(w.do(checker.Action{Op: "update", Target: c, Key: "a", Value: checker.ValidJSON}))
		} else {
			w.must(w.do(checker.Action{Op: "recreate", Target: c, Value: checker.ValidJSON}))
			recreated = append(recreated, c)
		}
	}
	return recreated
}

// changeAgain changes each recreated config once more, once the state holds it (one that no
// workload reloads on gets no entry, and is changed at once). A recreation
// after the state lost the config is a first content, which reloads nothing
// (checker's forgotten); this change must reach every reader, so that the positive control never
// passes for want of a change to judge. It runs after the final round was judged, so that it
// cannot hide a recreation the reloader missed.
func (w *world) changeAgain(recreated []string) {
	w.rec.SetStep("the change after the final round")
	for _, c := range recreated {
		if w.rec.Oracle.Triggered(c) && !w.cfgs.waitRecorded(c, 10*time.Second) {
			w.t.Errorf("the state holds no content for %s 10 s after its recreation, with every replica ready and one leading", c)
		}
		w.must(w.do(checker.Action{Op: "update", Target: c, Key: "a", Value: "final-2"}))
	}
}

// maxGate is the longest a valid gate of gateDurations holds a reload.
const maxGate = 3 * time.Second
