package reloader

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// namespaceAllowed applies --namespaces-to-ignore and --namespace-selector.
func (c *Controller) namespaceAllowed(ns string) bool {
	if slices.Contains(c.opts.NamespacesToIgnore, ns) {
		return false
	}
	if c.namespaces == nil {
		return true
	}
	obj, exists, err := c.namespaces.GetStore().GetByKey(ns)
	if err != nil || !exists {
		return false
	}
	return c.opts.NamespaceSelector.Matches(labels.Set(obj.(*corev1.Namespace).Labels))
}

// namespaceRelabelled re-syncs the configs of a namespace that just entered the selection, so
// their hashes are recorded.
func (c *Controller) namespaceRelabelled(old, obj any) {
	was := c.opts.NamespaceSelector.Matches(labels.Set(old.(*corev1.Namespace).Labels))
	ns := obj.(*corev1.Namespace)
	if was || !c.namespaceAllowed(ns.Name) {
		return
	}
	for kind, inf := range c.configs {
		objs, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, ns.Name)
		if err != nil {
			continue
		}
		for _, o := range objs {
			c.enqueue(kind, o)
		}
	}
}

// workloadSeen reports malformed annotations once, and queues the configs the workload reads by
// single keys so their data-key state entries exist before the next change.
func (c *Controller) workloadSeen(k *workloadKind, obj any) {
	meta, tmpl := k.template(obj)
	if tmpl == nil || !c.namespaceAllowed(meta.GetNamespace()) {
		return
	}
	pol := c.opts.Annotations.policyOf(meta.GetAnnotations(), tmpl.Annotations)
	problems := pol.problems
	if c.ready.Load() { // before the caches sync, every config would look missing
		problems = append(problems, c.missingNamed(pol, meta.GetNamespace())...)
	}
	c.reportProblems(k, obj, problems)
	for r, u := range usesOf(&tmpl.Spec) {
		if len(u.keys) > 0 {
			if _, ok := c.configs[r.Kind]; ok {
				c.queue.Add(configKey(r, meta.GetNamespace()))
			}
		}
	}
}

// missingNamed reports the configs a workload's reload annotations name that do not exist: a
// typo there would otherwise mean a workload that silently never reloads.
func (c *Controller) missingNamed(pol policy, ns string) []string {
	refs := slices.SortedFunc(maps.Keys(pol.named), func(x, y configRef) int {
		return strings.Compare(x.Kind+"/"+x.Name, y.Kind+"/"+y.Name)
	})
	var out []string
	for _, r := range refs {
		if _, watched := c.configs[r.Kind]; watched && c.lookup(r, ns) == nil {
			msg := fmt.Sprintf("%s %q named in a reload annotation does not exist", r.Kind, r.Name)
			if c.opts.ResourceLabelSelector != "" {
				msg += " or does not match --resource-label-selector"
			}
			out = append(out, msg)
		}
	}
	return out
}

// checkAllWorkloads runs workloadSeen over every cached workload once the caches have synced,
// for the checks that need them.
func (c *Controller) checkAllWorkloads() {
	for _, k := range c.kinds {
		for _, obj := range k.informer.GetStore().List() {
			c.workloadSeen(k, obj)
		}
	}
}

// reportProblems emits one Warning Event and log line per distinct set of problems of a workload.
func (c *Controller) reportProblems(k *workloadKind, obj any, problems []string) {
	meta, _ := k.template(obj)
	uid, text := string(meta.GetUID()), strings.Join(problems, "; ")
	c.mu.Lock()
	seen := c.reported[uid] == text
	c.reported[uid] = text
	if text == "" {
		delete(c.reported, uid)
	}
	c.mu.Unlock()
	if seen || text == "" {
		return
	}
	c.log.Warn("malformed reload annotation", "kind", k.name, "namespace", meta.GetNamespace(), "name", meta.GetName(), "problems", text)
	c.recorder.Event(obj.(runtime.Object), corev1.EventTypeWarning, "InvalidAnnotation", text)
}

func (c *Controller) workloadGone(k *workloadKind, obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if meta, _ := k.template(obj); meta != nil {
		c.mu.Lock()
		delete(c.reported, string(meta.GetUID()))
		delete(c.patchedFrom, k.name+"/"+meta.GetNamespace()+"/"+meta.GetName())
		c.mu.Unlock()
	}
	c.enqueue(k.name, obj)
}
