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
	"github.com/reloader/reloader/reloader/runs"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// events is the informers' handlers: each event is journaled with what only its handler knows,
// for the next sync to fold into the parts, and its keys queued (or, at start-up, put in the
// backlog). A handler writes nothing else but the indexes (the workloads by config, changes,
// entered) and the metrics: its fields are the queue, the indexes, and what it only reads.
type events struct {
	enqueue        func(workload.Key)
	backlog        *backlog
	coalescer      *coalesce.Coalescer[workload.Key]
	clock          coalesce.Clock
	reloadOnCreate bool
	metrics        *metrics.Metrics
	// decisiveAnnotations are the workload annotations the reloader reads (decisive).
	decisiveAnnotations []string

	caches    *caches
	changes   *changeLog
	journal   *journal
	entered   *enteredConfigs
	namespace string // --namespace: the namespace of a state entry that names none

	// What the handlers only read, or queue, of other parts.
	rollouts    rolloutQueue
	unknownKeys unknownKeys
	entries     entryNames
	state       stateKeys
}

// The parts a handler reaches, narrowed to what it may do with them: read, or queue.
type (
	// rolloutQueue queues the rollout of a workload whose reload is followed (safe.Tracker).
	rolloutQueue interface {
		Watch(k *workload.Kind, obj any)
	}
	// unknownKeys tells an update that adds or drops an unknown annotation key (annotationCheck).
	unknownKeys interface {
		keysChanged(old, obj metav1.Object) bool
	}
	// entryNames names the state entries a workload may have (workloadEntries).
	entryNames interface {
		keysOf(k *workload.Kind, obj any) []string
	}
	// stateKeys lists the state's config entries (state.Configs).
	stateKeys interface{ ConfigKeys() []string }
)

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
		DeleteFunc: func(obj any) { e.workloadDeleted(k, obj) },
	})
	if err != nil {
		return fmt.Errorf("watch %ss: %w", k.Name, err)
	}
	k.ByConfig.Synced = reg.HasSynced
	return nil
}

// workloadAdded indexes a new workload and queues it with its configs. One listed at start-up
// is journaled only if paused: nothing else is noted of it, and checkAll checks its annotations
// once the caches have synced (before, the check says nothing).
func (e *events) workloadAdded(k *workload.Kind, obj any, initial bool) {
	obj = k.Decoded(obj)
	e.index(k, nil, obj)
	switch {
	case !initial:
		e.journal.Append(objectKey(k.Name, obj), workloadArrived{kind: k, obj: obj, justCreated: runs.JustCreated(obj)})
	case k.Paused != nil && k.Paused(obj):
		e.journal.Append(objectKey(k.Name, obj), pausedAtStart{kind: k, obj: obj})
	}
	e.workloadChanged(k, obj, initial)
	e.rollouts.Watch(k, obj)
}

// workloadUpdated re-indexes a workload whose spec or reload annotations changed, journals the
// change and queues it with its configs, old and new. A status update queues only its rollout;
// one that adds or drops an unknown annotation key is journaled for the check and queues the
// workload, whose sync folds it.
func (e *events) workloadUpdated(k *workload.Kind, old, obj any) {
	if om, nm := workload.MetadataOf(old), workload.MetadataOf(obj); !decisive(e.decisiveAnnotations, om.(metav1.Object), nm.(metav1.Object)) {
		// A status update: what the index holds depends on nothing it changes.
		e.rollouts.Watch(k, nm) // it may end a rollout
		if e.unknownKeys.keysChanged(om.(metav1.Object), nm.(metav1.Object)) {
			obj = k.Decoded(obj)
			e.journal.Append(objectKey(k.Name, obj), workloadArrived{kind: k, obj: obj, checkOnly: true})
			e.queueWorkload(k, obj, e.enqueue)
		}
		return
	}
	old, obj = k.Decoded(old), k.Decoded(obj)
	e.index(k, old, obj)
	specChanged := old.(metav1.Object).GetGeneration() != obj.(metav1.Object).GetGeneration()
	e.journal.Append(objectKey(k.Name, obj), workloadArrived{kind: k, old: old, obj: obj, specChanged: specChanged})
	e.workloadChanged(k, obj, false)
	// The configs it reloaded on before are synced too: one it no longer reloads on may have
	// had its state held back by it alone.
	e.caches.configsOf(k, old, e.enqueue)
	e.rollouts.Watch(k, obj)
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
// its template by us or by others, or its resume), then says its annotations' problems. A
// deletion of the workload arrived later is folded later: it forgets what this writes.
func (d workloadArrived) apply(c *Controller) {
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

// pausedAtStart is a workload listed at start-up with its rollouts paused: a pause this
// process did not see begin.
type pausedAtStart struct {
	kind *workload.Kind
	obj  any
}

func (d pausedAtStart) apply(c *Controller) { c.notes.PausedAtStart(d.kind, d.obj) }

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

// workloadDeleted unfiles a deleted workload and journals its deletion, with the names of its
// state entries, which read the caches. It queues its configs, since it no longer holds back
// their state, and itself, so that a sync folds the deletion even when it reads no config.
func (e *events) workloadDeleted(k *workload.Kind, obj any) {
	obj = deletedObject(workload.Unpacked(obj))
	e.index(k, obj, nil)
	meta, _ := k.Template(obj)
	if meta == nil {
		return
	}
	w := workload.Key{Kind: k.Name, Namespace: meta.GetNamespace(), Name: meta.GetName()}
	e.journal.Append(w, workloadDeparted{w: w, uid: string(meta.GetUID()), rv: meta.GetResourceVersion(), entries: e.entries.keysOf(k, obj)})
	e.caches.configsOf(k, obj, e.enqueue)
	e.queueWorkload(k, obj, e.enqueue)
}

// workloadDeparted is a workload's deletion: its key, the deleted object's UID and
// resourceVersion, and the names of the state entries it may have, taken as it was deleted.
type workloadDeparted struct {
	w       workload.Key
	uid, rv string
	entries []string
}

// apply forgets the deleted workload: its Warnings, what its pods were noted to run, its
// restarts (but what belongs to an object of its name written after rv), its rollout's
// template, its state entries, its gate, and its dry-run reports.
func (d workloadDeparted) apply(c *Controller) {
	c.reports.Forget(d.uid)
	c.strips.WorkloadGone(d.w)
	c.notes.WorkloadGone(d.w)
	c.restarts.WorkloadGone(d.w, d.rv)
	c.tracker.Forget(d.w)
	c.entries.lift(d.entries)
	c.gates.Forget(d.w)
	c.rehearsal.forget(d.w)
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
