// Package policy owns the reloader's pure decisions: which configs a pod spec references and how,
// which annotations make a config change reload a workload, what marker a workload carries for a
// config, whether it must be reloaded, when it may be (defer.go), whether a config's declared keys
// parse (validate.go), and the JSON patch that does it; for safe reloads, how far a rollout has
// got, the history annotation and what a rollback restores. It takes no client, no cache and no
// clock (the time is an argument): every function here is a table test away from proof.
package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
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
	PausePeriod      string // on a workload: hold reloads for this long, then roll out once (defer.go)
	PausedAt         string // on a workload, written by the reloader: when the pause period began
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
		PausePeriod:      "deployment.reloader.stakater.com/pause-period",
		PausedAt:         "deployment.reloader.stakater.com/paused-at",
	}
}

// OnConfig lists the annotations read from ConfigMaps and Secrets, the only ones the cache keeps.
func (a Annotations) OnConfig() []string {
	return []string{a.Ignore, a.Match}
}

// ConfigRef names a config in the workload's namespace.
type ConfigRef struct {
	Kind string
	Name string
}

// Use is how a pod spec reads one config: as a whole (envFrom, a volume without items) and/or
// through individual keys (configMapKeyRef, secretKeyRef, volume items).
type Use struct {
	Whole bool
	Keys  []string
}

// Policy is what a workload's annotations say about reloading.
type Policy struct {
	auto, configMapAuto, secretAuto, search bool
	named, excluded                         map[ConfigRef]bool
	// problems are malformed annotation values, reported as Events.
	Problems []string
}

// Of reads a workload's reload annotations, falling back to its pod template's.
func (a Annotations) Of(meta, tmpl map[string]string) Policy {
	p := Policy{named: map[ConfigRef]bool{}, excluded: map[ConfigRef]bool{}}
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
		p.names(get, key, KindConfigMap, p.named)
	}
	for _, key := range append([]string{a.Secret}, a.AlternativeSecret...) {
		p.names(get, key, KindSecret, p.named)
	}
	p.names(get, a.ConfigMapExclude, KindConfigMap, p.excluded)
	p.names(get, a.SecretExclude, KindSecret, p.excluded)
	return p
}

func (p *Policy) flag(get func(string) (string, bool), key string) bool {
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
	p.Problems = append(p.Problems, fmt.Sprintf("annotation %s=%q is neither \"true\" nor \"false\"; treated as \"false\"", key, v))
	return false
}

func (p *Policy) names(get func(string) (string, bool), key, kind string, into map[ConfigRef]bool) {
	v, ok := get(key)
	if !ok {
		return
	}
	for i, n := range strings.Split(v, ",") {
		if n = strings.TrimSpace(n); n == "" {
			p.Problems = append(p.Problems, fmt.Sprintf("annotation %s=%q has an empty name at position %d; it is skipped", key, v, i+1))
			continue
		}
		into[ConfigRef{Kind: kind, Name: n}] = true
	}
}

// autoFor reports whether auto-discovery covers configs of this kind.
func (p Policy) autoFor(kind string) bool {
	return p.auto || kind == KindConfigMap && p.configMapAuto || kind == KindSecret && p.secretAuto
}

// Candidates are every config a change of which may reload the workload; the index holds them.
// Search mode still needs the config's match annotation, checked by Triggers.
func (p Policy) Candidates(uses map[ConfigRef]Use) []ConfigRef {
	var refs []ConfigRef
	for r := range p.named {
		refs = append(refs, r)
	}
	for r := range uses {
		if !p.named[r] && !p.excluded[r] && (p.autoFor(r.Kind) || p.search) {
			refs = append(refs, r)
		}
	}
	slices.SortFunc(refs, func(x, y ConfigRef) int { return strings.Compare(x.Kind+"/"+x.Name, y.Kind+"/"+y.Name) })
	return refs
}

// Triggers reports whether a change of config r (carrying the given annotations) reloads the
// workload, and if only some of its keys matter, which: nil keys means any change.
// Auto wins over search, as stakater documents: with auto on, match is not required.
func (p Policy) Triggers(r ConfigRef, u Use, matched bool) (ok bool, keys []string) {
	switch {
	case p.named[r]:
		return true, nil
	case p.excluded[r] || !u.Whole && len(u.Keys) == 0:
		return false, nil
	case p.autoFor(r.Kind), p.search && matched:
		if u.Whole {
			return true, nil
		}
		return true, u.Keys
	}
	return false, nil
}

// Named returns the configs the reload annotations name, sorted.
func (p Policy) Named() []ConfigRef {
	refs := slices.Collect(maps.Keys(p.named))
	slices.SortFunc(refs, func(x, y ConfigRef) int { return strings.Compare(x.Kind+"/"+x.Name, y.Kind+"/"+y.Name) })
	return refs
}

// OnWorkload lists the annotations read from workloads: a change of any other annotation (the
// Deployment controller's revision, say) changes nothing the reloader decides.
func (a Annotations) OnWorkload() []string {
	keys := []string{a.Auto, a.ConfigMapAuto, a.SecretAuto, a.Search, a.ConfigMap, a.Secret,
		a.ConfigMapExclude, a.SecretExclude, a.RolloutStrategy, hashesAnnotation}
	keys = append(keys, a.AlternativeConfigMap...)
	return append(keys, a.AlternativeSecret...)
}
