package reloader

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/internal/kube"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/state"
)

// buildInformers creates only the informers the options need: configs stripped by the transform
// and filtered by the label selector, and the enabled workload kinds; and wires their events.
func (c *Controller) buildInformers() error {
	ns := c.opts.listNamespace()
	bySelector := func(o *metav1.ListOptions) { o.LabelSelector = c.opts.ResourceLabelSelector }
	notState := excludeState(c.opts.Namespace, c.opts.StateNamespace, c.state.ShardName)
	c.caches.configs = map[string]cache.SharedIndexInformer{}
	if !c.opts.IgnoreConfigMaps {
		c.caches.configs[policy.KindConfigMap] = kube.NewInformer[*corev1.ConfigMapList](c.clients.Link, c.clients.ConfigMaps(ns), &corev1.ConfigMap{},
			func(o *metav1.ListOptions) { bySelector(o); o.FieldSelector = notState }, c.records.transform)
	}
	if !c.opts.IgnoreSecrets {
		byType := excludeSecretTypes(c.opts.IgnoreSecretTypes)
		c.caches.configs[policy.KindSecret] = kube.NewInformer[*corev1.SecretList](c.clients.Link, c.clients.Secrets(ns), &corev1.Secret{},
			func(o *metav1.ListOptions) { bySelector(o); o.FieldSelector = byType }, c.records.transform)
	}
	c.caches.kinds = map[string]*workloadKind{}
	if c.opts.Webhook.URL == "" { // --webhook-url reloads nothing, so it watches no workload
		c.caches.kinds = selectKinds(c.opts, c.clients, c.records.transform, c.opts.HashKey.noteKey)
		c.wireJobs()
	}
	all := map[string]cache.SharedIndexInformer{}
	for kind, inf := range c.caches.configs {
		all[kind+"s"] = inf
		if err := c.watchConfigs(kind, inf); err != nil {
			return err
		}
	}
	for _, k := range c.caches.kinds {
		all[k.name+"s"] = k.informer
		if err := c.watchWorkloads(k); err != nil {
			return err
		}
	}
	if c.opts.NamespaceSelector != nil {
		if err := c.watchNamespaces(); err != nil {
			return err
		}
		all["Namespaces"] = c.caches.namespaces
	}
	for what, inf := range all {
		_ = inf.SetWatchErrorHandlerWithContext(watchError(what, c.log)) // fails only once started
		c.informers = append(c.informers, inf)
	}
	return nil
}

// excludeState is a field selector that keeps the state shards out of the ConfigMap watch: each
// state write would otherwise come back as an event carrying the whole shard. Field selectors
// cannot name a namespace and a name together, so in all-namespaces mode ConfigMaps with these
// names are not tracked in any namespace.
func excludeState(namespace, stateNamespace string, shardName func(int) string) string {
	if namespace != "" && namespace != stateNamespace {
		return ""
	}
	parts := make([]string, state.MaxShards)
	for i := range parts {
		parts[i] = "metadata.name!=" + shardName(i)
	}
	return strings.Join(parts, ",")
}

// excludeSecretTypes is a field selector that keeps Secrets of these types out of the list and
// watch (the API server selects Secrets on "type"): they are never sent, cached nor recorded.
func excludeSecretTypes(types []string) string {
	sel := make([]fields.Selector, 0, len(types))
	for _, t := range types {
		sel = append(sel, fields.OneTermNotEqualSelector("type", t))
	}
	return fields.AndSelectors(sel...).String()
}

// watchError makes a refused list or watch say which permission is missing, through slog,
// instead of retrying silently while the caches never sync.
func watchError(what string, log *slog.Logger) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, r *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) {
			log.Error("the reloader may not list and watch "+what+"; grant list and watch on them in its Role or ClusterRole (it retries until then)", "err", err)
			return
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}
}

// watchConfigs queues a config on every event. A content change, creation or deletion seen
// while running is also logged as a change: it opens (or extends) its dependents' windows.
func (c *Controller) watchConfigs(kind string, inf cache.SharedIndexInformer) error {
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			k := objectKey(kind, obj)
			c.metrics.Stakater.ConfigEvent("add", kind, c.caches.allowed(k.namespace))
			if initial {
				return // the start-up pass decides, once the caches have synced
			}
			c.strips.configChanged(k, holdsNoneOf(obj.(*configRecord)))
			c.notes.configChanged(k, obj.(*configRecord))
			c.changes.observe(k, c.opts.Clock.Now())
			c.queue.Add(k)
		},
		UpdateFunc: func(old, obj any) {
			k := objectKey(kind, obj)
			c.metrics.Stakater.ConfigEvent("update", kind, c.caches.allowed(k.namespace))
			if before, after := old.(*configRecord), obj.(*configRecord); before.content != after.content {
				c.strips.configChanged(k, func(keys []string) bool {
					return c.records.content(before, keys).Value == c.records.content(after, keys).Value
				})
				c.notes.configChanged(k, after)
				c.changes.observe(k, c.opts.Clock.Now())
			}
			c.queue.Add(k)
		},
		DeleteFunc: func(obj any) {
			k := objectKey(kind, obj)
			c.metrics.Stakater.ConfigEvent("delete", kind, c.caches.allowed(k.namespace))
			c.strips.configChanged(k, holdsNoneOf(recordOf(obj)))
			c.changes.observe(k, c.opts.Clock.Now())
			c.queue.Add(k)
		},
	})
	if err != nil {
		return fmt.Errorf("watch %ss: %w", kind, err)
	}
	return nil
}

// holdsNoneOf reports, for the keys a workload reads, whether rec holds none of them. Pods that
// read only such keys read the same whether rec exists or not, so a deletion or a creation of
// it changes nothing they run (soak seed 1795669739113515719@4: a workload created while the
// state was behind, reading an absent optional key, restarted for a recreation without the key).
func holdsNoneOf(rec *configRecord) func(keys []string) bool {
	return func(keys []string) bool {
		if rec == nil {
			return false
		}
		return !slices.ContainsFunc(rec.Keys, func(s confighash.KeySum) bool { return slices.Contains(keys, s.Key()) })
	}
}

// recordOf is the config record of a deletion event; nil when the informer lost it.
func recordOf(obj any) *configRecord {
	rec, _ := deletedObject(obj).(*configRecord)
	return rec
}

// deletedObject is the object of a deletion event, unwrapped from the tombstone the informer
// passes when it missed the deletion itself.
func deletedObject(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// watchWorkloads indexes workloads by the configs they reload on. A new workload, or one whose
// spec or annotations changed (our own patch included), is synced, and its configs too, so that
// their state advances once it holds their content, or once it stops reloading on them.
func (c *Controller) watchWorkloads(k *workloadKind) error {
	k.byConfig = newDependents()
	reg, err := k.informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			obj = unpacked(obj)
			c.index(k, nil, obj)
			if !initial {
				c.notes.created(k, obj)
			}
			c.workloadChanged(k, obj, initial)
			c.tracker.watch(k, obj)
		},
		UpdateFunc: func(old, obj any) {
			if om, nm := metadataOf(old), metadataOf(obj); !decisive(c.decisiveAnnotations, om.(metav1.Object), nm.(metav1.Object)) {
				// A status update: what the index holds depends on nothing it changes.
				c.tracker.watch(k, nm) // it may end a rollout
				if c.annotationCheck.keysChanged(om.(metav1.Object), nm.(metav1.Object)) {
					c.annotationCheck.check(k, unpacked(obj))
				}
				return
			}
			old, obj = unpacked(old), unpacked(obj)
			c.index(k, old, obj)
			o, n := old.(metav1.Object), obj.(metav1.Object)
			if o.GetGeneration() != n.GetGeneration() {
				c.notes.stripped(k, old, obj)
				c.notes.restartedByOthers(k, old, obj)
				c.notes.resumed(k, old, obj)
			}
			c.workloadChanged(k, obj, false)
			// The configs it reloaded on before are synced too: one it no longer reloads on may
			// have had its state held back by it alone.
			c.caches.configsOf(k, old, c.queue.Add)
			c.tracker.watch(k, obj)
		},
		DeleteFunc: func(obj any) {
			obj = unpacked(obj)
			c.index(k, deletedObject(obj), nil)
			c.workloadGone(k, obj)
		},
	})
	if err != nil {
		return fmt.Errorf("watch %ss: %w", k.name, err)
	}
	k.byConfig.synced = reg.HasSynced
	return nil
}

// index files a workload under the configs it may reload on, in place of those of old (the
// object it was filed with; nil for a new one), before its event is handled: what the event
// queues reads the index. obj is nil for a deleted one; both are decoded.
func (c *Controller) index(k *workloadKind, old, obj any) {
	var from, to []key
	w := old
	if old != nil {
		from = c.caches.indexKeys(k, old)
	}
	if obj != nil {
		to, w = c.caches.indexKeys(k, obj), obj
	}
	k.byConfig.move(objectKey(k.name, w).cacheKey(), from, to)
}

// decisive reports an update that may change a decision: the spec (its generation), the object
// (its UID), or an annotation the reloader reads, its presence included (an empty value is not
// an absent one). Status updates during a rollout are not. annotations are those the reloader
// reads.
func decisive(annotations []string, old, obj metav1.Object) bool {
	// Another object of the same name (deleted and created again while the watch was broken:
	// the relist shows it as an update) may read other configs at the same generation.
	if old.GetGeneration() != obj.GetGeneration() || old.GetUID() != obj.GetUID() {
		return true
	}
	o, n := old.GetAnnotations(), obj.GetAnnotations()
	for _, a := range annotations {
		ov, had := o[a]
		nv, has := n[a]
		if ov != nv || had != has {
			return true
		}
	}
	return false
}

// workloadChanged syncs the workload, unless a window is open for it (its sync will come), and
// queues its configs. At start-up, the start-up pass queues the configs that need it; only
// those read by single keys are queued here, so their per-key state exists before a change,
// and with --reload-on-create all, so that an absent one gets its tombstone. The start-up's
// keys wait in the backlog (backlog.go).
func (c *Controller) workloadChanged(k *workloadKind, obj any, initial bool) {
	c.annotationCheck.check(k, obj)
	meta, tmpl := k.template(obj)
	add := c.queue.Add
	if initial {
		add = c.backlog.add
	}
	if w := (key{k.name, meta.GetNamespace(), meta.GetName()}); !c.coalescer.Open(w) {
		add(w)
	}
	if !initial || c.opts.ReloadOnCreate {
		c.caches.configsOf(k, obj, add)
		return
	}
	if tmpl == nil {
		return
	}
	for r, u := range policy.UsesOf(&tmpl.Spec) {
		if c.caches.watched(r.Kind) && len(u.Keys) > 0 {
			add(configKey(r, meta.GetNamespace()))
		}
	}
}

// workloadGone forgets a deleted workload; its configs are synced, since it no longer holds
// back their state.
func (c *Controller) workloadGone(k *workloadKind, obj any) {
	obj = deletedObject(obj)
	if meta, _ := k.template(obj); meta != nil {
		w := key{k.name, meta.GetNamespace(), meta.GetName()}
		c.reports.forget(string(meta.GetUID()))
		c.strips.workloadGone(w)
		c.notes.workloadGone(w)
		c.restarts.workloadGone(w, meta.GetResourceVersion())
		c.tracker.forget(w)
		c.entries.lift(k, obj)
		c.gates.forget(w)
		c.rehearsal.forget(w)
		c.caches.configsOf(k, obj, c.queue.Add)
	}
}

func configKey(r policy.ConfigRef, ns string) key { return key{r.Kind, ns, r.Name} }

// patternKey indexes the workloads whose reload annotations hold a pattern for configs of this
// kind in this namespace: no config has an empty name.
func patternKey(kind, ns string) key { return key{kind, ns, ""} }

// watchNamespaces follows namespace labels for --namespace-selector.
func (c *Controller) watchNamespaces() error {
	c.caches.namespaces = kube.NewInformer[*corev1.NamespaceList](c.clients.Link, c.clients.Namespaces(), &corev1.Namespace{}, kube.NoTweak, c.records.transform)
	_, err := c.caches.namespaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj any) {
			for _, k := range c.caches.entered(old, obj) {
				if _, config := c.caches.configs[k.kind]; config {
					c.entered.mark(k)
				}
				c.queue.Add(k)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watch namespaces: %w", err)
	}
	return nil
}
