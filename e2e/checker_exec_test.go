package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/reloader/reloader/e2e/checker"
	"github.com/reloader/reloader/internal/dev/testcluster"
	"github.com/reloader/reloader/state"
)

// world runs one sequence: its namespace, the reloader replicas, the faults in force and the
// recorder.
type world struct {
	t    *testing.T
	ctx  context.Context
	cl   *testcluster.Cluster // the e2e cluster, or where rollouts complete (gen 10)
	ns   string
	seq  checker.Sequence
	gate *gate
	kube string // the kubeconfig through the gate
	rec  *checker.Recorder
	rnd  *rand.Rand
	dyn  dynamic.Interface

	procs []*proc
	mu    sync.Mutex
	lifts map[string]func() // refusals in force, by workload
	// refusedTill: when each workload's last refusal ends (or ended); the reloader retries a
	// refused patch within refusedRetry of that.
	refusedTill map[string]time.Time
	faults      map[string]int // injected, by kind
	reopen      *time.Timer
	cutAt       time.Time        // when the outage in force began
	downs       map[int]downtime // replicas stopped by a down action, by index in procs
	// stopping holds the replicas the checker stopped: an exit of any other one that led is a
	// leader lost on its own (its renew deadline passed in an outage), which opens a span with
	// no leader as a stop does.
	stopping map[*proc]bool
	// forgedJobs numbers the Jobs forged notes name; outside is a namespace the reloader does
	// not watch (gen 9, checker_forge_test.go).
	forgedJobs int
	outside    string
	// resumes: the owner's resume of each Deployment it paused (gen 9), by name.
	resumes map[string]func()
	// hook receives --webhook-url's calls (gen 10, checker_webhook_test.go); hookViolations
	// are what webhookInvalid found; finalAt is when the final round began.
	hook           *receiver
	hookViolations []checker.Violation
	finalAt        time.Time
}

// downtime is a replica stopped for a while: it starts again at the first action after until.
type downtime struct {
	from, until time.Time
}

func newWorld(t *testing.T, ctx context.Context, seq checker.Sequence) *world {
	cl := cluster
	if seq.Rollouts {
		cl = rolloutsCluster(t)
	}
	dyn, err := dynamic.NewForConfig(cl.Config)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, ctx: ctx, cl: cl, ns: cl.NewNamespace(t), seq: seq, rec: checker.NewRecorder(seq), dyn: dyn,
		rnd: rand.New(rand.NewPCG(seq.Seed, 7)), lifts: map[string]func(){}, refusedTill: map[string]time.Time{}, faults: map[string]int{}, downs: map[int]downtime{},
		stopping: map[*proc]bool{}, resumes: map[string]func(){}}
	if seq.Webhook {
		w.hook = newReceiver()
		t.Cleanup(w.hook.srv.Close)
	}
	if seq.Argo {
		ensureRolloutCRD(ctx, t, cl, dyn)
	}
	w.gate = newGate(t, strings.TrimPrefix(cl.Config.Host, "https://"))
	w.gate.open.Store(true)
	w.kube = kubeconfigOf(t, cl, w.gate)
	return w
}

// retry runs op until it succeeds, the object is gone (errNotThere), or a minute passes: the
// checker's own writes ride through the faults it injects.
func (w *world) retry(what string, op func() error) error {
	var last error
	err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		last = op()
		switch {
		case last == nil:
			return true, nil
		case apierrors.IsNotFound(last) || apierrors.IsAlreadyExists(last) || errors.Is(last, errNotThere):
			return true, nil
		case apierrors.IsInvalid(last) || apierrors.IsForbidden(last):
			return true, nil // refused by a policy the checker put in force: the action is skipped
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w (last: %v)", what, err, last)
	}
	return nil
}

// retryRefused is retry for a write that must happen: a refusal the checker lifted may still be
// in force for a while, and a gate left closed holds a reload past the final round (seed
// 1795681571291661038: the open window was refused, and skipped).
func (w *world) retryRefused(what string, op func() error) error {
	return w.retry(what, func() error {
		err := op()
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return fmt.Errorf("still refused: %v", err) // not wrapped: retry would skip it
		}
		return err
	})
}

var errNotThere = errors.New("not there")

// setup makes the world and starts the reloader. For a switch from stakater (sequence.Migrate)
// the sequence's first workloads are created before, and it returns how many actions it ran.
func (w *world) setup() (ran int) {
	ctx := w.ctx
	for _, c := range checker.ConfigNames {
		w.must(w.writeConfig(c, checker.FirstContent(c), true))
	}
	if w.seq.Fold {
		w.must(w.writeConfig(checker.FoldedName, checker.FirstContent(checker.FoldedName), true))
	}
	list, err := w.cl.Client().AppsV1().Deployments(w.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	w.rec.Watch(ctx, w.ns, list.ResourceVersion, w.dyn)
	if w.seq.NsSelector {
		w.must(w.setScope(true)) // the namespace starts in the selection
	}
	for w.seq.Migrate && ran < len(w.seq.Actions) && w.seq.Actions[ran].Op == "create-workload" {
		w.must(w.do(w.seq.Actions[ran]))
		ran++
	}
	for range w.seq.Replicas {
		w.procs = append(w.procs, w.launch())
	}
	for _, p := range w.procs {
		p.waitReady(w.t)
	}
	// A standby is ready at once; the first leader acts a Lease duration later.
	if !w.leading(30 * time.Second) {
		w.t.Fatal("no replica leads 30 s after the start")
	}
	if w.seq.NsSelector && !w.seq.Migrate && !w.waitRecorded(checker.ConfigNames[0], 30*time.Second) {
		// Nothing reads it yet, so the first start records it at once: the reloader does not
		// see the namespace in its selection, or keeps its state under other keys.
		w.t.Fatalf("over all namespaces with a namespace selector, the state holds no content for %s 30 s after the start", checker.ConfigNames[0])
	}
	return ran
}

// noteUnknown records, before config name changes, whether the state ConfigMap holds content
// for it. If not, the change is one the state may not know about (see checker's forgotten), but
// only a loss the reloader did not cause itself can excuse it: the state ConfigMap gone (a
// state-delete fault, or never written because the leader that recorded it could not reach the
// API server before it had to exit), or a tombstone without a hash ("deleted@<unix>:": the
// config's deletion was rolled out, and a recreation made while no reloader leads is a first
// content). An entry the reloader dropped by itself counts as lost only after a state fault
// (state-delete, state-corrupt), which records its own loss.
func (w *world) noteUnknown(name string) {
	e, err := w.stateEntry(name)
	hashless := strings.HasPrefix(e, "deleted@") && strings.HasSuffix(e, ":")
	gone := apierrors.IsNotFound(err) || hashless
	switch {
	case apierrors.IsNotFound(err):
		w.rec.StateGone(name)
	case hashless:
		w.rec.Forget(name)
	}
	w.rec.UnknownBefore(name, gone || err == nil && e == "")
}

// stateEntry reads config name's entry in the state ConfigMap.
func (w *world) stateEntry(name string) (string, error) {
	kind := "ConfigMap"
	if checker.IsSecret(name) {
		kind = "Secret"
	}
	cm, err := w.cl.Client().CoreV1().ConfigMaps(w.ns).Get(w.ctx, "reloader-state", metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	ns := "" // over all namespaces (a namespace selector), the entries name the namespace
	if w.seq.NsSelector {
		ns = w.ns
	}
	return cm.Data[state.Key(kind, ns, name)], nil
}

func (w *world) must(err error) {
	if err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) launch() *proc {
	args := []string{"--coalesce-period", w.seq.Coalesce.String()}
	if w.seq.Replicas > 1 {
		args = append(args, electionFlags[2:]...)
	}
	if w.seq.OnCreate {
		args = append(args, "--reload-on-create")
	}
	if w.seq.OnDelete {
		args = append(args, "--reload-on-delete")
	}
	if w.seq.Strategy != "" {
		args = append(args, "--reload-strategy", w.seq.Strategy)
	}
	switch {
	case w.seq.Rollback && w.seq.Rollouts:
		args = append(args, "--rollback", "--rollout-timeout", rolloutsTimeout.String())
	case w.seq.Rollback:
		args = append(args, "--rollback", "--rollout-timeout", checker.RolloutTimeout.String())
	}
	switch w.seq.Window {
	case "open":
		args = append(args, "--reload-window", checker.OpenWindow)
	case "closed":
		args = append(args, "--reload-window", checker.ClosedWindow(time.Now()))
	}
	if w.seq.NsSelector {
		args = append(args, w.scopeArgs()...)
	}
	if w.hook != nil {
		args = append(args, "--webhook-url", w.hook.srv.URL+"/hook")
	}
	if w.seq.Argo {
		args = append(args, "--is-argo-rollouts")
	}
	p := launch(w.t, w.ns, w.kube, args...)
	go w.watch(p)
	return p
}

// watch records when process p begins from the state it found: once it leads and is ready (its
// state loaded, its caches synced). Its launch time would be too early: a process started
// during an outage loads the state only once the API server answers, possibly after the state
// lost an entry (checker's forgotten). It also records a leader that exits on its own as a stop
// (soak seed 1795476458054184883: a leader past its renew deadline in an outage, and a
// workload created before the next one led).
func (w *world) watch(p *proc) {
	led := false
	for w.ctx.Err() == nil {
		if _, exited := p.wait(0); exited {
			w.mu.Lock()
			own := w.stopping[p]
			w.mu.Unlock()
			if led && !own {
				w.rec.Stopped()
			}
			return
		}
		if !led && p.scrape("reloader_leader") == "1" && p.ready(0) {
			w.rec.Started()
			led = true
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop notes that the checker stops replica i, before it does.
func (w *world) stop(i int) {
	w.mu.Lock()
	w.stopping[w.procs[i]] = true
	w.mu.Unlock()
	w.rec.Stopped()
}

// configMeta is what config name is created with: its name, and for a config the sequence
// validates, the annotation that says key a is JSON.
func (w *world) configMeta(name string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name}
	if slices.Contains(w.seq.Validated, name) {
		m.Annotations = map[string]string{"reloader/validate": "a=json"}
	}
	return m
}

// writeConfig creates (create) or replaces the data of config name, and records the write.
func (w *world) writeConfig(name string, data checker.Content, create bool) error {
	ctx, core := w.ctx, w.cl.Client().CoreV1()
	var obj metav1.Object
	var err error
	if checker.IsSecret(name) {
		s := &corev1.Secret{ObjectMeta: w.configMeta(name), Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		if create {
			obj, err = core.Secrets(w.ns).Create(ctx, s, metav1.CreateOptions{})
		} else {
			var cur *corev1.Secret
			if cur, err = core.Secrets(w.ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
				cur.Data = s.Data
				obj, err = core.Secrets(w.ns).Update(ctx, cur, metav1.UpdateOptions{})
			}
		}
	} else {
		cm := &corev1.ConfigMap{ObjectMeta: w.configMeta(name), Data: map[string]string{}, BinaryData: map[string][]byte{}}
		for k, v := range data {
			if k == "bin" {
				cm.BinaryData[k] = []byte(v)
			} else {
				cm.Data[k] = v
			}
		}
		if create {
			obj, err = core.ConfigMaps(w.ns).Create(ctx, cm, metav1.CreateOptions{})
		} else {
			var cur *corev1.ConfigMap
			if cur, err = core.ConfigMaps(w.ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
				cur.Data, cur.BinaryData = cm.Data, cm.BinaryData
				obj, err = core.ConfigMaps(w.ns).Update(ctx, cur, metav1.UpdateOptions{})
			}
		}
	}
	if err == nil {
		w.rec.Configs.Written(name, checker.RVOf(obj), data)
	}
	return err
}

func (w *world) do(a checker.Action) error {
	switch a.Op {
	case "update", "binary":
		w.noteUnknown(a.Target)
		return w.retry(a.String(), func() error {
			data, ok := w.rec.Configs.Current(a.Target)
			if !ok {
				return errNotThere
			}
			data[a.Key] = a.Value
			return w.writeConfig(a.Target, data, false)
		})
	case "revert":
		w.noteUnknown(a.Target)
		return w.retry(a.String(), func() error {
			data, ok := w.rec.Configs.Previous(a.Target)
			if !ok {
				return errNotThere
			}
			return w.writeConfig(a.Target, data, false)
		})
	case "down":
		w.down(a.Dur)
	case "delete":
		return w.retry(a.String(), func() error { return w.deleteConfig(a.Target) })
	case "recreate":
		w.noteUnknown(a.Target)
		data := checker.Content{"a": a.Value, "b": a.Value}
		if a.Only != "" {
			data = checker.Content{a.Only: a.Value}
		}
		return w.retry(a.String(), func() error { return w.writeConfig(a.Target, data, true) })
	case "ignore":
		return w.retry(a.String(), func() error { return w.ignore(a.Target, a.Value) })
	case "create-workload":
		return w.retry(a.String(), func() error { return w.createWorkload(a) })
	case "delete-workload":
		return w.retry(a.String(), func() error { return w.deleteWorkload(a.Target) })
	case "strip":
		return w.retry(a.String(), func() error { return w.updateWorkload(a.Target, checker.StripMarkers) })
	case "annotate":
		return w.retry(a.String(), func() error {
			return w.updateWorkload(a.Target, func(o *checker.Object, onTemplate bool) checker.Edited {
				ann := o.Annotations(onTemplate)
				checker.SetMode(ann, checker.RefsOf(o.Obj.GetAnnotations()), a.Mode)
				o.SetAnnotations(onTemplate, ann)
				return checker.Edited{Mode: a.Mode}
			})
		})
	case "reref":
		return w.retry(a.String(), func() error {
			mode := w.modeOf(a.Target)
			return w.updateWorkload(a.Target, func(o *checker.Object, onTemplate bool) checker.Edited {
				return checker.RerefTemplate(o, onTemplate, a.Refs, mode)
			})
		})
	case "image":
		return w.retry(a.String(), func() error {
			return w.updateWorkload(a.Target, func(o *checker.Object, _ bool) checker.Edited {
				o.Template.Spec.Containers[0].Image = a.Value
				return checker.Edited{}
			})
		})
	case "gate":
		return w.retry(a.String(), w.gateEdit(a))
	case "sigterm", "kill":
		w.restartReloader(a.Op == "kill")
	case "apiserver-restart":
		w.faults[a.Op]++
		from := time.Now()
		if err := w.cl.RestartAPIServer(w.ctx, a.Dur, w.rnd.IntN(2) == 0); err != nil {
			return fmt.Errorf("restart the API server: %w", err)
		}
		w.rec.BlindFrom(from, time.Now())
	case "outage":
		w.outage(a.Dur)
	case "ns-leave", "ns-enter":
		return w.retry(a.String(), func() error { return w.setScope(a.Op == "ns-enter") })
	case "refuse":
		w.refuse(a.Target, a.Dur, a.InForce)
	case "hashkey":
		w.faults["hash key "+a.Value]++
		return w.retry(a.String(), func() error { return w.replaceHashKey(a.Value == "replace") })
	case "state-delete":
		w.faults[a.Op]++
		w.rec.StateDeleted()
		return w.retry(a.String(), func() error {
			return w.cl.Client().CoreV1().ConfigMaps(w.ns).Delete(w.ctx, "reloader-state", metav1.DeleteOptions{})
		})
	case "forge":
		return w.forge(a)
	case "forge-run":
		return w.forgeRun(a)
	case "webhook-invalid":
		return w.webhookInvalid(a)
	case "owner-pause":
		return w.ownerPause(a.Target, a.Dur)
	case "state-corrupt":
		w.faults[a.Op]++
		w.rec.Forget(a.Target)
		kind := "ConfigMap"
		if checker.IsSecret(a.Target) {
			kind = "Secret"
		}
		patch := fmt.Sprintf(`{"data":{"v1.%s_%s":"not a hash"}}`, kind, a.Target)
		return w.retry(a.String(), func() error {
			_, err := w.cl.Client().CoreV1().ConfigMaps(w.ns).Patch(w.ctx, "reloader-state", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		})
	default:
		return fmt.Errorf("unknown action %q", a.Op)
	}
	return nil
}

func (w *world) deleteConfig(name string) error {
	core := w.cl.Client().CoreV1()
	ctx, cancel := context.WithTimeout(w.ctx, 5*time.Second)
	defer cancel()
	events := w.watchConfig(ctx, name)
	var err error
	if checker.IsSecret(name) {
		err = core.Secrets(w.ns).Delete(w.ctx, name, metav1.DeleteOptions{})
	} else {
		err = core.ConfigMaps(w.ns).Delete(w.ctx, name, metav1.DeleteOptions{})
	}
	if err == nil {
		w.rec.Configs.ConfigDeleted(name, w.deletionRV(events))
	}
	if events != nil {
		events.Stop()
	}
	return err
}

// watchConfig opens a watch of config name from the cluster's current resourceVersion, before
// the checker deletes it, so that deletionRV reads the deletion's own. A watch from the config's
// last version instead failed with "too old" after an API server restart (its watch cache starts
// at the restart), and the list taken then was later than a reload for the deletion, which looked
// older than it (soak seed 1795798155855983840@6). nil if a fault refuses it.
func (w *world) watchConfig(ctx context.Context, name string) watch.Interface {
	core := w.cl.Client().CoreV1()
	list, err := core.ConfigMaps(w.ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil
	}
	opts := metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: list.ResourceVersion}
	var events watch.Interface
	if checker.IsSecret(name) {
		events, err = core.Secrets(w.ns).Watch(ctx, opts)
	} else {
		events, err = core.ConfigMaps(w.ns).Watch(ctx, opts)
	}
	if err != nil {
		return nil
	}
	return events
}

// deletionRV is the resourceVersion of a deletion, from the watch watchConfig opened before it:
// a DELETE returns none, and a list after it may return a later one, of writes the reloader made
// meanwhile, so a reload for the deletion looked older than it (soak seed
// 1795549728323936787@2). If the watch failed (a fault), a list's is taken: at or after the
// deletion.
func (w *world) deletionRV(events watch.Interface) int64 {
	if events != nil {
		for ev := range events.ResultChan() {
			if m, ok := ev.Object.(metav1.Object); ok && ev.Type == watch.Deleted {
				return checker.RVOf(m)
			}
			if ev.Type == watch.Error {
				break
			}
		}
	}
	var rv int64
	if list, err := w.cl.Client().CoreV1().ConfigMaps(w.ns).List(w.ctx, metav1.ListOptions{Limit: 1}); err == nil {
		rv, _ = strconv.ParseInt(list.ResourceVersion, 10, 64)
	}
	return rv
}

func (w *world) ignore(name, value string) error {
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"reloader.stakater.com/ignore":%q}}}`, value))
	core := w.cl.Client().CoreV1()
	at := time.Now()
	var err error
	if checker.IsSecret(name) {
		_, err = core.Secrets(w.ns).Patch(w.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	} else {
		_, err = core.ConfigMaps(w.ns).Patch(w.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err == nil {
		w.rec.Configs.IgnoreSet(name, at, value)
	}
	return err
}

// setGate replaces, in ann, every gate annotation with g's.
// gateEdit sets the gate of action a on its workload.
func (w *world) gateEdit(a checker.Action) func() error {
	return func() error {
		return w.updateWorkload(a.Target, func(o *checker.Object, onTemplate bool) checker.Edited {
			ann := o.Annotations(onTemplate)
			checker.SetGate(ann, a.Gate, time.Now())
			o.SetAnnotations(onTemplate, ann)
			return checker.Edited{Gate: &a.Gate}
		})
	}
}

func (w *world) createWorkload(a checker.Action) error {
	kind := checker.KindOrDefault(a.Kind)
	meta := map[string]string{"checker/refs": checker.RefsNote(a.Refs)}
	tmpl := checker.PodTemplate(kind, a.Target, a.Refs)
	broken := w.seq.Rollouts && a.Broken && kind == checker.KindDeployment
	if broken {
		checker.BreakTemplate(&tmpl)
	}
	ann := meta
	if a.OnTemplate {
		tmpl.Annotations = map[string]string{}
		ann = tmpl.Annotations
	}
	checker.SetMode(ann, a.Refs, a.Mode)
	at := time.Now()
	checker.SetGate(ann, a.Gate, at)
	lagged := checker.StakaterVars(&tmpl, a)
	u, err := checker.NewWorkload(kind, a.Target, meta, tmpl)
	if err != nil {
		return err
	}
	if w.seq.Rollouts && kind == checker.KindDeployment {
		if err := rolloutSpec(u, broken); err != nil {
			return err
		}
	}
	out, err := w.workloads(kind).Create(w.ctx, u, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	o, err := checker.DecodeWorkload(kind, out)
	if err != nil {
		return err
	}
	w.rec.Workloads.Created(a, kind, out, o, at, lagged, broken)
	if kind == checker.KindRollout {
		go w.actAsArgo(a.Target, out.GetUID(), a.Dur)
	}
	return nil
}

// generations reads the generation of every live workload whose template changes in place, for
// the oracle's count.
func (w *world) generations() error {
	kinds := checker.TemplateKinds
	if w.seq.Argo {
		kinds = append(slices.Clone(kinds), checker.KindRollout)
	}
	for _, kind := range kinds {
		list, err := w.workloads(kind).List(w.ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for i := range list.Items {
			d := &list.Items[i]
			// The watch may lag the list: a template change it has not shown yet is taken from
			// the list, as after a gap, so that generations and restarts describe one moment.
			if w.rec.Behind(kind, d) {
				w.t.Logf("the list shows a template change of %s %s the watch had not shown yet (rv %s)", kind, d.GetName(), d.GetResourceVersion())
				w.rec.Seen(kind, d, false)
			}
			w.rec.GenerationSeen(d.GetUID(), d.GetGeneration())
		}
	}
	return nil
}

func (w *world) deleteWorkload(name string) error {
	l := w.rec.Workloads.Live(name)
	if l == nil {
		return errNotThere
	}
	uid := w.rec.Workloads.UIDOf(l)
	// The reloader deleted the Job to create it again, and has not yet (a refusal holds the
	// creation): the deletion asked for is done. Its life ends here, so that a Job the checker
	// creates under the name next is not taken for the reloader's creation (seed 2@7: a
	// workload replaced at once, its new Job counted as a restart of the old one).
	jobGone := func(err error) bool {
		if !apierrors.IsNotFound(err) || l.Kind != checker.KindJob {
			return false
		}
		w.rec.Workloads.JobGone(l, time.Now())
		return true
	}
	o, err := w.getWorkload(w.ctx, l.Kind, name)
	if jobGone(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if o.Obj.GetUID() != uid {
		if l.Kind == checker.KindJob { // created again by the reloader, not yet shown by the watch: retried
			return fmt.Errorf("job %s has a UID the watch has not shown yet", name)
		}
		return errNotThere
	}
	at, rv := time.Now(), o.Obj.GetResourceVersion()
	background := metav1.DeletePropagationBackground
	// The precondition makes the generation read the last one: a reload in between fails it.
	err = w.workloads(l.Kind).Delete(w.ctx, name, metav1.DeleteOptions{PropagationPolicy: &background,
		Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	if jobGone(err) {
		return nil
	}
	if err == nil {
		w.rec.Workloads.Deleted(l, at, o.Obj.GetGeneration())
	}
	return err
}

// updateWorkload applies edit to the live workload name and records what it set.
func (w *world) updateWorkload(name string, edit func(o *checker.Object, onTemplate bool) checker.Edited) error {
	l := w.rec.Workloads.Live(name)
	if l == nil {
		return errNotThere
	}
	o, err := w.getWorkload(w.ctx, l.Kind, name)
	if err != nil {
		return err
	}
	uid := w.rec.Workloads.UIDOf(l)
	if o.Obj.GetUID() != uid {
		return errNotThere
	}
	at, before, read := time.Now(), o.Obj.GetGeneration(), o.Obj.GetResourceVersion()
	e := edit(o, l.OnTemplate)
	if err := o.Store(); err != nil {
		return err
	}
	out, err := w.workloads(l.Kind).Update(w.ctx, o.Obj, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	// An update that changes nothing writes nothing: the version it returns is the last
	// writer's, perhaps the reloader's (seed 1795681571291661043@4: a gate set to what it was
	// took the reload before it for the checker's, and its rollback went unpaired).
	if out.GetResourceVersion() != read {
		w.rec.Workloads.OwnWrite(checker.RVOf(out))
	}
	w.rec.Workloads.Edited(l, at, checker.RVOf(out), e, out.GetGeneration() != before)
	return nil
}

func (w *world) restartReloader(kill bool) {
	i := w.rnd.IntN(len(w.procs))
	w.stop(i)
	if kill {
		w.faults["kill -9"]++
		w.rec.Killed()
		w.procs[i].kill()
	} else {
		w.faults["sigterm"]++
		_ = w.procs[i].cmd.Process.Signal(syscall.SIGTERM)
		w.procs[i].wait(30 * time.Second)
	}
	time.Sleep(time.Duration(w.rnd.IntN(1500)) * time.Millisecond)
	w.up(i)
}

// down stops one replica (SIGTERM or kill -9) for d: the actions made meanwhile reach it at its
// next start, all at once. It starts again at the first action after d (wake).
func (w *world) down(d time.Duration) {
	i := w.rnd.IntN(len(w.procs))
	if _, stopped := w.downs[i]; stopped {
		return
	}
	w.faults["down"]++
	w.stop(i)
	if w.rnd.IntN(2) == 0 {
		w.rec.Killed()
		w.procs[i].kill()
	} else {
		_ = w.procs[i].cmd.Process.Signal(syscall.SIGTERM)
		w.procs[i].wait(30 * time.Second)
	}
	now := time.Now()
	w.downs[i] = downtime{from: now, until: now.Add(d)}
}

// wake starts the replicas whose downtime has passed, or all of them with all set.
func (w *world) wake(all bool) {
	for i, d := range w.downs {
		if all || time.Now().After(d.until) {
			w.up(i)
		}
	}
}

// up starts replica i again. A downtime it ends counts as a blind spell: the replica catches up
// with what happened meanwhile in no particular order, as after an outage.
func (w *world) up(i int) {
	if d, ok := w.downs[i]; ok {
		delete(w.downs, i)
		w.rec.BlindFrom(d.from, time.Now())
	}
	w.procs[i] = w.launch()
}

// outage cuts the reloaders off the API server for d, in the background.
func (w *world) outage(d time.Duration) {
	w.faults["outage"]++
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reopen != nil {
		w.reopen.Stop()
	}
	from := time.Now()
	w.cutAt = from
	w.gate.close()
	w.reopen = time.AfterFunc(d, func() {
		w.gate.open.Store(true)
		w.rec.BlindFrom(from, time.Now())
	})
}

// refuse makes the API server refuse, for d and in the background, through a
// ValidatingAdmissionPolicy, the reloads of workload name: changes of its template, or, for a
// Job, its creation again.
func (w *world) refuse(name string, d time.Duration, inForce bool) {
	w.faults["refusal"]++
	w.mu.Lock()
	l := w.rec.Workloads.Live(name)
	if w.lifts[name] != nil || l == nil {
		w.mu.Unlock()
		return
	}
	policyName := "refuse-" + w.ns + "-" + name
	rule := admissionv1.Rule{APIGroups: []string{checker.WorkloadKinds[l.Kind].GVR.Group}, APIVersions: []string{"v1"}, Resources: []string{checker.WorkloadKinds[l.Kind].GVR.Resource}}
	other := fmt.Sprintf("object.metadata.namespace != %q || object.metadata.name != %q", w.ns, name)
	op, allowed := admissionv1.Update, other+" || object.spec.template == oldObject.spec.template"
	switch l.Kind {
	case checker.KindCronJob:
		allowed = other + " || object.spec.jobTemplate == oldObject.spec.jobTemplate"
	case checker.KindJob:
		op, allowed = admissionv1.Create, other
	}
	remove, err := w.cl.DenyWrites(w.ctx, policyName, rule, op, allowed, "refused by the checker's admission policy")
	if err != nil {
		w.t.Logf("refusal of %s not put in force: %v", name, err)
	}
	var once sync.Once
	// Lifting retries: the API server may be restarting when the refusal ends.
	lift := func() {
		once.Do(func() {
			_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				return remove(ctx) == nil, nil
			})
		})
	}
	w.lifts[name] = lift
	w.refusedTill[name] = time.Now().Add(d)
	w.mu.Unlock()
	w.t.Cleanup(lift)
	if inForce && err == nil {
		w.waitRefused(l.Kind, name)
	}
	time.AfterFunc(d, func() {
		lift()
		w.mu.Lock()
		delete(w.lifts, name)
		w.mu.Unlock()
	})
}

// waitRefused waits, up to 10 s, until the API server applies the refusal of name's reloads: it
// applies a new policy some time after its creation.
func (w *world) waitRefused(kind, name string) {
	probe := []byte(`{"spec":{"template":{"metadata":{"annotations":{"checker/probe":"x"}}}}}`)
	if kind == checker.KindCronJob {
		probe = []byte(`{"spec":{"jobTemplate":{"spec":{"template":{"metadata":{"annotations":{"checker/probe":"x"}}}}}}}`)
	}
	dry := []string{metav1.DryRunAll}
	err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		if kind == checker.KindJob {
			u, _ := checker.NewWorkload(checker.KindJob, name, nil, checker.PodTemplate(checker.KindJob, name, nil))
			_, err = w.workloads(kind).Create(ctx, u, metav1.CreateOptions{DryRun: dry})
		} else {
			_, err = w.workloads(kind).Patch(ctx, name, types.MergePatchType, probe, metav1.PatchOptions{DryRun: dry})
		}
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsNotFound(err), nil
	})
	if err != nil {
		w.t.Logf("refusal of %s not seen in force: %v", name, err)
	}
}

// heal ends every fault in force: the gate opens, refusals are lifted, and every replica runs.
func (w *world) heal() {
	w.mu.Lock()
	if w.reopen != nil && w.reopen.Stop() {
		w.gate.open.Store(true)
		w.rec.BlindFrom(w.cutAt, time.Now())
	}
	for name, lift := range w.lifts {
		lift()
		delete(w.lifts, name)
		w.refusedTill[name] = time.Now()
	}
	w.mu.Unlock()
	w.resumeAll()
	w.wake(true)
	if w.rec.IsOut() {
		w.must(w.retry("ns-enter", func() error { return w.setScope(true) }))
	}
	// A leader cut off past its renew deadline exits by design; as Kubernetes would, start it
	// again. It may exit once more while the Lease settles, so try a few rounds.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		for i, p := range w.procs {
			if _, exited := p.wait(0); exited {
				w.t.Logf("replica %d had exited; restarting it:\n%s", i, tail(p.stderr.String(), 5))
				w.procs[i] = w.launch()
			}
		}
		allReady := true
		for _, p := range w.procs {
			allReady = allReady && p.ready(10*time.Second)
		}
		// A standby is ready too; the state is loaded only once one of them leads.
		if allReady && w.leading(10*time.Second) {
			return
		}
		if time.Now().After(deadline) {
			for i, p := range w.procs {
				w.t.Logf("replica %d:\n%s", i, tail(p.stderr.String(), 30))
			}
			w.t.Fatal("the reloader replicas did not all become ready, one leading, within 2 minutes of the faults' end")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// leading waits up to timeout for a replica that leads and is ready: its state is loaded and
// its caches synced.
func (w *world) leading(timeout time.Duration) bool {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for _, p := range w.procs {
			if p.scrape("reloader_leader") == "1" && p.ready(0) {
				return true
			}
		}
	}
	return false
}

// finalRound lifts every ignore, then gives every config a content no action writes, recreating
// the deleted ones, which it returns.
func (w *world) finalRound() (recreated []string) {
	w.rec.SetStep("the final round")
	w.finalAt = time.Now()
	for _, c := range w.configsInWorld() {
		if w.rec.Configs.IgnoredNow(c) {
			w.must(w.do(checker.Action{Op: "ignore", Target: c, Value: "false"}))
		}
	}
	w.openGates()
	time.Sleep(checker.RaceMargin)
	for _, c := range w.configsInWorld() {
		if _, ok := w.rec.Configs.Current(c); ok {
			w.must(w.do(checker.Action{Op: "update", Target: c, Key: "a", Value: checker.ValidJSON}))
		} else {
			w.must(w.do(checker.Action{Op: "recreate", Target: c, Value: checker.ValidJSON}))
			recreated = append(recreated, c)
		}
	}
	return recreated
}

// replaceHashKey deletes the Secret holding the key of Secret hashes and, with replace, creates
// it with another key. Each running replica keeps the key it read at its start; the next start
// reads the new one, or makes one.
func (w *world) replaceHashKey(replace bool) error {
	secrets := w.cl.Client().CoreV1().Secrets(w.ns)
	err := secrets.Delete(w.ctx, "reloader-hash-key", metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	w.rec.KeyLost()
	if !replace {
		return nil
	}
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(w.rnd.IntN(256))
	}
	yes := true
	_, err = secrets.Create(w.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "reloader-hash-key"}, Immutable: &yes,
		Data: map[string][]byte{"key": key}}, metav1.CreateOptions{})
	return err
}

// openGates gives every live workload whose gate holds its reloads one that does not: none, or
// a window open all day where --reload-window is closed. Its held reloads then happen, once.
func (w *world) openGates() {
	held := w.rec.Workloads.HeldByGates(w.seq.Window)
	open := checker.Action{Op: "gate"}
	if w.seq.Window == "closed" {
		open.Gate = checker.GateSpec{Kind: "window", Value: "open"}
	}
	for _, name := range held {
		open.Target = name
		w.must(w.retryRefused(open.String(), w.gateEdit(open)))
	}
}

// changeAgain changes each recreated config once more, once the state holds it. A recreation
// after the state lost the config is a first content, which reloads nothing
// (checker's forgotten); this change must reach every reader, so that the positive control never
// passes for want of a change to judge. It runs after the final round was judged, so that it
// cannot hide a recreation the reloader missed.
func (w *world) changeAgain(recreated []string) {
	w.rec.SetStep("the change after the final round")
	for _, c := range recreated {
		if !w.waitRecorded(c, 10*time.Second) {
			w.t.Errorf("the state holds no content for %s 10 s after its recreation, with every replica ready and one leading", c)
		}
		w.must(w.do(checker.Action{Op: "update", Target: c, Key: "a", Value: "final-2"}))
	}
}

// configsInWorld are the configs of the sequence's world: the fifth one only where it was made.
func (w *world) configsInWorld() []string {
	if w.seq.Fold {
		return checker.JudgedConfigs
	}
	return checker.ConfigNames
}

// waitRecorded waits up to timeout for the state ConfigMap to hold content for config name.
func (w *world) waitRecorded(name string, timeout time.Duration) bool {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if e, err := w.stateEntry(name); err == nil && e != "" && !strings.HasPrefix(e, "deleted@") {
			return true
		}
	}
	return false
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// maxGate is the longest a valid gate of gateDurations holds a reload.
const maxGate = 3 * time.Second

// modeOf is the annotation mode the recorder holds for the live workload name ("" if none).
func (w *world) modeOf(name string) string {
	l := w.rec.Workloads.Live(name)
	if l == nil {
		return ""
	}
	return w.rec.Workloads.ModeNow(l)
}

func (w *world) workloads(kind string) dynamic.ResourceInterface {
	return w.dyn.Resource(checker.WorkloadKinds[kind].GVR).Namespace(w.ns)
}

// getWorkload reads the live workload of kind and name.
func (w *world) getWorkload(ctx context.Context, kind, name string) (*checker.Object, error) {
	u, err := w.workloads(kind).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return checker.DecodeWorkload(kind, u)
}
