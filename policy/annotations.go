// Package policy owns the reloader's pure decisions: which configs a pod spec references and how,
// which annotations make a config change reload a workload, what marker a workload carries for a
// config, whether it must be reloaded, when it may be (reloader/gates.go), whether a config's declared keys
// parse (validate.go), and the JSON patch that does it; for safe reloads, how far a rollout has
// got, the history annotation and what a rollback restores. It takes no client, no cache and no
// clock (the time is an argument): every function here is a table test away from proof.
package policy

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
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
	PausePeriod      string // on a workload: hold reloads for this long, then roll out once (reloader/gates.go)
	PausedAt         string // on a workload, written by the reloader: when the pause period began
	// Extra keys with the ConfigMap / Secret semantics (Collaborne's --alternative-*-annotation).
	AlternativeConfigMap []string
	AlternativeSecret    []string
	// ReloadAll is stakater's --auto-reload-all: a workload that sets neither Auto nor the typed
	// auto annotation of a config's kind reloads on every config of that kind it references.
	ReloadAll bool
}

// KindAnnotation is not an annotation of stakater Reloader's, though manifests carry it (seed
// 004): it is read only to say that it means nothing.
const KindAnnotation = "reloader.stakater.com/kind"

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

// Ignores reports whether a config's annotations say its changes reload nothing. Only the exact
// value "true" does, as in stakater Reloader. This and the two below are here, not inline in the
// reloader package, so that docs/values.md's examples are held to the code that decides.
func (a Annotations) Ignores(config map[string]string) bool {
	return config[a.Ignore] == "true"
}

// Matches reports whether a config's annotations make it trigger the workloads in search mode:
// only the exact value "true", as in stakater Reloader.
func (a Annotations) Matches(config map[string]string) bool {
	return config[a.Match] == "true"
}

// RestartsAt reports whether an Argo Rollout's own metadata asks for the restart strategy
// (spec.restartAt). Only the exact value "restart" does; any other is stakater's default,
// a template change.
func (a Annotations) RestartsAt(meta map[string]string) bool {
	return meta[a.RolloutStrategy] == "restart"
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
	// autoUnset, by kind: neither Auto nor the typed auto annotation has a value (ReloadAll).
	autoUnset       map[string]bool
	named, excluded map[ConfigRef]bool
	// patterns are the names in reload annotations that are regular expressions, by kind.
	patterns map[string][]*regexp.Regexp
	// Problems are malformed or misplaced annotation values, reported as Events.
	Problems []string
}

// Of reads a workload's reload annotations, falling back to its pod template's.
func (a Annotations) Of(meta, tmpl map[string]string) Policy {
	p := Policy{named: map[ConfigRef]bool{}, excluded: map[ConfigRef]bool{}, patterns: map[string][]*regexp.Regexp{}}
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
	p.search = p.searchFlag(get, a.Search)
	if a.ReloadAll {
		set := func(key string) bool { v, _ := get(key); return v != "" }
		p.autoUnset = map[string]bool{
			KindConfigMap: !set(a.Auto) && !set(a.ConfigMapAuto),
			KindSecret:    !set(a.Auto) && !set(a.SecretAuto),
		}
	}
	for _, key := range append([]string{a.ConfigMap}, a.AlternativeConfigMap...) {
		p.names(get, key, KindConfigMap, p.named, true)
	}
	for _, key := range append([]string{a.Secret}, a.AlternativeSecret...) {
		p.names(get, key, KindSecret, p.named, true)
	}
	p.names(get, a.ConfigMapExclude, KindConfigMap, p.excluded, false)
	p.names(get, a.SecretExclude, KindSecret, p.excluded, false)
	p.misplaced(get, a)
	return p
}

// flag reads a boolean as stakater reads its auto annotations (strconv.ParseBool: "true",
// "True", "1" are true).
func (p *Policy) flag(get func(string) (string, bool), key string) bool {
	v, ok := get(key)
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		p.Problems = append(p.Problems, fmt.Sprintf("annotation %s=%q is neither \"true\" nor \"false\"; treated as \"false\"", key, v))
	}
	return b
}

// searchFlag reads the search annotation, which stakater compares with "true" exactly: "True" is
// false there, and here too, but said.
func (p *Policy) searchFlag(get func(string) (string, bool), key string) bool {
	v, ok := get(key)
	if b := p.flag(get, key); !ok || !b || v == "true" {
		return v == "true"
	}
	p.Problems = append(p.Problems, fmt.Sprintf("annotation %s=%q: search is on only for the exact value \"true\", as in stakater Reloader; treated as \"false\"", key, v))
	return false
}

// names reads a comma-separated list of config names. In a reload annotation (patterns), an item
// that is not a valid name is a regular expression, anchored as stakater anchors it: "^" + item +
// "$", so "app-.*" matches every name starting with "app-" (and "a|b" reads as "^a|b$").
func (p *Policy) names(get func(string) (string, bool), key, kind string, into map[ConfigRef]bool, patterns bool) {
	v, ok := get(key)
	if !ok {
		return
	}
	for i, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			p.Problems = append(p.Problems, fmt.Sprintf("annotation %s=%q has an empty name at position %d; it is skipped", key, v, i+1))
		case !patterns || len(validation.IsDNS1123Subdomain(n)) == 0:
			into[ConfigRef{Kind: kind, Name: n}] = true
		default:
			re, err := regexp.Compile("^" + n + "$")
			if err != nil {
				p.Problems = append(p.Problems, fmt.Sprintf("annotation %s: %q is neither a %s name nor a valid regular expression (%v); it is skipped", key, n, kind, err))
				continue
			}
			p.patterns[kind] = append(p.patterns[kind], re)
		}
	}
}

// misplaced reports annotations that mean nothing where they are (seed 004): match belongs on a
// config, and stakater has no kind annotation.
func (p *Policy) misplaced(get func(string) (string, bool), a Annotations) {
	if v, ok := get(a.Match); ok {
		p.Problems = append(p.Problems, fmt.Sprintf("annotation %s=%q means nothing on a workload: it goes on a ConfigMap or Secret, with the value \"true\", to make that config trigger the workloads that set %s=\"true\"", a.Match, v, a.Search))
	}
	if v, ok := get(KindAnnotation); ok {
		p.Problems = append(p.Problems, fmt.Sprintf("annotation %s=%q means nothing: neither stakater Reloader nor this reloader reads it; to reload on ConfigMaps only, use %s, or on Secrets only, %s", KindAnnotation, v, a.ConfigMapAuto, a.SecretAuto))
	}
}

// autoFor reports whether auto-discovery covers configs of this kind.
func (p Policy) autoFor(kind string) bool {
	return p.auto || kind == KindConfigMap && p.configMapAuto || kind == KindSecret && p.secretAuto || p.autoUnset[kind]
}

// NamedBy reports whether a reload annotation names config r, by name or by pattern.
func (p Policy) NamedBy(r ConfigRef) bool {
	if p.named[r] {
		return true
	}
	for _, re := range p.patterns[r.Kind] {
		if re.MatchString(r.Name) {
			return true
		}
	}
	return false
}

// PatternKinds lists the kinds of config that a pattern in a reload annotation may match, sorted:
// such configs cannot be listed in advance, so the index holds the workload under its namespace.
func (p Policy) PatternKinds() []string {
	return slices.Sorted(maps.Keys(p.patterns))
}

// Candidates are every config a change of which may reload the workload; the index holds them.
// Search mode still needs the config's match annotation, checked by Triggers. A config the pod
// spec reads that a pattern matches is one, so that its deletion, when the cache no longer lists
// it among the configs the pattern matches, still reaches the workload.
func (p Policy) Candidates(uses map[ConfigRef]Use) []ConfigRef {
	var refs []ConfigRef
	for r := range p.named {
		refs = append(refs, r)
	}
	for r := range uses {
		if !p.named[r] && (p.NamedBy(r) || !p.excluded[r] && (p.autoFor(r.Kind) || p.search)) {
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
	case p.NamedBy(r):
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

// Named returns the configs the reload annotations name (not those they match by pattern), sorted.
func (p Policy) Named() []ConfigRef {
	refs := slices.Collect(maps.Keys(p.named))
	slices.SortFunc(refs, func(x, y ConfigRef) int { return strings.Compare(x.Kind+"/"+x.Name, y.Kind+"/"+y.Name) })
	return refs
}

// OnWorkload lists the annotations read from workloads: a change of any other annotation (the
// Deployment controller's revision, say) changes nothing the reloader decides.
func (a Annotations) OnWorkload() []string {
	keys := []string{a.Auto, a.ConfigMapAuto, a.SecretAuto, a.Search, a.ConfigMap, a.Secret,
		a.ConfigMapExclude, a.SecretExclude, a.RolloutStrategy, hashesAnnotation, a.Match, KindAnnotation}
	keys = append(keys, a.AlternativeConfigMap...)
	return append(keys, a.AlternativeSecret...)
}
