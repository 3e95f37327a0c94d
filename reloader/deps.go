package reloader

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Annotations names the annotation keys the reloader reads. The defaults are stakater Reloader's;
// the seed flags (--auto-annotation, ...) rename them.
type Annotations struct {
	Auto             string // on a workload: reload on any referenced config
	ConfigMapAuto    string // on a workload: reload on any referenced ConfigMap
	SecretAuto       string // on a workload: reload on any referenced Secret
	Search           string // on a workload: reload on referenced configs that carry Match
	Match            string // on a config: matched by Search
	ConfigMap        string // on a workload: comma-separated ConfigMap names
	Secret           string // on a workload: comma-separated Secret names
	ConfigMapExclude string // on a workload: ConfigMaps auto and search leave out
	SecretExclude    string // on a workload: Secrets auto and search leave out
	Ignore           string // on a config: never trigger
	RolloutStrategy  string // on an Argo Rollout: "restart" sets spec.restartAt
	// Extra keys with the ConfigMap / Secret semantics (Collaborne's --alternative-*-annotation).
	AlternativeConfigMap []string
	AlternativeSecret    []string
}

// DefaultAnnotations returns stakater Reloader's annotation keys.
func DefaultAnnotations() Annotations {
	return Annotations{
		Auto:             "reloader.stakater.com/auto",
		ConfigMapAuto:    "configmap.reloader.stakater.com/auto",
		SecretAuto:       "secret.reloader.stakater.com/auto",
		Search:           "reloader.stakater.com/search",
		Match:            "reloader.stakater.com/match",
		ConfigMap:        "configmap.reloader.stakater.com/reload",
		Secret:           "secret.reloader.stakater.com/reload",
		ConfigMapExclude: "configmaps.exclude.reloader.stakater.com/reload",
		SecretExclude:    "secrets.exclude.reloader.stakater.com/reload",
		Ignore:           "reloader.stakater.com/ignore",
		RolloutStrategy:  "reloader.stakater.com/rollout-strategy",
	}
}

// onConfig lists the annotations read from ConfigMaps and Secrets, the only ones the cache keeps.
func (a Annotations) onConfig() []string {
	return []string{a.Ignore, a.Match}
}

// configRef names a config in the workload's namespace.
type configRef struct {
	Kind string
	Name string
}

// use is how a pod spec reads one config: as a whole (envFrom, a volume without items) and/or
// through individual keys (configMapKeyRef, secretKeyRef, volume items).
type use struct {
	whole bool
	keys  []string
}

// policy is what a workload's annotations say about reloading.
type policy struct {
	auto, configMapAuto, secretAuto, search bool
	named, excluded                         map[configRef]bool
	// problems are malformed annotation values, reported as Events.
	problems []string
}

// policyOf reads a workload's reload annotations, falling back to its pod template's.
func (a Annotations) policyOf(meta, tmpl map[string]string) policy {
	p := policy{named: map[configRef]bool{}, excluded: map[configRef]bool{}}
	get := func(key string) (string, bool) {
		if v, ok := meta[key]; ok {
			return v, true
		}
		v, ok := tmpl[key]
		return v, ok
	}
	p.auto = p.flag(get, a.Auto)
	p.configMapAuto = p.flag(get, a.ConfigMapAuto)
	p.secretAuto = p.flag(get, a.SecretAuto)
	p.search = p.flag(get, a.Search)
	for _, key := range append([]string{a.ConfigMap}, a.AlternativeConfigMap...) {
		p.names(get, key, kindConfigMap, p.named)
	}
	for _, key := range append([]string{a.Secret}, a.AlternativeSecret...) {
		p.names(get, key, kindSecret, p.named)
	}
	p.names(get, a.ConfigMapExclude, kindConfigMap, p.excluded)
	p.names(get, a.SecretExclude, kindSecret, p.excluded)
	return p
}

func (p *policy) flag(get func(string) (string, bool), key string) bool {
	v, ok := get(key)
	if !ok {
		return false
	}
	switch v {
	case "true":
		return true
	case "false":
		return false
	}
	p.problems = append(p.problems, fmt.Sprintf("annotation %s=%q is neither \"true\" nor \"false\"; treated as \"false\"", key, v))
	return false
}

func (p *policy) names(get func(string) (string, bool), key, kind string, into map[configRef]bool) {
	v, ok := get(key)
	if !ok {
		return
	}
	for i, n := range strings.Split(v, ",") {
		if n = strings.TrimSpace(n); n == "" {
			p.problems = append(p.problems, fmt.Sprintf("annotation %s=%q has an empty name at position %d; it is skipped", key, v, i+1))
			continue
		}
		into[configRef{Kind: kind, Name: n}] = true
	}
}

// autoFor reports whether auto-discovery covers configs of this kind.
func (p policy) autoFor(kind string) bool {
	return p.auto || kind == kindConfigMap && p.configMapAuto || kind == kindSecret && p.secretAuto
}

// candidates are every config a change of which may reload the workload; the index holds them.
// Search mode still needs the config's match annotation, checked by triggers.
func (p policy) candidates(uses map[configRef]use) []configRef {
	var refs []configRef
	for r := range p.named {
		refs = append(refs, r)
	}
	for r := range uses {
		if !p.named[r] && !p.excluded[r] && (p.autoFor(r.Kind) || p.search) {
			refs = append(refs, r)
		}
	}
	slices.SortFunc(refs, func(x, y configRef) int { return strings.Compare(x.Kind+"/"+x.Name, y.Kind+"/"+y.Name) })
	return refs
}

// triggers reports whether a change of config r (carrying the given annotations) reloads the
// workload, and if only some of its keys matter, which: nil keys means any change.
// Auto wins over search, as stakater documents: with auto on, match is not required.
func (p policy) triggers(r configRef, u use, matched bool) (ok bool, keys []string) {
	switch {
	case p.named[r]:
		return true, nil
	case p.excluded[r] || !u.whole && len(u.keys) == 0:
		return false, nil
	case p.autoFor(r.Kind), p.search && matched:
		if u.whole {
			return true, nil
		}
		return true, u.keys
	}
	return false, nil
}

// usesOf returns every config the pod spec mounts or reads into its environment, with how.
func usesOf(spec *corev1.PodSpec) map[configRef]use {
	uses := map[configRef]use{}
	add := func(kind, name string, keys ...string) {
		u := uses[configRef{kind, name}]
		if len(keys) == 0 {
			u.whole = true
		}
		for _, k := range keys {
			if !slices.Contains(u.keys, k) {
				u.keys = append(u.keys, k)
			}
		}
		uses[configRef{kind, name}] = u
	}
	for i := range spec.Volumes {
		volumeUses(&spec.Volumes[i], add)
	}
	for _, c := range allContainers(spec) {
		envUses(c, add)
	}
	for r, u := range uses {
		slices.Sort(u.keys)
		uses[r] = u
	}
	return uses
}

func allContainers(spec *corev1.PodSpec) []*corev1.Container {
	var out []*corev1.Container
	for i := range spec.InitContainers {
		out = append(out, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		out = append(out, &spec.Containers[i])
	}
	return out
}

func itemKeys(items []corev1.KeyToPath) []string {
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = it.Key
	}
	return keys
}

func volumeUses(v *corev1.Volume, add func(kind, name string, keys ...string)) {
	if s := v.ConfigMap; s != nil {
		add(kindConfigMap, s.Name, itemKeys(s.Items)...)
	}
	if s := v.Secret; s != nil {
		add(kindSecret, s.SecretName, itemKeys(s.Items)...)
	}
	if v.Projected == nil {
		return
	}
	for _, s := range v.Projected.Sources {
		if s.ConfigMap != nil {
			add(kindConfigMap, s.ConfigMap.Name, itemKeys(s.ConfigMap.Items)...)
		}
		if s.Secret != nil {
			add(kindSecret, s.Secret.Name, itemKeys(s.Secret.Items)...)
		}
	}
}

func envUses(c *corev1.Container, add func(kind, name string, keys ...string)) {
	for _, e := range c.EnvFrom {
		if e.ConfigMapRef != nil {
			add(kindConfigMap, e.ConfigMapRef.Name)
		}
		if e.SecretRef != nil {
			add(kindSecret, e.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			add(kindConfigMap, r.Name, r.Key)
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			add(kindSecret, r.Name, r.Key)
		}
	}
}

// containerUses reports whether container c reads config r, through its environment or a
// mounted volume.
func containerUses(spec *corev1.PodSpec, c *corev1.Container, r configRef) bool {
	found := false
	mark := func(kind, name string, _ ...string) {
		if kind == r.Kind && name == r.Name {
			found = true
		}
	}
	envUses(c, mark)
	for _, m := range c.VolumeMounts {
		for i := range spec.Volumes {
			if spec.Volumes[i].Name == m.Name {
				volumeUses(&spec.Volumes[i], mark)
			}
		}
	}
	return found
}
