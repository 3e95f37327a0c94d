package reloader

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/reloader/reloader/coalesce"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/internal/report"
	"github.com/reloader/reloader/reloader/runs"
	"github.com/reloader/reloader/reloader/safe"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// events is the informers' handlers: each event is recorded with the parts that follow it, and
// its keys queued (or, at start-up, put in the backlog).
type events struct {
	enqueue        func(workload.Key)
	backlog        *backlog
	coalescer      *coalesce.Coalescer[workload.Key]
	clock          coalesce.Clock
	reloadOnCreate bool
	metrics        *metrics.Metrics
	// decisiveAnnotations are the workload annotations the reloader reads (decisive).
	decisiveAnnotations []string

	caches          *caches
	changes         *changeLog
	journal         *journal
	entered         *enteredConfigs
	reports         *report.Reporter
	strips          *runs.Strips
	notes           *runs.Notes
	restarts        *runs.Restarts
	tracker         *safe.Tracker
	entries         *workloadEntries
	gates           *safe.Gates
	rehearsal       *rehearsal
	annotationCheck *annotationCheck
	state           *state.Configs
	namespace       string // --namespace: the namespace of a state entry that names none
}

// watchConfigs queues a config on every event. A content change, creation or deletion seen
// while running is also logged as a change: it opens (or extends) its dependents' windows; and
// journaled with its records, which the next sync folds into what the pods are noted to run.
func (e *events) watchConfigs(kind string, inf cache.SharedIndexInformer) error {
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { e.configAdded(kind, obj, initial) },
		UpdateFunc: func(old, obj any) { e.configUpdated(kind, old, obj) },
		DeleteFunc: func(obj any) { e.configDeleted(kind, obj) },
	})
	if err != nil {
		return fmt.Errorf("watch %ss: %w", kind, err)
	}
	return nil
}

func (e *events) configAdded(kind string, obj any, initial bool) {
	k := objectKey(kind, obj)
	e.metrics.Stakater.ConfigEvent("add", kind, e.caches.allowed(k.Namespace))
	if initial {
		return // the start-up pass decides, once the caches have synced
	}
	e.journal.Append(k, configArrived{k: k, obj: obj.(*configs.Record)})
	e.changes.observe(k, e.clock.Now())
	e.enqueue(k)
}

func (e *events) configUpdated(kind string, old, obj any) {
	k := objectKey(kind, obj)
	e.metrics.Stakater.ConfigEvent("update", kind, e.caches.allowed(k.Namespace))
	if before, after := old.(*configs.Record), obj.(*configs.Record); !before.SameContent(after) {
		e.journal.Append(k, configArrived{k: k, old: before, obj: after})
		e.changes.observe(k, e.clock.Now())
	}
	e.enqueue(k)
}

func (e *events) configDeleted(kind string, obj any) {
	k := objectKey(kind, obj)
	e.metrics.Stakater.ConfigEvent("delete", kind, e.caches.allowed(k.Namespace))
	e.journal.Append(k, configArrived{k: k, old: recordOf(obj), deleted: true})
	e.changes.observe(k, e.clock.Now())
	e.enqueue(k)
}

// configArrived is a config's creation (old nil), content change, or deletion (deleted; old
// nil when the informer lost the record) seen while running. Records are immutable once in the
// cache, so the fold reads them as the handler would have.
type configArrived struct {
	k        workload.Key
	old, obj *configs.Record
	deleted  bool
}

// apply makes unknown what the strips noted of the config's dependents, except where a change
// kept the content of every key they read, and gives the restarts in flight or done the new
// version, in arrival order: the cache keeps only the last one.
func (d configArrived) apply(c *Controller) {
	switch {
	case d.deleted:
		c.strips.ConfigChanged(d.k, holdsNoneOf(d.old))
		return
	case d.old == nil:
		c.strips.ConfigChanged(d.k, holdsNoneOf(d.obj))
	default:
		c.strips.ConfigChanged(d.k, func(keys []string) bool {
			return c.records.Content(d.old, keys).Value == c.records.Content(d.obj, keys).Value
		})
	}
	c.notes.ConfigChanged(d.k, d.obj)
}

// watchWorkloads indexes workloads by the configs they reload on. A new workload, or one whose
// spec or annotations changed (our own patch included), is synced, and its configs too, so that
// their state advances once it holds their content, or once it stops reloading on them. What
// its pods run and what its annotations say are journaled, for the next sync to fold.
func (e *events) watchWorkloads(k *workload.Kind) error {
	k.ByConfig = workload.NewDependents()
	reg, err := k.Informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { e.workloadAdded(k, obj, initial) },
		UpdateFunc: func(old, obj any) { e.workloadUpdated(k, old, obj) },
		DeleteFunc: func(obj any) {
			obj = workload.Unpacked(obj)
			e.index(k, deletedObject(obj), nil)
			e.workloadGone(k, obj)
		},
	})
	if err != nil {
		return fmt.Errorf("watch %ss: %w", k.Name, err)
	}
	k.ByConfig.Synced = reg.HasSynced
	return nil
}

// workloadAdded indexes a new workload and queues it with its configs. One listed at start-up
// is journaled not at all: nothing is noted of it, and checkAll checks its annotations once the
// caches have synced (before, the check says nothing).
func (e *events) workloadAdded(k *workload.Kind, obj any, initial bool) {
	obj = workload.Unpacked(obj)
	e.index(k, nil, obj)
	if !initial {
		e.journal.Append(objectKey(k.Name, obj), workloadArrived{kind: k, obj: obj, justCreated: runs.JustCreated(obj)})
	}
	e.workloadChanged(k, obj, initial)
	e.tracker.Watch(k, obj)
}

// workloadUpdated re-indexes a workload whose spec or reload annotations changed, journals the
// change and queues it with its configs, old and new. A status update queues only its rollout;
// one that adds or drops an unknown annotation key is journaled for the check and queues the
// workload, whose sync folds it.
func (e *events) workloadUpdated(k *workload.Kind, old, obj any) {
	if om, nm := workload.MetadataOf(old), workload.MetadataOf(obj); !decisive(e.decisiveAnnotations, om.(metav1.Object), nm.(metav1.Object)) {
		// A status update: what the index holds depends on nothing it changes.
		e.tracker.Watch(k, nm) // it may end a rollout
		if e.annotationCheck.keysChanged(om.(metav1.Object), nm.(metav1.Object)) {
			obj = workload.Unpacked(obj)
			e.journal.Append(objectKey(k.Name, obj), workloadArrived{kind: k, obj: obj, checkOnly: true})
			e.queueWorkload(k, obj, e.enqueue)
		}
		return
	}
	old, obj = workload.Unpacked(old), workload.Unpacked(obj)
	e.index(k, old, obj)
	specChanged := old.(metav1.Object).GetGeneration() != obj.(metav1.Object).GetGeneration()
	e.journal.Append(objectKey(k.Name, obj), workloadArrived{kind: k, old: old, obj: obj, specChanged: specChanged})
	e.workloadChanged(k, obj, false)
	// The configs it reloaded on before are synced too: one it no longer reloads on may have
	// had its state held back by it alone.
	e.caches.configsOf(k, old, e.enqueue)
	e.tracker.Watch(k, obj)
}

// workloadArrived is a workload's creation seen while running (old nil), a decisive update of
// old to obj (specChanged: its generation moved), or a status update that changed its unknown
// annotation keys (checkOnly). The objects are the cache's, never changed; justCreated is asked
// of obj as its add event brought it.
type workloadArrived struct {
	kind                                *workload.Kind
	old, obj                            any
	justCreated, specChanged, checkOnly bool
}

// apply notes what the workload's pods run that no marker says (from its creation, a change of
// its template by us or by others, or its resume), then says its annotations' problems. Of a
// workload the cache no longer holds (deleted, or created again under its name) it notes and
// says nothing: its deletion forgets, or has forgotten, what it would write.
func (d workloadArrived) apply(c *Controller) {
	if !d.cached() {
		return
	}
	switch {
	case d.checkOnly:
	case d.old == nil:
		if d.justCreated {
			c.notes.Created(d.kind, d.obj)
		}
	case d.specChanged:
		c.notes.Stripped(d.kind, d.old, d.obj)
		c.notes.RestartedByOthers(d.kind, d.old, d.obj)
		c.notes.Resumed(d.kind, d.old, d.obj)
	}
	c.annotationCheck.check(d.kind, d.obj)
}

// cached reports whether the kind's cache still holds the object, by its UID.
func (d workloadArrived) cached() bool {
	cur, ok, err := d.kind.Informer.GetIndexer().GetByKey(objectKey(d.kind.Name, d.obj).CacheKey())
	return err == nil && ok && workload.MetadataOf(cur).(metav1.Object).GetUID() == d.obj.(metav1.Object).GetUID()
}

// index files a workload under the configs it may reload on, in place of those of old (the
// object it was filed with; nil for a new one), before its event is handled: what the event
// queues reads the index. obj is nil for a deleted one; both are decoded.
func (e *events) index(k *workload.Kind, old, obj any) {
	var from, to []workload.Key
	w := old
	if old != nil {
		from = e.caches.indexKeys(k, old)
	}
	if obj != nil {
		to, w = e.caches.indexKeys(k, obj), obj
	}
	k.ByConfig.Move(objectKey(k.Name, w).CacheKey(), from, to)
}

// workloadChanged syncs the workload, unless a window is open for it (its sync will come), and
// queues its configs. At start-up, the start-up pass queues the configs that need it; only
// those read by single keys are queued here, so their per-key state exists before a change,
// and with --reload-on-create all, so that an absent one gets its tombstone. The start-up's
// keys wait in the backlog (backlog.go).
func (e *events) workloadChanged(k *workload.Kind, obj any, initial bool) {
	meta, tmpl := k.Template(obj)
	add := e.enqueue
	if initial {
		add = e.backlog.add
	}
	e.queueWorkload(k, obj, add)
	if !initial || e.reloadOnCreate {
		e.caches.configsOf(k, obj, add)
		return
	}
	if tmpl == nil {
		return
	}
	for r, u := range policy.UsesOf(&tmpl.Spec) {
		if e.caches.Watched(r.Kind) && len(u.Keys) > 0 {
			add(workload.ConfigKey(r, meta.GetNamespace()))
		}
	}
}

// queueWorkload syncs the workload with add, unless a window is open for it: its sync will come.
func (e *events) queueWorkload(k *workload.Kind, obj any, add func(workload.Key)) {
	meta, _ := k.Template(obj)
	if w := (workload.Key{Kind: k.Name, Namespace: meta.GetNamespace(), Name: meta.GetName()}); !e.coalescer.Open(w) {
		add(w)
	}
}

// workloadGone forgets a deleted workload; its configs are synced, since it no longer holds
// back their state.
func (e *events) workloadGone(k *workload.Kind, obj any) {
	obj = deletedObject(obj)
	if meta, _ := k.Template(obj); meta != nil {
		w := workload.Key{Kind: k.Name, Namespace: meta.GetNamespace(), Name: meta.GetName()}
		e.reports.Forget(string(meta.GetUID()))
		e.strips.WorkloadGone(w)
		e.notes.WorkloadGone(w)
		e.restarts.WorkloadGone(w, meta.GetResourceVersion())
		e.tracker.Forget(w)
		e.entries.lift(k, obj)
		e.gates.Forget(w)
		e.rehearsal.forget(w)
		e.caches.configsOf(k, obj, e.enqueue)
	}
}

// watchNamespaces follows namespace labels for --namespace-selector.
func (e *events) watchNamespaces(namespaces cache.SharedIndexInformer) error {
	_, err := namespaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj any) {
			ns := obj.(*corev1.Namespace).Name
			if e.caches.left(old, obj) {
				e.entered.leave(ns, e.clock.Now())
				return
			}
			keys := e.caches.entered(old, obj)
			if keys == nil {
				return
			}
			// The configs the state has entries of, too: one deleted while out is judged then.
			keys = append(keys, e.stateConfigs(ns)...)
			left := e.entered.enter(ns)
			for _, k := range keys {
				if _, config := e.caches.configs[k.Kind]; config {
					e.entered.mark(k, left)
				}
				e.enqueue(k)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watch namespaces: %w", err)
	}
	return nil
}

// stateConfigs lists the configs of namespace ns of a watched kind that the state has an entry
// of, live or tombstoned.
func (e *events) stateConfigs(ns string) []workload.Key {
	var out []workload.Key
	for _, skey := range e.state.ConfigKeys() {
		kind, ens, name, ok := state.ParseKey(skey)
		if ens == "" {
			ens = e.namespace
		}
		if _, watched := e.caches.configs[kind]; ok && watched && ens == ns {
			out = append(out, workload.Key{Kind: kind, Namespace: ns, Name: name})
		}
	}
	return out
}
