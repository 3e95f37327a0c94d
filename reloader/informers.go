package reloader

import (
	"context"
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
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/jobs"
	"github.com/reloader/reloader/reloader/workload"
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
			func(o *metav1.ListOptions) { bySelector(o); o.FieldSelector = notState }, c.records.Transform)
	}
	if !c.opts.IgnoreSecrets {
		byType := excludeSecretTypes(c.opts.IgnoreSecretTypes)
		c.caches.configs[policy.KindSecret] = kube.NewInformer[*corev1.SecretList](c.clients.Link, c.clients.Secrets(ns), &corev1.Secret{},
			func(o *metav1.ListOptions) { bySelector(o); o.FieldSelector = byType }, c.records.Transform)
	}
	c.caches.kinds = map[string]*workload.Kind{}
	if c.opts.Webhook.URL == "" { // --webhook-url reloads nothing, so it watches no workload
		c.caches.kinds = selectKinds(c.opts, c.clients, c.records.Transform, c.opts.HashKey.noteKey)
		if k := c.caches.kinds["Job"]; k != nil {
			c.jobs = jobs.NewRuns(jobs.Deps{API: jobsAPI{c.clients}, Notes: jobNotes{c}, Key: c.opts.HashKey.noteKey, Scope: c.opts,
				Planner: c.planner, Queue: c.queue, Cache: k, Reports: c.reports, Metrics: c.metrics, Log: c.log})
			c.jobs.Wire(k)
		}
	}
	e := &events{enqueue: c.queue.Add, backlog: c.backlog, coalescer: c.coalescer, clock: c.opts.Clock,
		reloadOnCreate: c.opts.ReloadOnCreate, metrics: c.metrics, decisiveAnnotations: c.decisiveAnnotations,
		caches: c.caches, changes: c.changes, journal: c.journal, entered: c.entered, namespace: c.opts.Namespace,
		rollouts: c.tracker, unknownKeys: c.annotationCheck, entries: c.entries, state: c.state.Configs()}
	all := map[string]cache.SharedIndexInformer{}
	for kind, inf := range c.caches.configs {
		all[kind+"s"] = inf
		if err := e.watchConfigs(kind, inf); err != nil {
			return err
		}
	}
	for _, k := range c.caches.kinds {
		all[k.Name+"s"] = k.Informer
		if err := e.watchWorkloads(k); err != nil {
			return err
		}
	}
	if c.opts.NamespaceSelector != nil {
		c.caches.namespaces = kube.NewInformer[*corev1.NamespaceList](c.clients.Link, c.clients.Namespaces(), &corev1.Namespace{}, kube.NoTweak, c.records.Transform)
		if err := e.watchNamespaces(c.caches.namespaces); err != nil {
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

// holdsNoneOf reports, for the keys a workload reads, whether rec holds none of them. Pods that
// read only such keys read the same whether rec exists or not, so a deletion or a creation of
// it changes nothing they run (soak seed 1795669739113515719@4: a workload created while the
// state was behind, reading an absent optional key, restarted for a recreation without the key).
func holdsNoneOf(rec *configs.Record) func(keys []string) bool {
	return func(keys []string) bool {
		if rec == nil {
			return false
		}
		return !slices.ContainsFunc(rec.Keys, func(s confighash.KeySum) bool { return slices.Contains(keys, s.Key()) })
	}
}

// recordOf is the config record of a deletion event; nil when the informer lost it.
func recordOf(obj any) *configs.Record {
	rec, _ := deletedObject(obj).(*configs.Record)
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

// patternKey indexes the workloads whose reload annotations hold a pattern for configs of this
// kind in this namespace: no config has an empty name.
func patternKey(kind, ns string) workload.Key { return workload.Key{Kind: kind, Namespace: ns} }

// jobsAPI serves reloader/jobs the Jobs of a namespace.
type jobsAPI struct{ clients *kube.Clients }

func (a jobsAPI) Jobs(ns string) jobs.Client { return a.clients.Jobs(ns) }

// jobNotes serves reloader/jobs the first state ConfigMap, where Job recreations are written
// down: read from the API server, and written through the store.
type jobNotes struct{ c *Controller }

func (n jobNotes) Notes(ctx context.Context) (*corev1.ConfigMap, error) {
	return n.c.clients.ConfigMaps(n.c.opts.StateNamespace).Get(ctx, n.c.state.ShardName(0), metav1.GetOptions{})
}

func (n jobNotes) WriteOther(ctx context.Context, key string, value *string) error {
	return n.c.state.WriteOther(ctx, key, value)
}
