// Package reloader wires the pieces together: informers over ConfigMaps, Secrets and workloads,
// the state store, the coalescer, and one rate-limited workqueue whose sync functions decide and
// perform restarts.
//
// A queue key is "<Kind>/<namespace>/<name>". A config key (ConfigMap, Secret) is synced by
// comparing the config's hash with its state entry; on a difference every dependent workload gets
// a pending reload and a coalescing window. When a window closes the workload key is queued, and
// its sync applies every pending config in one patch. A config's state entry is written only
// after all its dependents are patched, so a crash at any point leaves the state behind the
// workloads, and the next start re-derives exactly the reloads still missing; the patch is
// skipped where the workload already holds the value, so none happens twice.
package reloader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/reloader/reloader/coalesce"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/state"
)

const byConfigIndex = "byConfig"

// Options configures a Controller.
type Options struct {
	// Namespace to watch; empty watches all namespaces.
	Namespace string
	// NamespaceSelector and NamespacesToIgnore narrow all-namespaces mode.
	NamespaceSelector  labels.Selector
	NamespacesToIgnore []string
	// ResourceLabelSelector is pushed into the list/watch of ConfigMaps and Secrets.
	ResourceLabelSelector string
	// IgnoreConfigMaps / IgnoreSecrets turn one kind of config off (--resources-to-ignore).
	IgnoreConfigMaps, IgnoreSecrets bool
	// StateNamespace and StateName locate the state ConfigMaps.
	StateNamespace string
	StateName      string
	// CoalescePeriod is the debounce window; zero acts at once. CoalesceMaxWait caps a window.
	CoalescePeriod  time.Duration
	CoalesceMaxWait time.Duration
	// ShutdownGrace bounds the flush of pending reloads when the context ends. Zero abandons
	// them, as a crash would; they are redone on the next start.
	ShutdownGrace time.Duration
	// Strategy is StrategyEnvVars (default) or StrategyAnnotations.
	Strategy string
	// ReloadOnCreate reloads dependents of a config that appears; ReloadOnDelete of one that goes.
	ReloadOnCreate, ReloadOnDelete bool
	// ArgoRollouts and OpenShift enable those workload kinds (through the dynamic client).
	ArgoRollouts, OpenShift bool
	// IgnoredWorkloadTypes turns kinds off: deployments, statefulsets, daemonsets, ...
	IgnoredWorkloadTypes []string
	Annotations          Annotations
	Workers              int
	Clock                coalesce.Clock
	Log                  *slog.Logger
	Metrics              *metrics.Metrics
}

// Controller restarts workloads when the configs they depend on change.
type Controller struct {
	opts       Options
	clients    *Clients
	log        *slog.Logger
	metrics    *metrics.Metrics
	informers  []cache.SharedIndexInformer
	synced     []cache.InformerSynced
	configs    map[string]cache.SharedIndexInformer
	kinds      map[string]*workloadKind
	namespaces cache.SharedIndexInformer // only with a NamespaceSelector
	state      *state.Store
	queue      workqueue.TypedRateLimitingInterface[string]
	coalescer  *coalesce.Coalescer
	events     record.EventBroadcaster
	recorder   record.EventRecorder
	firstStart bool

	ready atomic.Bool
	busy  atomic.Int32 // workers inside a sync

	mu       sync.Mutex
	pending  map[string]*pendingConfig // by config key
	reported map[string]string         // workload UID → annotation problems already reported
	// patchedFrom holds, per workload patched but not yet seen again in the cache, the
	// resourceVersion the patch was computed from.
	patchedFrom map[string]string
	// initial holds, on the first start only, the configs that existed when it began and are
	// not synced yet: they are recorded, never reloaded, even with --reload-on-create.
	initial map[string]bool
}

// Ready reports whether the caches have synced and the controller is processing changes.
func (c *Controller) Ready() bool { return c.ready.Load() }

// New builds a Controller; Run starts it.
func New(clients *Clients, opts Options) (*Controller, error) {
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Clock == nil {
		opts.Clock = coalesce.RealClock{}
	}
	if opts.Strategy == "" {
		opts.Strategy = StrategyEnvVars
	}
	c := &Controller{
		opts:    opts,
		clients: clients,
		log:     opts.Log,
		metrics: opts.Metrics,
		state:   state.New(clients.stateConfigMaps(opts.StateNamespace), opts.StateNamespace, opts.StateName, opts.Log),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "reloader", MetricsProvider: opts.Metrics.WorkqueueProvider()}),
		pending:     map[string]*pendingConfig{},
		reported:    map[string]string{},
		patchedFrom: map[string]string{},
		initial:     map[string]bool{},
	}
	c.state.OnWrite = c.observeStateWrite
	c.events = record.NewBroadcaster()
	c.recorder = c.events.NewRecorder(clients.Scheme, corev1.EventSource{Component: "reloader"})
	c.coalescer = coalesce.New(opts.CoalescePeriod, opts.CoalesceMaxWait, opts.Clock, c.queue.Add)
	c.buildInformers()
	if err := c.addHandlers(); err != nil {
		return nil, err
	}
	return c, nil
}

// buildInformers creates only the informers the options need: configs stripped by the transform
// and filtered by the label selector, and the enabled workload kinds.
func (c *Controller) buildInformers() {
	ns := c.opts.Namespace
	bySelector := func(o *metav1.ListOptions) { o.LabelSelector = c.opts.ResourceLabelSelector }
	notState := c.excludeState()
	c.configs = map[string]cache.SharedIndexInformer{}
	if !c.opts.IgnoreConfigMaps {
		c.configs[kindConfigMap] = newInformer[*corev1.ConfigMapList](c.clients.ConfigMaps(ns), &corev1.ConfigMap{},
			func(o *metav1.ListOptions) { bySelector(o); o.FieldSelector = notState }, c.transform)
	}
	if !c.opts.IgnoreSecrets {
		c.configs[kindSecret] = newInformer[*corev1.SecretList](c.clients.secrets(ns), &corev1.Secret{}, bySelector, c.transform)
	}
	c.kinds = selectKinds(c.opts, c.clients, c.transform)
	if c.opts.NamespaceSelector != nil {
		c.namespaces = newInformer[*corev1.NamespaceList](c.clients.namespaces(), &corev1.Namespace{}, noTweak, c.transform)
		// Only a namespace entering the selection needs its configs by namespace.
		for _, inf := range c.configs {
			_ = inf.AddIndexers(cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		}
	}
	all := map[string]cache.SharedIndexInformer{}
	for kind, inf := range c.configs {
		all[kind+"s"] = inf
	}
	for _, k := range c.kinds {
		all[k.name+"s"] = k.informer
	}
	if c.namespaces != nil {
		all["Namespaces"] = c.namespaces
	}
	for what, inf := range all {
		_ = inf.SetWatchErrorHandlerWithContext(c.watchError(what)) // fails only once started
		c.informers = append(c.informers, inf)
		c.synced = append(c.synced, inf.HasSynced)
	}
}

// excludeState is a field selector that keeps the state shards out of the ConfigMap watch: each
// state write would otherwise come back as an event carrying the whole shard. Field selectors
// cannot name a namespace and a name together, so in all-namespaces mode ConfigMaps with these
// names are not tracked in any namespace.
func (c *Controller) excludeState() string {
	if c.opts.Namespace != "" && c.opts.Namespace != c.opts.StateNamespace {
		return ""
	}
	parts := make([]string, state.MaxShards)
	for i := range parts {
		parts[i] = "metadata.name!=" + c.state.ShardName(i)
	}
	return strings.Join(parts, ",")
}

// watchError makes a refused list or watch say which permission is missing, through slog,
// instead of retrying silently while the caches never sync.
func (c *Controller) watchError(what string) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, r *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) {
			c.log.Error("the reloader may not list and watch "+what+"; grant list and watch on them in its Role or ClusterRole (it retries until then)", "err", err)
			return
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}
}

func (c *Controller) addHandlers() error {
	for kind, inf := range c.configs {
		enqueue := func(obj any) { c.enqueue(kind, obj) }
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(obj any, initial bool) {
				if initial && c.firstStart {
					c.markInitial(kind, obj)
				}
				enqueue(obj)
			},
			UpdateFunc: func(_, obj any) { enqueue(obj) },
			DeleteFunc: enqueue,
		}); err != nil {
			return fmt.Errorf("watch %ss: %w", kind, err)
		}
	}
	for _, k := range c.kinds {
		if err := k.informer.AddIndexers(cache.Indexers{byConfigIndex: c.indexByConfig(k)}); err != nil {
			return fmt.Errorf("index %ss: %w", k.name, err)
		}
		if _, err := k.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.workloadSeen(k, obj) },
			UpdateFunc: func(_, obj any) { c.workloadSeen(k, obj) },
			// A deleted workload must stop holding back the state of its configs.
			DeleteFunc: func(obj any) { c.workloadGone(k, obj) },
		}); err != nil {
			return fmt.Errorf("watch %ss: %w", k.name, err)
		}
	}
	if c.namespaces != nil {
		if _, err := c.namespaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(old, obj any) { c.namespaceRelabelled(old, obj) },
		}); err != nil {
			return fmt.Errorf("watch namespaces: %w", err)
		}
	}
	return nil
}

func (c *Controller) markInitial(kind string, obj any) {
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		c.mu.Lock()
		if c.initial == nil {
			c.initial = map[string]bool{}
		}
		c.initial[kind+"/"+key] = true
		c.mu.Unlock()
	}
}

// takeInitial reports whether key was in the first start's initial list, and forgets it. The
// emptied map is dropped: Go maps never shrink.
func (c *Controller) takeInitial(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	was := c.initial[key]
	delete(c.initial, key)
	if was && len(c.initial) == 0 {
		c.initial = nil
	}
	return was
}

func (c *Controller) enqueue(kind string, obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(kind + "/" + key)
}

// indexByConfig indexes a workload under the key of every config whose change may reload it.
func (c *Controller) indexByConfig(k *workloadKind) cache.IndexFunc {
	return func(obj any) ([]string, error) {
		meta, tmpl := k.template(obj)
		if tmpl == nil {
			return nil, nil
		}
		pol := c.opts.Annotations.policyOf(meta.GetAnnotations(), tmpl.Annotations)
		refs := pol.candidates(usesOf(&tmpl.Spec))
		keys := make([]string, len(refs))
		for i, r := range refs {
			keys[i] = configKey(r, meta.GetNamespace())
		}
		return keys, nil
	}
}

func configKey(r configRef, ns string) string { return r.Kind + "/" + ns + "/" + r.Name }

// Run loads the state, syncs the caches, prunes the state of deleted configs and processes the
// queue until ctx ends; then it flushes pending reloads within the shutdown grace.
func (c *Controller) Run(ctx context.Context) error {
	first, err := c.state.Load(ctx)
	if err != nil {
		return err
	}
	c.firstStart = first
	if first {
		c.log.Info("no state found: recording the current hash of every config without restarting anything")
	}
	c.events.StartRecordingToSink(eventSink{client: c.clients.events})
	defer c.events.Shutdown()
	for _, inf := range c.informers {
		go inf.RunWithContext(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		c.log.Info("stopped before the caches synced")
		return nil
	}
	live := c.liveKeys()
	if n := c.state.Prune(func(k string) bool { return live[k] }); n > 0 {
		c.log.Info("pruned state entries of deleted configs", "entries", n)
	}
	c.log.Info("caches synced; reloading", "namespace", c.opts.Namespace, "coalesce_period", c.opts.CoalescePeriod,
		"strategy", c.opts.Strategy, "kinds", len(c.kinds))

	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	stateCtx, stopState := context.WithCancel(context.WithoutCancel(ctx))
	stateDone := make(chan struct{})
	go func() { defer close(stateDone); c.state.Run(stateCtx, 50*time.Millisecond) }()
	var workers sync.WaitGroup
	for range c.opts.Workers {
		workers.Go(func() {
			for c.processNext(workCtx) {
			}
		})
	}
	go c.reportGauges(workCtx)
	go c.releaseStartupMemory(workCtx)
	c.ready.Store(true)
	c.checkAllWorkloads()

	<-ctx.Done()
	c.shutdown(&workers, stopWork)
	stopState()
	<-stateDone
	if c.opts.ShutdownGrace == 0 {
		return nil
	}
	return c.state.Flush(context.Background())
}

// releaseStartupMemory returns the start-up spike to the OS once the initial sync has been
// processed. Streaming every config through the transform leaves garbage as large as all their
// contents, which the runtime would otherwise give back only slowly (see BENCHMARKS.md).
func (c *Controller) releaseStartupMemory(ctx context.Context) {
	for !c.drained(time.Second) {
		if ctx.Err() != nil {
			return
		}
	}
	debug.FreeOSMemory()
}

// shutdown closes every coalescing window and lets the workers drain the queue for at most the
// grace period.
func (c *Controller) shutdown(workers *sync.WaitGroup, stopWork context.CancelFunc) {
	if c.opts.ShutdownGrace > 0 {
		c.coalescer.Flush()
		c.log.Info("shutting down: flushing pending reloads", "queued", c.queue.Len(), "grace", c.opts.ShutdownGrace)
		if !c.drained(c.opts.ShutdownGrace) {
			c.log.Warn("shutdown grace elapsed; remaining reloads are redone on the next start", "queued", c.queue.Len())
		}
	}
	c.queue.ShutDown()
	stopWork()
	workers.Wait()
}

// drained waits until the queue is empty and no worker is busy. The workqueue's own
// ShutDownWithDrain waits only for items already being processed, not for queued ones.
func (c *Controller) drained(grace time.Duration) bool {
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if c.queue.Len() == 0 && c.busy.Load() == 0 {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	c.busy.Add(1)
	defer c.busy.Add(-1)
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		if errors.Is(err, errCacheBehind) {
			c.log.Debug("waiting for the cache to see our patch", "key", key)
		} else {
			c.log.Error("sync failed; will retry", "key", key, "err", err, "retries", c.queue.NumRequeues(key))
		}
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *Controller) sync(ctx context.Context, key string) error {
	kind, ns, name, err := splitKey(key)
	if err != nil {
		return err
	}
	if inf, ok := c.configs[kind]; ok {
		return c.syncConfig(key, configRef{Kind: kind, Name: name}, ns, inf)
	}
	if k, ok := c.kinds[kind]; ok {
		return c.syncWorkload(ctx, key, k, ns, name)
	}
	return fmt.Errorf("queue key %q: unknown kind", key)
}

func splitKey(key string) (kind, ns, name string, err error) {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) != 3 {
		return "", "", "", fmt.Errorf("malformed queue key %q", key)
	}
	return parts[0], parts[1], parts[2], nil
}

// stateKey is the state entry of a config; the namespace is part of it only when the reloader
// watches all namespaces.
func (c *Controller) stateKey(r configRef, ns string) string {
	if c.opts.Namespace != "" {
		ns = ""
	}
	return state.Key(r.Kind, ns, r.Name)
}

// liveKeys returns the state key of every config in scope.
func (c *Controller) liveKeys() map[string]bool {
	live := map[string]bool{}
	for kind, inf := range c.configs {
		for _, obj := range inf.GetStore().List() {
			r := obj.(*configRecord)
			if c.namespaceAllowed(r.Namespace) {
				live[c.stateKey(configRef{kind, r.Name}, r.Namespace)] = true
			}
		}
	}
	return live
}

func (c *Controller) observeStateWrite(shard string, err error) {
	result := metrics.ResultSuccess
	if err != nil {
		result = metrics.ResultFailure
	}
	c.metrics.StateWrites.WithLabelValues(shard, result).Inc()
}

// reportGauges refreshes the gauges that are cheaper to sample than to track.
func (c *Controller) reportGauges(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		for _, s := range c.state.Stats() {
			c.metrics.StateEntries.WithLabelValues(s.Name).Set(float64(s.Entries))
			c.metrics.StateBytes.WithLabelValues(s.Name).Set(float64(s.Bytes))
		}
		c.metrics.Pending.Set(float64(c.coalescer.Pending() + c.queue.Len()))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
