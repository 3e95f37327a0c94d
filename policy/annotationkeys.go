package policy

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// stakaterDomain is the domain of stakater Reloader's annotation keys: a key under it, or under
// one of its subdomains, or under reloader/, is one the reloader would read if it were spelt right.
const stakaterDomain = "reloader.stakater.com"

// InScope reports whether an annotation key is under reloader.stakater.com/, *.reloader.stakater.com/
// or reloader/: the prefixes the reloader's keys use.
func InScope(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	return ok && (prefix == "reloader" || prefix == stakaterDomain || strings.HasSuffix(prefix, "."+stakaterDomain))
}

// KnownKeys lists every annotation key the reloader reads or writes on any object, under the
// names the flags gave; extra adds the keys other packages own (reloader/pending-job).
func (a Annotations) KnownKeys(extra ...string) []string {
	keys := append(a.OnWorkload(), a.GateAnnotations()...)
	keys = append(keys, a.OnConfig()...)
	keys = append(keys, a.PausedAt, LastReloadAnnotation, TrackAnnotation, RollbackAnnotation, TimeoutAnnotation,
		HistoryAnnotation, RestoreAnnotation, ValidateAnnotation, lastReloadedFrom, RestartedAt)
	keys = append(keys, extra...)
	slices.Sort(keys)
	return slices.Compact(keys)
}

// UnknownKey is an annotation key in the reloader's scope that it neither reads nor writes, with
// the known key nearest to it, or, for a key of a stakater feature the reloader lacks, why it
// does nothing (Unsupported).
type UnknownKey struct {
	Key, Nearest string
	Unsupported  string
}

func (u UnknownKey) String() string {
	if u.Unsupported != "" {
		return fmt.Sprintf("annotation %s is not one the reloader reads: %s", u.Key, u.Unsupported)
	}
	return fmt.Sprintf("annotation %s is not one the reloader reads; did you mean %s?", u.Key, u.Nearest)
}

// csiUnsupported is why stakater Reloader's SecretProviderClass keys do nothing here: no key of
// ours is near in meaning, whatever the edit distance says.
const csiUnsupported = "it is stakater Reloader's Secrets Store CSI integration (SecretProviderClass), " +
	"which the reloader does not support; let the driver sync the secret into a Kubernetes Secret " +
	"(secretObjects) and reload on that Secret"

// unsupported says why a key of stakater Reloader (internal/pkg/options/flags.go) for a feature
// the reloader does not have does nothing; "" for any other key.
func unsupported(key string) string {
	switch key {
	case "secretproviderclass.reloader.stakater.com/reload", "secretproviderclass.reloader.stakater.com/auto",
		"secretproviderclasses.exclude.reloader.stakater.com/reload":
		return csiUnsupported
	}
	return ""
}

// UnknownKeys returns the in-scope keys of the annotation maps that known (KnownKeys' list)
// does not hold, sorted and each once.
func (a Annotations) UnknownKeys(known []string, annotations ...map[string]string) []UnknownKey {
	seen := map[string]bool{}
	for _, m := range annotations {
		for k := range m {
			if _, ok := slices.BinarySearch(known, k); InScope(k) && !ok {
				seen[k] = true
			}
		}
	}
	var out []UnknownKey
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		if why := unsupported(k); why != "" {
			out = append(out, UnknownKey{Key: k, Unsupported: why})
			continue
		}
		out = append(out, UnknownKey{Key: k, Nearest: a.nearest(k)})
	}
	return out
}

// nearest returns the key a user sets that is nearest to key by edit distance (the first of a
// tie). A key renamed by a flag is also measured by its default spelling, so that stakater's
// reloader.stakater.com/auto suggests the name --auto-annotation gave.
func (a Annotations) nearest(key string) string {
	best, bestDist := "", -1
	consider := func(spelling, suggest string) {
		if d := editDistance(key, spelling); bestDist < 0 || d < bestDist {
			best, bestDist = suggest, d
		}
	}
	def := DefaultAnnotations().userKeys()
	for i, k := range a.userKeys() {
		consider(k, k)
		consider(def[i], k)
	}
	for _, k := range slices.Concat([]string{WindowAnnotation, MinIntervalAnnotation, TrackAnnotation, RollbackAnnotation,
		TimeoutAnnotation, ValidateAnnotation}, a.AlternativeConfigMap, a.AlternativeSecret) {
		consider(k, k)
	}
	return best
}

// userKeys are the keys of Annotations that users set, in a fixed order: DefaultAnnotations'
// are their default spellings.
func (a Annotations) userKeys() []string {
	return []string{a.Auto, a.ConfigMapAuto, a.SecretAuto, a.Search, a.Match, a.ConfigMap, a.Secret,
		a.ConfigMapExclude, a.SecretExclude, a.Ignore, a.RolloutStrategy, a.PausePeriod}
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Pattern is an item of a reload annotation read as a regular expression.
type Pattern struct {
	Kind, Item string
	re         *regexp.Regexp
}

// Matches reports whether the pattern matches config r.
func (p Pattern) Matches(r ConfigRef) bool { return r.Kind == p.Kind && p.re.MatchString(r.Name) }

// Patterns lists the items of the reload annotations read as patterns, sorted by kind and item.
func (p Policy) Patterns() []Pattern {
	var out []Pattern
	for kind, res := range p.patterns {
		for _, re := range res {
			item := strings.TrimSuffix(strings.TrimPrefix(re.String(), "^"), "$")
			out = append(out, Pattern{Kind: kind, Item: item, re: re})
		}
	}
	slices.SortFunc(out, func(x, y Pattern) int { return strings.Compare(x.Kind+"/"+x.Item, y.Kind+"/"+y.Item) })
	return out
}

// CaseSlip returns the name an item of a reload annotation spells but for its case, when it is
// not a name itself: read as a pattern, such an item ("App-Config") matches no config, since
// config names are lower case.
func CaseSlip(item string) (string, bool) {
	lower := strings.ToLower(item)
	if lower == item || len(validation.IsDNS1123Subdomain(lower)) > 0 {
		return "", false
	}
	return lower, true
}

// RequestsReload reports whether a workload's own annotations ask for reloads (auto, search, or a
// name or pattern in a reload annotation), --auto-reload-all aside.
func (p Policy) RequestsReload() bool {
	return p.auto || p.configMapAuto || p.secretAuto || p.search || len(p.named) > 0 || len(p.patterns) > 0
}
