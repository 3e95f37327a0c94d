// Package reloader wires the pieces together: informers over ConfigMaps, Secrets and workloads,
// the state store, the coalescer, and one rate-limited workqueue whose sync function decides
// and performs restarts.
//
// A queue key is "<Kind>/<namespace>/<name>". A config key (ConfigMap, Secret) is synced by
// comparing the config's hash with its state entry; on a difference every dependent workload gets
// a pending reload and a coalescing window. When a window closes the workload key is queued, and
// its sync patches the env var of every pending config in one patch. A config's state entry is
// written only after all its dependents are patched, so a crash at any point leaves the state
// behind the workloads, and the next start re-derives exactly the reloads still missing; the patch
// is skipped where the env var already holds the hash, so none happens twice.
package reloader

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"reloader/coalesce"
	"reloader/metrics"
	"reloader/state"
)

const byConfigIndex = "byConfig"

// Options configures a Controller.
type Options struct {
	// Namespace to watch; empty watches all namespaces.
	Namespace string
	// StateNamespace and StateName locate the state ConfigMaps.
	StateNamespace string
	StateName      string
	// CoalescePeriod is the debounce window; zero acts at once. CoalesceMaxWait caps a window.
	CoalescePeriod  time.Duration
	CoalesceMaxWait time.Duration
	// ShutdownGrace bounds the flush of pending reloads when the context ends. Zero abandons
	// them, as a crash would; they are redone on the next start.
	ShutdownGrace time.Duration
	Annotations   Annotations
	Workers       int
	Clock         coalesce.Clock
	Log           *slog.Logger
	Metrics       *metrics.Metrics
}

// Controller restarts workloads when the configs they depend on change.
type Controller struct {
	opts      Options
	client    kubernetes.Interface
	log       *slog.Logger
	metrics   *metrics.Metrics
	factory   informers.SharedInformerFactory
	configs   map[string]cache.SharedIndexInformer
	kinds     map[string]*workloadKind
	state     *state.Store
	queue     workqueue.TypedRateLimitingInterface[string]
	coalescer *coalesce.Coalescer
	events    record.EventBroadcaster
	recorder  record.EventRecorder

	ready atomic.Bool
	busy  atomic.Int32 // workers inside a sync

	mu      sync.Mutex
	pending map[string]*pendingConfig // by config key
}

// Ready reports whether the caches have synced and the controller is processing changes.
func (c *Controller) Ready() bool { return c.ready.Load() }

// pendingConfig is a config change not yet written to state: the new hash, when it was first
// seen, and the dependents still to be patched.
type pendingConfig struct {
	hash     string
	observed time.Time
	waiting  map[string]struct{}
}

// New builds a Controller; Run starts it.
func New(client kubernetes.Interface, opts Options) (*Controller, error) {
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Clock == nil {
		opts.Clock = coalesce.RealClock{}
	}
	c := &Controller{
		opts:    opts,
		client:  client,
		log:     opts.Log,
		metrics: opts.Metrics,
		state:   state.New(client.CoreV1(), opts.StateNamespace, opts.StateName, opts.Log),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "reloader"}),
		pending: map[string]*pendingConfig{},
	}
	c.state.OnWrite = c.observeStateWrite
	c.events = record.NewBroadcaster()
	c.recorder = c.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "reloader"})
	c.coalescer = coalesce.New(opts.CoalescePeriod, opts.CoalesceMaxWait, opts.Clock, c.queue.Add)
	c.factory = informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(opts.Namespace), informers.WithTransform(c.transform))
	c.configs = map[string]cache.SharedIndexInformer{
		kindConfigMap: c.factory.Core().V1().ConfigMaps().Informer(),
		kindSecret:    c.factory.Core().V1().Secrets().Informer(),
	}
	c.kinds = map[string]*workloadKind{}
	for _, k := range builtinKinds(c.factory, client) {
		c.kinds[k.name] = k
	}
	if err := c.addHandlers(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) addHandlers() error {
	for kind, inf := range c.configs {
		enqueue := func(obj any) {
			if kind == kindConfigMap && c.isStateObject(obj) {
				return
			}
			c.enqueue(kind, obj)
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    enqueue,
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
		// A deleted workload must stop holding back the state of its configs.
		if _, err := k.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			DeleteFunc: func(obj any) { c.enqueue(k.name, obj) },
		}); err != nil {
			return fmt.Errorf("watch %ss: %w", k.name, err)
		}
	}
	return nil
}

func (c *Controller) isStateObject(obj any) bool {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	r, ok := obj.(*configRecord)
	return ok && c.state.IsShard(r.Namespace, r.Name)
}

func (c *Controller) enqueue(kind string, obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(kind + "/" + key)
}

// indexByConfig indexes a workload under the key of every config it depends on.
func (c *Controller) indexByConfig(k *workloadKind) cache.IndexFunc {
	return func(obj any) ([]string, error) {
		meta, tmpl := k.template(obj)
		refs := c.opts.Annotations.dependencies(meta.GetAnnotations(), tmpl)
		keys := make([]string, len(refs))
		for i, r := range refs {
			keys[i] = r.Kind + "/" + meta.GetNamespace() + "/" + r.Name
		}
		return keys, nil
	}
}

// Run loads the state, syncs the caches, prunes the state of deleted configs and processes the
// queue until ctx ends; then it flushes pending reloads within the shutdown grace.
func (c *Controller) Run(ctx context.Context) error {
	first, err := c.state.Load(ctx)
	if err != nil {
		return err
	}
	if first {
		c.log.Info("no state found: recording the current hash of every config without restarting anything")
	}
	c.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.client.CoreV1().Events("")})
	defer c.events.Shutdown()
	c.factory.Start(ctx.Done())
	for kind, ok := range c.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("sync %v cache: %w", kind, ctx.Err())
		}
	}
	live := c.liveKeys()
	if n := c.state.Prune(func(k string) bool { return live[k] }); n > 0 {
		c.log.Info("pruned state entries of deleted configs", "entries", n)
	}
	c.log.Info("caches synced; reloading", "namespace", c.opts.Namespace, "coalesce_period", c.opts.CoalescePeriod)

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
	c.ready.Store(true)

	<-ctx.Done()
	c.shutdown(&workers, stopWork)
	stopState()
	<-stateDone
	if c.opts.ShutdownGrace == 0 {
		return nil
	}
	return c.state.Flush(context.Background())
}

// shutdown closes every coalescing window and lets the workers drain the queue for at most the
// grace period.
func (c *Controller) shutdown(workers *sync.WaitGroup, stopWork context.CancelFunc) {
	if c.opts.ShutdownGrace == 0 {
		c.queue.ShutDown()
		stopWork()
		workers.Wait()
		return
	}
	c.coalescer.Flush()
	c.log.Info("shutting down: flushing pending reloads", "queued", c.queue.Len(), "grace", c.opts.ShutdownGrace)
	if !c.drained(c.opts.ShutdownGrace) {
		c.log.Warn("shutdown grace elapsed; remaining reloads are redone on the next start", "queued", c.queue.Len())
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
		c.log.Error("sync failed; will retry", "key", key, "err", err, "retries", c.queue.NumRequeues(key))
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
		return c.syncConfig(key, kind, ns, name, inf)
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
func (c *Controller) stateKey(kind, ns, name string) string {
	if c.opts.Namespace != "" {
		ns = ""
	}
	return state.Key(kind, ns, name)
}

// liveKeys returns the state key of every config in the cache.
func (c *Controller) liveKeys() map[string]bool {
	live := map[string]bool{}
	for kind, inf := range c.configs {
		for _, obj := range inf.GetStore().List() {
			r := obj.(*configRecord)
			live[c.stateKey(kind, r.Namespace, r.Name)] = true
		}
	}
	return live
}

// syncConfig compares a config with its state entry and opens reloads for its dependents.
func (c *Controller) syncConfig(key, kind, ns, name string, inf cache.SharedIndexInformer) error {
	skey := c.stateKey(kind, ns, name)
	obj, exists, err := inf.GetIndexer().GetByKey(ns + "/" + name)
	if err != nil {
		return fmt.Errorf("get %s from cache: %w", key, err)
	}
	if !exists {
		c.cancelPending(key)
		c.state.Delete(skey)
		return nil
	}
	rec := obj.(*configRecord)
	if rec.Annotations[c.opts.Annotations.Ignore] == "true" {
		return nil
	}
	stored, ok := c.state.Get(skey)
	switch {
	case !ok:
		c.state.Set(skey, rec.Hash)
		return nil
	case stored == rec.Hash:
		c.cancelPending(key)
		return nil
	}
	dependents, err := c.dependents(key)
	if err != nil {
		return err
	}
	if !c.openPending(key, rec.Hash, dependents) {
		return nil
	}
	c.metrics.Changes.WithLabelValues(kind).Inc()
	c.log.Info("config changed", "kind", kind, "namespace", ns, "name", name, "hash", short(rec.Hash), "dependents", len(dependents))
	if len(dependents) == 0 {
		c.completeIfDone(key)
	}
	for _, w := range dependents {
		if c.coalescer.Add(w) {
			c.metrics.Coalesced.Inc()
		}
	}
	return nil
}

func short(hash string) string { return hash[:min(len(hash), 8)] }

// dependents returns the queue keys of the workloads that depend on a config.
func (c *Controller) dependents(configKey string) ([]string, error) {
	var out []string
	for _, k := range c.kinds {
		objs, err := k.informer.GetIndexer().ByIndex(byConfigIndex, configKey)
		if err != nil {
			return nil, fmt.Errorf("look up %ss using %s: %w", k.name, configKey, err)
		}
		for _, o := range objs {
			m, _ := k.template(o)
			out = append(out, k.name+"/"+m.GetNamespace()+"/"+m.GetName())
		}
	}
	return out, nil
}

// openPending records a change of a config to hash, waiting on dependents. It reports false when
// the same change is already pending, so a repeated event opens no second window.
func (c *Controller) openPending(key, hash string, dependents []string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.pending[key]; ok && p.hash == hash {
		return false
	}
	p := &pendingConfig{hash: hash, observed: c.opts.Clock.Now(), waiting: map[string]struct{}{}}
	for _, w := range dependents {
		p.waiting[w] = struct{}{}
	}
	c.pending[key] = p
	return true
}

func (c *Controller) cancelPending(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, key)
}

// batch is what one workload sync must apply: the pending hash of each config it waits on.
type batch map[string]*pendingConfig

func (c *Controller) batchFor(workload string) batch {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := batch{}
	for key, p := range c.pending {
		if _, ok := p.waiting[workload]; ok {
			b[key] = &pendingConfig{hash: p.hash, observed: p.observed}
		}
	}
	return b
}

// syncWorkload applies every pending config change of one workload in a single patch.
func (c *Controller) syncWorkload(ctx context.Context, key string, k *workloadKind, ns, name string) error {
	b := c.batchFor(key)
	obj, exists, err := k.informer.GetIndexer().GetByKey(ns + "/" + name)
	if err != nil {
		return fmt.Errorf("get %s from cache: %w", key, err)
	}
	if !exists || len(b) == 0 {
		c.finish(key, b)
		return nil
	}
	meta, tmpl := k.template(obj)
	hashes, oldest := c.applicable(meta, tmpl, b)
	body, err := envPatch(&tmpl.Spec, hashes)
	if err != nil {
		return err
	}
	if body == nil {
		c.metrics.Reloads.WithLabelValues(k.name, metrics.ResultAlreadyCurrent).Inc()
		c.finish(key, b)
		return nil
	}
	if err := k.patch(ctx, ns, name, body); err != nil {
		c.metrics.Reloads.WithLabelValues(k.name, metrics.ResultFailure).Inc()
		c.recorder.Eventf(obj.(runtime.Object), corev1.EventTypeWarning, "ReloadFailed", "Reload for %s failed: %v", describe(hashes), err)
		return fmt.Errorf("patch %s %s/%s: %w", k.name, ns, name, err)
	}
	c.metrics.ObserveReload(k.name, oldest)
	c.recorder.Eventf(obj.(runtime.Object), corev1.EventTypeNormal, "Reloaded", "Reloaded for %s", describe(hashes))
	c.log.Info("reloaded workload", "kind", k.name, "namespace", ns, "name", name, "configs", describe(hashes))
	c.finish(key, b)
	return nil
}

// applicable keeps the batch entries for configs the workload still depends on, keyed by
// reference, and returns the earliest observation time among them.
func (c *Controller) applicable(meta metav1.Object, tmpl *corev1.PodTemplateSpec, b batch) (map[configRef]string, time.Time) {
	hashes := map[configRef]string{}
	oldest := c.opts.Clock.Now()
	for _, r := range c.opts.Annotations.dependencies(meta.GetAnnotations(), tmpl) {
		if p, ok := b[r.Kind+"/"+meta.GetNamespace()+"/"+r.Name]; ok {
			hashes[r] = p.hash
			if p.observed.Before(oldest) {
				oldest = p.observed
			}
		}
	}
	return hashes, oldest
}

// describe names the configs of a reload with their short hashes, in a stable order.
func describe(hashes map[configRef]string) string {
	parts := make([]string, 0, len(hashes))
	for r, h := range hashes {
		parts = append(parts, fmt.Sprintf("%s/%s (%s)", r.Kind, r.Name, short(h)))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// finish marks the workload done for every config in the batch whose pending hash is still the
// one applied, and writes the state of configs with no dependent left waiting.
func (c *Controller) finish(workload string, b batch) {
	for key, applied := range b {
		c.mu.Lock()
		p, ok := c.pending[key]
		if ok && p.hash == applied.hash {
			delete(p.waiting, workload)
		}
		c.mu.Unlock()
		c.completeIfDone(key)
	}
}

// completeIfDone writes a config's new hash to state once no dependent waits on it.
func (c *Controller) completeIfDone(key string) {
	c.mu.Lock()
	p, ok := c.pending[key]
	if !ok || len(p.waiting) > 0 {
		c.mu.Unlock()
		return
	}
	delete(c.pending, key)
	c.mu.Unlock()
	kind, ns, name, err := splitKey(key)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.state.Set(c.stateKey(kind, ns, name), p.hash)
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
