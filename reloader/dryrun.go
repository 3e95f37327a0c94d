package reloader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/internal/kube"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/report"
	"github.com/reloader/reloader/reloader/safe"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// rehearsal is --dry-run's act: it reports a due reload instead of patching. Nothing is written,
// so the rule judges each workload as the reported patches would have left it (view); and each
// (workload, config content) is reported once per process, also when another writer's version
// of the workload has replaced that view.
type rehearsal struct {
	reports *report.Reporter
	metrics *metrics.Metrics
	log     *slog.Logger
	clock   func() time.Time
	// validation and gates hold what a real run would hold (rehearse).
	validation *safe.Validation
	gates      *safe.Gates

	mu   sync.Mutex
	said map[workload.Key]map[policy.ConfigRef]string // workload → config → the value last reported
	// as holds each workload as the patches reported would have left it, over the cached
	// version they were computed from: the rule judges that, so a later change (a revert too)
	// is judged against what a real run would have written.
	as map[workload.Key]rehearsed
}

// rehearsed is a workload as the reported patches would have left it (obj), over base, the
// resourceVersion of the cached object they were applied to, and what of that object a write
// of its status alone leaves as it was (spec).
type rehearsed struct {
	base string
	spec specOf
	obj  any
}

// specOf is what of a workload a write of its status alone leaves as it was: a controller's
// status update is no other writer's version, and keeps the reported patches standing.
type specOf struct {
	uid         types.UID
	generation  int64
	labels      map[string]string
	annotations map[string]string
}

func specOfMeta(m metav1.Object) specOf {
	return specOf{uid: m.GetUID(), generation: m.GetGeneration(), labels: m.GetLabels(), annotations: m.GetAnnotations()}
}

// same reports whether m is the object s was taken of, but for its status.
func (s specOf) same(m metav1.Object) bool {
	return s.uid == m.GetUID() && s.generation == m.GetGeneration() &&
		maps.Equal(s.labels, m.GetLabels()) && maps.Equal(s.annotations, m.GetAnnotations())
}

func newRehearsal(reports *report.Reporter, m *metrics.Metrics, log *slog.Logger, clock func() time.Time) *rehearsal {
	return &rehearsal{reports: reports, metrics: m, log: log, clock: clock, said: map[workload.Key]map[policy.ConfigRef]string{}, as: map[workload.Key]rehearsed{}}
}

// pretend records w (as viewed: with the patches reported before) as the patch of changes would
// have left it.
func (r *rehearsal) pretend(w workload.View, changes []policy.Change) error {
	ops, err := w.Target.Ops(w.Meta, w.Tmpl, changes, r.clock())
	if err != nil || len(ops) == 0 {
		return err
	}
	obj, err := patched(w.Obj, ops)
	if err != nil {
		return fmt.Errorf("dry run: the patch of %s: %w", w.Key, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	spec := specOfMeta(w.Meta) // w is the cached object, unless patches were reported before
	if prev, ok := r.as[w.Key]; ok && prev.base == w.Meta.GetResourceVersion() {
		spec = prev.spec
	}
	r.as[w.Key] = rehearsed{base: w.Meta.GetResourceVersion(), spec: spec, obj: obj}
	return nil
}

// view is obj as the patches reported would have left it, while the cache holds the version they
// were applied to, or one that differs from it by its status only. A newer version, written by
// someone else, is the truth again: the workload is judged by it and by the state in memory, as a
// real run judges one whose marker was removed.
func (r *rehearsal) view(kind *workload.Kind, obj any) any {
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj
	}
	k := workload.Key{Kind: kind.Name, Namespace: m.GetNamespace(), Name: m.GetName()}
	r.mu.Lock()
	defer r.mu.Unlock()
	as, ok := r.as[k]
	switch {
	case !ok:
		return obj
	case as.base == m.GetResourceVersion():
		return as.obj
	case !as.spec.same(m):
		delete(r.as, k)
		return obj
	}
	// Only its status was written (a Job's, a Deployment's controller): the patches stand, over
	// the new version.
	moved, ok := as.obj.(runtime.Object)
	if !ok {
		delete(r.as, k)
		return obj
	}
	moved = moved.DeepCopyObject()
	if mm, err := meta.Accessor(moved); err == nil {
		mm.SetResourceVersion(m.GetResourceVersion())
	}
	as.base, as.obj = m.GetResourceVersion(), moved
	r.as[k] = as
	return moved
}

// patched is a copy of obj with the JSON patch ops applied.
func patched(obj any, ops []policy.JSONOp) (any, error) {
	doc, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode workload: %w", err)
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encode patch: %w", err)
	}
	p, err := jsonpatch.DecodePatch(body)
	if err != nil {
		return nil, fmt.Errorf("decode patch: %w", err)
	}
	if doc, err = p.Apply(doc); err != nil {
		return nil, fmt.Errorf("apply patch: %w", err)
	}
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
	if err := json.Unmarshal(doc, out); err != nil {
		return nil, fmt.Errorf("decode patched workload: %w", err)
	}
	return out, nil
}

// report tells, once, the changes of w not already told: a WouldReload Event, a log line and
// reloader_reloads_total{result="dry-run"}.
func (r *rehearsal) report(w workload.View, changes []policy.Change) {
	fresh := r.unsaid(w.Key, changes)
	if len(fresh) == 0 {
		return
	}
	what := describe(fresh)
	r.metrics.CountDryRun(w.Kind.Name, w.Key.Namespace)
	r.reports.Event(w.Obj, corev1.EventTypeNormal, "WouldReload", "Would reload for "+what+" (dry run: nothing was changed)")
	r.log.Info("would reload workload (dry run)", "kind", w.Kind.Name, "namespace", w.Key.Namespace, "name", w.Key.Name, "configs", what)
}

// unsaid records changes as told for workload k and returns those that were not yet.
func (r *rehearsal) unsaid(k workload.Key, changes []policy.Change) []policy.Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	said := r.said[k]
	if said == nil {
		said = map[policy.ConfigRef]string{}
		r.said[k] = said
	}
	var fresh []policy.Change
	for _, ch := range changes {
		if v, ok := said[ch.Ref]; !ok || v != ch.Value {
			said[ch.Ref] = ch.Value
			fresh = append(fresh, ch)
		}
	}
	return fresh
}

// forget drops what was told and pretended of a deleted workload: one created again under its
// name is another workload, whose due reloads a real run would make.
func (r *rehearsal) forget(k workload.Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.said, k)
	delete(r.as, k)
}

// rehearse is syncWorkload's dry-run end: what is due and not held by validation or a closed
// gate is reported; nothing is written (no pause started or ended, no Job run, no state).
func (r *rehearsal) rehearse(w workload.View, changes []policy.Change) error {
	if len(changes) == 0 || r.validation.HoldsInvalid(w) {
		return nil
	}
	if v := r.gates.Of(w).Decide(r.clock()); v.Action == policy.Hold {
		r.gates.Deferrals().Hold(w.Key, v.Until, v.Reason) // synced again when the gate opens
		return nil
	}
	r.report(w, changes)
	return r.pretend(w, changes)
}

// readOnlySecrets refuses the hash key Secret's creation: a dry run writes nothing, so without
// the Secret it hashes Secrets under a key of its own (HashKey.load says so).
type readOnlySecrets struct{ secretGetCreator }

func (readOnlySecrets) Create(context.Context, *corev1.Secret, metav1.CreateOptions) (*corev1.Secret, error) {
	return nil, errDryRunCreate
}

// errDryRunCreate: a dry run creates no hash key Secret.
var errDryRunCreate = errors.New("a dry run creates no Secret")

// readOnlyState is the state's client in a dry run: the state lives in memory only. The first
// shard's creation at load is not sent, and no write is.
type readOnlyState struct{ state.ConfigMapClient }

func (readOnlyState) Create(_ context.Context, cm *corev1.ConfigMap, _ metav1.CreateOptions) (*corev1.ConfigMap, error) {
	return cm.DeepCopy(), nil
}

func (readOnlyState) Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*corev1.ConfigMap, error) {
	return nil, errDryRunWrite
}

// errDryRunWrite: a dry run writes no state.
var errDryRunWrite = errors.New("a dry run writes no state")

// stateClient is the state's client: read-only in a dry run.
func stateClient(clients *kube.Clients, opts Options) state.ConfigMapClient {
	if opts.DryRun {
		return readOnlyState{clients.StateConfigMaps(opts.StateNamespace)}
	}
	return clients.StateConfigMaps(opts.StateNamespace)
}

// endStakaterComparison is noteStakaterCompared in memory: once the start-up's syncs are done,
// the dry run judges by its own state, as a real run after its first start does.
func (r *rehearsal) endStakaterComparison(ctx context.Context, drained func(context.Context, time.Duration) bool, comparing *atomic.Bool) {
	for !drained(ctx, time.Second) {
		if ctx.Err() != nil {
			return
		}
	}
	comparing.Store(false)
}
