package reloader

import (
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/state"
)

// pendingConfig is a config change not yet written to state: the new hash ("" for a deleted
// config), its per-key sums, when it was first seen, and the dependents still to be patched.
type pendingConfig struct {
	hash     string
	keys     []confighash.KeySum
	observed time.Time
	waiting  map[string]struct{}
}

// dependent is a workload a config change reloads; keys, if set, are the only keys it reads.
type dependent struct {
	workload string
	keys     []string
}

// syncConfig compares a config with its state entry and opens reloads for the dependents the
// change concerns.
func (c *Controller) syncConfig(key string, ref configRef, ns string, inf cache.SharedIndexInformer) error {
	initial := c.takeInitial(key)
	if !c.namespaceAllowed(ns) {
		return nil
	}
	skey := c.stateKey(ref, ns)
	obj, exists, err := inf.GetIndexer().GetByKey(ns + "/" + ref.Name)
	if err != nil {
		return fmt.Errorf("get %s from cache: %w", key, err)
	}
	if !exists {
		return c.configGone(key, ref, ns, skey)
	}
	rec := obj.(*configRecord)
	if rec.Annotations[c.opts.Annotations.Ignore] == "true" {
		// Still recorded, so that removing the annotation later does not replay the changes
		// made while it was set.
		c.cancelPending(key)
		c.record(skey, rec.Hash, rec.Keys, nil)
		return nil
	}
	deps, err := c.dependents(key, ref, ns, rec)
	if err != nil {
		return err
	}
	stored, known := c.state.Get(skey)
	var reload []dependent
	switch {
	case !known && c.opts.ReloadOnCreate && !initial:
		reload = deps
	case !known:
		reload = c.stakaterLagging(deps, ref, rec)
	case stored != rec.Hash:
		reload = c.concerned(deps, skey, rec)
	}
	if len(reload) == 0 {
		c.cancelPending(key)
		c.record(skey, rec.Hash, rec.Keys, deps)
		return nil
	}
	if !c.openPending(key, rec.Hash, rec.Keys, reload) {
		return nil
	}
	c.metrics.Changes.WithLabelValues(ref.Kind).Inc()
	c.log.Info("config changed", "kind", ref.Kind, "namespace", ns, "name", ref.Name, "hash", short(rec.Hash), "dependents", len(reload))
	c.addToWindows(reload)
	return nil
}

// configGone handles a deleted config: its state goes, after its dependents drop its value when
// --reload-on-delete asks for that.
func (c *Controller) configGone(key string, ref configRef, ns, skey string) error {
	if _, known := c.state.Get(skey); !known || !c.opts.ReloadOnDelete {
		c.cancelPending(key)
		c.state.Delete(skey)
		return nil
	}
	deps, err := c.dependents(key, ref, ns, nil)
	if err != nil {
		return err
	}
	if len(deps) == 0 {
		c.cancelPending(key)
		c.state.Delete(skey)
		return nil
	}
	if !c.openPending(key, "", nil, deps) {
		return nil
	}
	c.log.Info("config deleted", "kind", ref.Kind, "namespace", ns, "name", ref.Name, "dependents", len(deps))
	c.addToWindows(deps)
	return nil
}

func (c *Controller) addToWindows(deps []dependent) {
	for _, d := range deps {
		if c.coalescer.Add(d.workload) {
			c.metrics.Coalesced.Inc()
		}
	}
}

func short(hash string) string { return hash[:min(len(hash), 8)] }

// dependents returns the workloads a change of the config reloads, from the index. rec is nil
// for a deleted config, whose match annotation is no longer known.
func (c *Controller) dependents(key string, ref configRef, ns string, rec *configRecord) ([]dependent, error) {
	matched := rec != nil && rec.Annotations[c.opts.Annotations.Match] == "true"
	var out []dependent
	for _, k := range c.kinds {
		objs, err := k.informer.GetIndexer().ByIndex(byConfigIndex, key)
		if err != nil {
			return nil, fmt.Errorf("look up %ss using %s: %w", k.name, key, err)
		}
		for _, o := range objs {
			meta, tmpl := k.template(o)
			if tmpl == nil {
				continue
			}
			pol := c.opts.Annotations.policyOf(meta.GetAnnotations(), tmpl.Annotations)
			if ok, keys := pol.triggers(ref, usesOf(&tmpl.Spec)[ref], matched); ok {
				out = append(out, dependent{workload: k.name + "/" + ns + "/" + meta.GetName(), keys: keys})
			}
		}
	}
	return out, nil
}

// concerned keeps the dependents a content change concerns: all that read the whole config, and
// those reading single keys whose stored per-key hash differs. A key without a stored hash counts
// as changed, so a reload is never lost.
func (c *Controller) concerned(deps []dependent, skey string, rec *configRecord) []dependent {
	var out []dependent
	for _, d := range deps {
		if d.keys == nil || c.keysChanged(skey, rec.Keys, d.keys) {
			out = append(out, d)
		}
	}
	return out
}

func (c *Controller) keysChanged(skey string, sums []confighash.KeySum, keys []string) bool {
	for _, k := range keys {
		stored, ok := c.state.Get(state.KeyOf(skey, k))
		if !ok || stored != keySum(sums, k) {
			return true
		}
	}
	return false
}

// keySum is the hex sum of one key, or "" if the config lacks it.
func keySum(sums []confighash.KeySum, key string) string {
	for _, s := range sums {
		if s.Key == key {
			return hex.EncodeToString(s.Sum[:])
		}
	}
	return ""
}

// record writes a config's hash and the per-key hashes its single-key dependents need.
func (c *Controller) record(skey, hash string, sums []confighash.KeySum, deps []dependent) {
	c.state.Set(skey, hash)
	for _, d := range deps {
		for _, k := range d.keys {
			if v := keySum(sums, k); v != "" {
				c.state.Set(state.KeyOf(skey, k), v)
			} else {
				c.state.DeleteEntry(state.KeyOf(skey, k))
			}
		}
	}
}

var notEnvChar = regexp.MustCompile(`[^A-Za-z0-9]`)

// stakaterVar is the env var stakater Reloader keeps a config's hash in.
func stakaterVar(r configRef) string {
	return "STAKATER_" + strings.ToUpper(notEnvChar.ReplaceAllString(r.Name, "_")) + "_" + strings.ToUpper(r.Kind)
}

// stakaterLagging returns, for a config the state does not know yet, the dependents whose
// stakater Reloader variable holds a hash other than the config's current one: stakater missed
// that change, so it is still to be rolled out. A dependent without the variable, or with the
// current hash, needs nothing, which is what lets users switch from stakater without a restart
// wave.
func (c *Controller) stakaterLagging(deps []dependent, ref configRef, rec *configRecord) []dependent {
	var out []dependent
	for _, d := range deps {
		if v, ok := c.workloadEnv(d.workload, stakaterVar(ref)); ok && v != rec.Stakater {
			out = append(out, d)
		}
	}
	return out
}

// workloadEnv looks a variable up in any container of a cached workload.
func (c *Controller) workloadEnv(workload, name string) (string, bool) {
	kind, ns, n, err := splitKey(workload)
	if err != nil {
		return "", false
	}
	obj, exists, err := c.kinds[kind].informer.GetIndexer().GetByKey(ns + "/" + n)
	if err != nil || !exists {
		return "", false
	}
	_, tmpl := c.kinds[kind].template(obj)
	for _, ctr := range allContainers(&tmpl.Spec) {
		for _, e := range ctr.Env {
			if e.Name == name {
				return e.Value, true
			}
		}
	}
	return "", false
}

// openPending records a change of a config to hash, waiting on deps. It reports false when the
// same change is already pending, so a repeated event opens no second window.
func (c *Controller) openPending(key, hash string, sums []confighash.KeySum, deps []dependent) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.pending[key]; ok && p.hash == hash {
		return false
	}
	p := &pendingConfig{hash: hash, keys: sums, observed: c.opts.Clock.Now(), waiting: map[string]struct{}{}}
	for _, d := range deps {
		p.waiting[d.workload] = struct{}{}
	}
	c.pending[key] = p
	return true
}

func (c *Controller) cancelPending(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, key)
}

// completeIfDone writes a config's new state once no dependent waits on it.
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
		return
	}
	ref := configRef{Kind: kind, Name: name}
	skey := c.stateKey(ref, ns)
	if p.hash == "" {
		c.state.Delete(skey)
		return
	}
	// The dependents only name the keys whose per-key state to write; an index error leaves
	// those out, which costs at worst one extra reload later.
	deps, _ := c.dependents(key, ref, ns, c.lookup(ref, ns))
	c.record(skey, p.hash, p.keys, deps)
}

func (c *Controller) lookup(ref configRef, ns string) *configRecord {
	inf, ok := c.configs[ref.Kind]
	if !ok {
		return nil
	}
	obj, exists, err := inf.GetIndexer().GetByKey(ns + "/" + ref.Name)
	if err != nil || !exists {
		return nil
	}
	return obj.(*configRecord)
}
