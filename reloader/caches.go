package reloader

import (
	"fmt"
	"iter"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/workload"
)

// caches is what the informers hold, read only: the configs by key, the workloads by the configs
// they may reload on, and which namespaces are in the selection. Nothing here writes or queues.
type caches struct {
	annotations policy.Annotations
	configs     map[string]cache.SharedIndexInformer // by config kind
	kinds       map[string]*workload.Kind            // by workload kind
	namespaces  cache.SharedIndexInformer            // only with a NamespaceSelector
	// selector and ignored: --namespace-selector and --namespaces-to-ignore.
	selector labels.Selector
	ignored  []string
	// labelSelector and ignoredSecretTypes (--resource-label-selector, --ignore-secret-types)
	// are named where a config looks missing.
	labelSelector      string
	ignoredSecretTypes []string
}

// Watched reports whether configs of this kind are watched (--resources-to-ignore).
func (c *caches) Watched(kind string) bool { _, ok := c.configs[kind]; return ok }

// lookup returns the cached record of a config, or nil if it does not exist (or is not watched).
func (c *caches) lookup(k workload.Key) *configs.Record {
	inf, ok := c.configs[k.Kind]
	if !ok {
		return nil
	}
	obj, exists, err := inf.GetIndexer().GetByKey(k.CacheKey())
	if err != nil || !exists {
		return nil
	}
	return obj.(*configs.Record)
}

// matchedByPattern lists the existing configs in namespace ns that the policy's patterns match.
func (c *caches) matchedByPattern(pol policy.Policy, ns string) []policy.ConfigRef {
	var out []policy.ConfigRef
	for _, kind := range pol.PatternKinds() {
		inf, watched := c.configs[kind]
		if !watched {
			continue
		}
		for _, o := range inNamespace(inf, ns) {
			r := policy.ConfigRef{Kind: kind, Name: o.(*configs.Record).Name}
			if pol.NamedBy(r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// indexKeys are the keys a workload is indexed under (workload.Dependents): every config whose change
// may reload it, and a pattern key for each config kind its reload annotations hold patterns
// for. obj is decoded.
func (c *caches) indexKeys(k *workload.Kind, obj any) []workload.Key {
	w, ok := c.view(k, obj)
	if !ok {
		return nil
	}
	refs := w.Policy.Candidates(w.Uses)
	kinds := w.Policy.PatternKinds()
	keys := make([]workload.Key, 0, len(refs)+len(kinds))
	for _, r := range refs {
		keys = append(keys, workload.ConfigKey(r, w.Key.Namespace))
	}
	for _, kind := range kinds {
		keys = append(keys, patternKey(kind, w.Key.Namespace))
	}
	return keys
}

// configsOf passes to add the key of every watched config the workload may reload on.
func (c *caches) configsOf(k *workload.Kind, obj any, add func(workload.Key)) {
	for _, ck := range c.indexKeys(k, obj) {
		if c.Watched(ck.Kind) && ck.Name != "" {
			add(ck)
		}
	}
	if w, ok := c.view(k, obj); ok {
		for _, r := range c.matchedByPattern(w.Policy, w.Key.Namespace) {
			add(workload.ConfigKey(r, w.Key.Namespace))
		}
	}
}

// view reads a workload once, in any namespace: its metadata, template, reload policy and the
// configs its pod spec uses, without the rule's Target; false when it has no pod template. It is
// made once per decoded version (workload.Kind.ViewOf) and shared: never to be written.
func (c *caches) view(kind *workload.Kind, obj any) (workload.View, bool) {
	return kind.ViewOf(c, obj, func() (workload.View, bool) { return workload.Read(kind, obj, c.annotations) })
}

// workloadKeys yields the key of every cached workload, of every kind (names only: nothing is
// decoded).
func (c *caches) workloadKeys() iter.Seq[workload.Key] {
	return func(yield func(workload.Key) bool) {
		for _, kind := range c.kinds {
			for _, obj := range kind.Informer.GetStore().List() {
				if !yield(objectKey(kind.Name, obj)) {
					return
				}
			}
		}
	}
}

func objectKey(kind string, obj any) workload.Key {
	obj = deletedObject(obj)
	switch r := obj.(type) {
	case *configs.Record:
		return workload.Key{Kind: kind, Namespace: r.Namespace(), Name: r.Name}
	case *workload.Packed:
		return workload.Key{Kind: kind, Namespace: r.Namespace, Name: r.Name}
	}
	m := obj.(metav1.Object)
	return workload.Key{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName()}
}

// allowed applies --namespaces-to-ignore and --namespace-selector.
func (c *caches) allowed(ns string) bool {
	if slices.Contains(c.ignored, ns) {
		return false
	}
	if c.namespaces == nil {
		return true
	}
	obj, exists, err := c.namespaces.GetStore().GetByKey(ns)
	if err != nil || !exists {
		return false
	}
	return c.selector.Matches(labels.Set(obj.(*corev1.Namespace).Labels))
}

// missingNamed reports the configs a workload's reload annotations name that do not exist, and
// the items read as patterns that match no config: a typo there (or an upper-case name, which
// is read as a pattern and can match nothing) would otherwise mean a workload that silently
// never reloads.
func (c *caches) missingNamed(pol policy.Policy, ns string) []string {
	var out []string
	for _, r := range pol.Named() {
		if c.Watched(r.Kind) && c.lookup(workload.ConfigKey(r, ns)) == nil {
			out = append(out, fmt.Sprintf("%s %q named in a reload annotation does not exist%s", r.Kind, r.Name, c.unseenWhy(r.Kind)))
		}
	}
	matched := c.matchedByPattern(pol, ns)
	for _, p := range pol.Patterns() {
		if !c.Watched(p.Kind) || slices.ContainsFunc(matched, func(r policy.ConfigRef) bool { return p.Matches(r) }) {
			continue
		}
		if lower, ok := policy.CaseSlip(p.Item); ok {
			out = append(out, fmt.Sprintf("%q in a reload annotation is not a %s name: names are lower case, so it can match none (did you mean %q?)", p.Item, p.Kind, lower))
			continue
		}
		out = append(out, fmt.Sprintf("%q in a reload annotation is not a %s name, and as a pattern it matches no %s%s", p.Item, p.Kind, p.Kind, c.unseenWhy(p.Kind)))
	}
	return out
}

// unseenWhy names the flags that keep configs of a kind out of the caches, for missingNamed.
func (c *caches) unseenWhy(kind string) string {
	var why []string
	if c.labelSelector != "" {
		why = append(why, "does not match --resource-label-selector")
	}
	if kind == policy.KindSecret && len(c.ignoredSecretTypes) > 0 {
		why = append(why, "is of a type in --ignore-secret-types ("+strings.Join(c.ignoredSecretTypes, ",")+")")
	}
	if len(why) == 0 {
		return ""
	}
	return " or " + strings.Join(why, " or ")
}

// indexed returns the workloads of a kind indexed under the config, decoded: those naming or
// using it, and those whose reload annotations hold a pattern for its kind and namespace (each
// once).
func (c *caches) indexed(kind *workload.Kind, k workload.Key) []any {
	names := kind.ByConfig.Of(k)
	for _, n := range kind.ByConfig.Of(patternKey(k.Kind, k.Namespace)) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	objs := make([]any, 0, len(names))
	for _, n := range names {
		if o, ok, _ := kind.Cached(n); ok {
			objs = append(objs, o)
		}
	}
	return objs
}

// referenced reports whether any workload's index names the config, triggering or not, or one of
// its patterns matches it.
func (c *caches) referenced(k workload.Key) bool {
	r := policy.ConfigRef{Kind: k.Kind, Name: k.Name}
	for _, kind := range c.kinds {
		if kind.ByConfig.Any(k) {
			return true
		}
		for _, n := range kind.ByConfig.Of(patternKey(k.Kind, k.Namespace)) {
			o, ok, _ := kind.Cached(n)
			if !ok {
				continue
			}
			if w, ok := c.view(kind, o); ok && w.Policy.NamedBy(r) {
				return true
			}
		}
	}
	return false
}

// left reports whether a namespace's update takes it out of the selection.
func (c *caches) left(old, obj any) bool {
	was := c.selector.Matches(labels.Set(old.(*corev1.Namespace).Labels))
	return was && !c.allowed(obj.(*corev1.Namespace).Name)
}

// entered lists the configs and workloads of a namespace that just entered the selection, to
// be synced (nil: it did not enter). Configs the state has never seen are recorded then, and
// restart nothing.
func (c *caches) entered(old, obj any) []workload.Key {
	ns := obj.(*corev1.Namespace)
	if c.selector.Matches(labels.Set(old.(*corev1.Namespace).Labels)) || !c.allowed(ns.Name) {
		return nil
	}
	out := []workload.Key{} // not nil: the namespace entered
	for kind, inf := range c.configs {
		for _, o := range inNamespace(inf, ns.Name) {
			out = append(out, objectKey(kind, o))
		}
	}
	for _, k := range c.kinds {
		for _, o := range inNamespace(k.Informer, ns.Name) {
			out = append(out, objectKey(k.Name, o))
		}
	}
	return out
}

// inNamespace lists what inf holds in namespace ns. client-go's namespace index costs about 40
// bytes per object (docs/lab/benchmarks-sessions.md), and only patterns and
// --namespace-selector read it, so it is added on first use; adding it indexes what the cache
// holds, and later changes keep it.
func inNamespace(inf cache.SharedIndexInformer, ns string) []any {
	objs, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
	if err == nil {
		return objs
	}
	// A concurrent first use may have added it already: that conflict is harmless.
	_ = inf.AddIndexers(cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	objs, _ = inf.GetIndexer().ByIndex(cache.NamespaceIndex, ns) // an informer stopped answers nothing
	return objs
}

// version is the resourceVersion of workload w in its cache, if it is there.
func (c *caches) version(w workload.Key) (string, bool) {
	k := c.kinds[w.Kind]
	if k == nil {
		return "", false
	}
	obj, ok, err := k.Informer.GetStore().GetByKey(w.CacheKey())
	if err != nil || !ok {
		return "", false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", false
	}
	return m.GetResourceVersion(), true
}
