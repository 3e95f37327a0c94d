package reloader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/metrics"
)

// batch is what one workload sync must apply: the pending change of each config it waits on.
type batch map[string]pendingConfig

func (c *Controller) batchFor(workload string) batch {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := batch{}
	for key, p := range c.pending {
		if _, ok := p.waiting[workload]; ok {
			b[key] = pendingConfig{hash: p.hash, keys: p.keys, observed: p.observed}
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
	if tmpl == nil {
		c.finish(key, b)
		return nil
	}
	if c.cacheBehind(key, meta.GetResourceVersion()) {
		return errCacheBehind
	}
	changes, oldest := c.changesFor(meta, tmpl, b)
	ops, err := c.ops(k, meta, tmpl, changes)
	if err != nil {
		return err
	}
	if len(ops) == 0 {
		c.metrics.CountReload(k.name, metrics.ResultAlreadyCurrent, ns)
		c.finish(key, b)
		return nil
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encode patch of %s: %w", key, err)
	}
	if err := k.patch(ctx, ns, name, body); err != nil {
		c.metrics.CountReload(k.name, metrics.ResultFailure, ns)
		c.recorder.Eventf(obj.(runtime.Object), corev1.EventTypeWarning, "ReloadFailed", "Reload for %s failed: %v", describe(changes), err)
		return fmt.Errorf("patch %s %s/%s: %w", k.name, ns, name, err)
	}
	c.rememberPatch(key, meta.GetResourceVersion())
	c.reloaded(k, obj, changes, oldest)
	c.finish(key, b)
	return nil
}

// errCacheBehind asks for a retry: the cached workload does not show our own last patch yet.
var errCacheBehind = errors.New("the cache has not yet seen the last patch")

// rememberPatch notes the version a patch was computed from. Until the cache holds a newer
// version of the workload, its template predates our own write: deciding from it could add a
// variable twice or miss one to remove.
func (c *Controller) rememberPatch(workload, fromVersion string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.patchedFrom[workload] = fromVersion
}

func (c *Controller) cacheBehind(workload, cachedVersion string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	from, ok := c.patchedFrom[workload]
	if ok && from != cachedVersion {
		delete(c.patchedFrom, workload)
		return false
	}
	return ok
}

// changesFor turns the batch into the values this workload should hold: the config hash, or a
// hash of just the keys it reads, or "" for a deleted config. Configs it no longer depends on
// are left out.
func (c *Controller) changesFor(meta metav1.Object, tmpl *corev1.PodTemplateSpec, b batch) ([]change, time.Time) {
	pol := c.opts.Annotations.policyOf(meta.GetAnnotations(), tmpl.Annotations)
	uses := usesOf(&tmpl.Spec)
	oldest := c.opts.Clock.Now()
	var changes []change
	for _, key := range slices.Sorted(maps.Keys(b)) {
		p := b[key]
		kind, ns, name, _ := splitKey(key)
		ref := configRef{Kind: kind, Name: name}
		rec := c.lookup(ref, ns)
		matched := rec == nil || rec.Annotations[c.opts.Annotations.Match] == "true"
		ok, keys := pol.triggers(ref, uses[ref], matched)
		if !ok {
			continue
		}
		value := p.hash
		if keys != nil && value != "" {
			value = confighash.Subset(p.keys, keys)
		}
		changes = append(changes, change{ref: ref, value: value})
		oldest = minTime(oldest, p.observed)
	}
	return changes, oldest
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// ops picks the strategy: Argo's restartAt when the Rollout asks for it, else env vars or
// annotations.
func (c *Controller) ops(k *workloadKind, meta metav1.Object, tmpl *corev1.PodTemplateSpec, changes []change) ([]jsonOp, error) {
	if len(changes) == 0 {
		return nil, nil
	}
	now := c.opts.Clock.Now()
	switch {
	case k.canRestartAt && meta.GetAnnotations()[c.opts.Annotations.RolloutStrategy] == "restart":
		return restartOps(meta, changes, now), nil
	case c.opts.Strategy == StrategyAnnotations:
		return annotationOps(meta.GetNamespace(), tmpl, changes, now)
	}
	return envOps(tmpl, changes), nil
}

// reloaded records a successful patch: metrics, the audit Event, and a log line. A workload
// whose update strategy is OnDelete restarts nothing on a template change; that is said, not
// hidden.
func (c *Controller) reloaded(k *workloadKind, obj any, changes []change, oldest time.Time) {
	meta, _ := k.template(obj)
	c.metrics.ObserveReload(k.name, meta.GetNamespace(), oldest)
	c.recorder.Eventf(obj.(runtime.Object), corev1.EventTypeNormal, "Reloaded", "Reloaded for %s", describe(changes))
	c.log.Info("reloaded workload", "kind", k.name, "namespace", meta.GetNamespace(), "name", meta.GetName(), "configs", describe(changes))
	if k.onDelete(obj) {
		c.metrics.OnDeleteSkipped.WithLabelValues(k.name).Inc()
		c.recorder.Event(obj.(runtime.Object), corev1.EventTypeWarning, "ReloadNeedsPodDeletion",
			"The pod template was updated, but the OnDelete update strategy restarts no pod: delete the pods to load the new config")
		c.log.Warn("template updated but OnDelete strategy restarts no pod", "kind", k.name, "namespace", meta.GetNamespace(), "name", meta.GetName())
	}
}

// describe names the configs of a reload with their short hashes, in a stable order.
func describe(changes []change) string {
	parts := make([]string, 0, len(changes))
	for _, ch := range changes {
		v := short(ch.value)
		if v == "" {
			v = deletedMarker
		}
		parts = append(parts, fmt.Sprintf("%s/%s (%s)", ch.ref.Kind, ch.ref.Name, v))
	}
	return strings.Join(parts, ", ")
}

// finish marks the workload done for every config in the batch whose pending change is still the
// one applied, and writes the state of configs with no dependent left waiting.
func (c *Controller) finish(workload string, b batch) {
	for key, applied := range b {
		c.mu.Lock()
		if p, ok := c.pending[key]; ok && p.hash == applied.hash {
			delete(p.waiting, workload)
		}
		c.mu.Unlock()
		c.completeIfDone(key)
	}
}
