package reloader

import (
	"context"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/reloader/reloader/reloader/safe"
	"github.com/reloader/reloader/reloader/workload"
)

// IsStale exposes workload.IsStale to the tests, which check it against the real API server's answers.
var IsStale = workload.IsStale

// ErrStale exposes workload.ErrStale: a patch computed from a version that is no longer current.
var ErrStale = workload.ErrStale

// JudgeRolloutAsCached judges the followed rollout of Deployment d as the rollout sync does when
// the cache holds d: a test's stand-in for a cache that has not shown a later change yet.
func (c *Controller) JudgeRolloutAsCached(ctx context.Context, d *appsv1.Deployment) error {
	kind := c.caches.kinds["Deployment"]
	obj, err := c.records.Transform(d.DeepCopy())
	if err != nil {
		return err
	}
	w, ok := c.rule.View(kind, workload.Unpacked(obj))
	if !ok {
		return nil
	}
	return c.tracker.Sync(ctx, safe.RolloutKey(w.Key), w)
}

// Recorded is the content the state holds in memory under a config's entry key ("" for none or
// a tombstone). A change every dependent's marker holds is written with the state's next write
// only (configs.Records.RolledOut), so the ConfigMap may still show the content before.
func (c *Controller) Recorded(key string) string {
	e, ok := c.state.Configs().Get(key)
	if !ok || e.Deleted {
		return ""
	}
	return e.Hash
}

// SetStateWriteWait bounds the start-up hook's wait for the state's first write to d, in place
// of 30 s.
func SetStateWriteWait(o *Options, d time.Duration) { o.stateWriteWait = d }

// SetStateBudget makes each state shard hold bytes, in place of state.ShardBudget, so that a few
// configs fill the state.
func SetStateBudget(o *Options, bytes int) { o.stateBudget = bytes }

// SetRefusedRetryMax caps the spacing of a refused patch's retries at d, in place of 30 s, so
// that a refusal lifted after many seconds is retried within d.
func SetRefusedRetryMax(o *Options, d time.Duration) { o.refusedRetryMax = d }

// CheckShared reports a shared decoded workload that a reader wrote (workload.Kind.CheckShared).
func (c *Controller) CheckShared() error {
	for _, kind := range c.caches.kinds {
		if err := kind.CheckShared(); err != nil {
			return err
		}
	}
	return nil
}

// CachedVersion returns the resource version of object ns/name of resource (plural, lower case)
// in the controller's cache, whether the cache holds it, and whether the controller caches that
// resource in that namespace at all.
func (c *Controller) CachedVersion(resource, ns, name string) (rv string, found, watched bool) {
	if listed := c.opts.listNamespace(); listed != "" && ns != listed {
		return "", false, false
	}
	var store cache.Store
	for kind, inf := range c.caches.configs {
		if strings.ToLower(kind)+"s" == resource {
			store = inf.GetStore()
		}
	}
	for _, k := range c.caches.kinds {
		if strings.ToLower(k.Name)+"s" == resource {
			store = k.Informer.GetStore()
		}
	}
	if store == nil {
		return "", false, false
	}
	obj, found, err := store.GetByKey(ns + "/" + name)
	if err != nil || !found {
		return "", false, true
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", false, true
	}
	return m.GetResourceVersion(), true, true
}

// Unobserved reports whether a Deployment, StatefulSet or DaemonSet in the controller's cache has
// a spec that its own controller (kube-controller-manager) has yet to observe, as far as the
// cache shows: the status update that follows a restart, which a followed rollout acts on, is
// still to come.
func (c *Controller) Unobserved() bool {
	for _, k := range c.caches.kinds {
		for obj := range k.All() {
			var observed, generation int64
			switch o := obj.(type) {
			case *appsv1.Deployment:
				observed, generation = o.Status.ObservedGeneration, o.Generation
			case *appsv1.StatefulSet:
				observed, generation = o.Status.ObservedGeneration, o.Generation
			case *appsv1.DaemonSet:
				observed, generation = o.Status.ObservedGeneration, o.Generation
			}
			if observed < generation {
				return true
			}
		}
	}
	return false
}

// StakaterNoted reports whether the start-up's note that stakater's variables were compared is
// done: a state write that follows the start-up's syncs by the drain's quiet.
func (c *Controller) StakaterNoted() bool {
	select {
	case <-c.noted:
		return true
	default:
		return false
	}
}
