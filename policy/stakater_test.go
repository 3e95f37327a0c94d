package policy

import (
	"slices"
	"strings"
	"testing"
)

// triggersOn is the decision for a config the workload references by envFrom: for a pattern the
// index holds the workload under PatternKinds, so Candidates need not list the config.
func triggersOn(a Annotations, meta map[string]string, r ConfigRef) bool {
	pol := a.Of(meta, nil)
	spec := envFrom(r.Kind, r.Name)
	uses := UsesOf(&spec)
	indexed := slices.Contains(pol.Candidates(uses), r) || slices.Contains(pol.PatternKinds(), r.Kind)
	ok, _ := pol.Triggers(r, uses[r], false)
	return indexed && ok
}

func TestReloadAnnotationsReadNamesAndPatternsAsStakaterDoes(t *testing.T) {
	def := DefaultAnnotations()
	cm := func(n string) ConfigRef { return ConfigRef{KindConfigMap, n} }
	for _, tt := range []struct {
		value  string
		config ConfigRef
		want   bool
	}{
		{"app-.*", cm("app-config"), true},
		{"app-.*", cm("app-"), true},
		{"app-.*", cm("my-app-config"), false}, // anchored at the start
		{"app-[0-9]+", cm("app-12x"), false},   // anchored at the end
		{"app-[0-9]+", cm("app-12"), true},
		{".*", cm("anything"), true},
		{"a|b", cm("apple"), true}, // stakater's "^a|b$": a prefix or a suffix
		{"(a|b)", cm("apple"), false},
		{"app-config", cm("app-config"), true},
		{"app.config", cm("app.config"), true},
		{"app.config", cm("app-config"), false}, // a valid name is a name: the dot is literal
		{"x, app-.* ,y", cm("app-1"), true},
		{"app-.*", ConfigRef{KindSecret, "app-1"}, false}, // the ConfigMap annotation names ConfigMaps
	} {
		got := triggersOn(def, namedAnn("configmap", tt.value), tt.config)
		if got != tt.want {
			t.Errorf("%q on %v: %v, want %v", tt.value, tt.config, got, tt.want)
		}
	}
}

// A config the pod spec reads that a pattern matches is a candidate whether it exists or not:
// deleted, the cache no longer lists it among the configs the pattern matches, and only the
// candidates tell its deletion to the workload (seed 1046 of the checker's version 8).
func TestCandidatesListTheConfigsThePodReadsThatAPatternMatches(t *testing.T) {
	def := DefaultAnnotations()
	cm := func(n string) ConfigRef { return ConfigRef{KindConfigMap, n} }
	spec := envFrom(KindConfigMap, "app-1")
	spec.Containers[0].EnvFrom = append(spec.Containers[0].EnvFrom, envFrom(KindConfigMap, "other").Containers[0].EnvFrom...)
	uses := UsesOf(&spec)
	for _, tt := range []struct {
		ann  map[string]string
		want []ConfigRef
	}{
		{namedAnn("configmap", "app-[0-9]"), []ConfigRef{cm("app-1")}},
		{namedAnn("configmap", "app-[0-9],listed"), []ConfigRef{cm("app-1"), cm("listed")}},
		{namedAnn("configmap", "nothing-.*"), nil},
		{namedAnn("secret", "app-[0-9]"), nil}, // a Secret pattern matches no ConfigMap
		{map[string]string{"reloader.stakater.com/auto": "true", "configmaps.exclude.reloader.stakater.com/reload": "app-1",
			"configmap.reloader.stakater.com/reload": "app-[0-9]"}, []ConfigRef{cm("app-1"), cm("other")}}, // named wins, as in Triggers
	} {
		if got := def.Of(tt.ann, nil).Candidates(uses); !slices.Equal(got, tt.want) {
			t.Errorf("%v: candidates %v, want %v", tt.ann, got, tt.want)
		}
	}
}

func TestReloadAnnotationPatternProblems(t *testing.T) {
	def := DefaultAnnotations()
	for _, tt := range []struct {
		value    string
		problems int
		named    []ConfigRef
		kinds    []string
	}{
		{"app-(", 1, nil, nil},
		{"ok,app-(,[z-a]", 2, []ConfigRef{{KindConfigMap, "ok"}}, nil},
		{"ok,app-.*", 0, []ConfigRef{{KindConfigMap, "ok"}}, []string{KindConfigMap}},
	} {
		p := def.Of(namedAnn("configmap", tt.value), nil)
		if len(p.Problems) != tt.problems || !slices.Equal(p.Named(), tt.named) || !slices.Equal(p.PatternKinds(), tt.kinds) {
			t.Errorf("%q: problems %q, named %v, pattern kinds %v; want %d, %v, %v", tt.value, p.Problems, p.Named(), p.PatternKinds(), tt.problems, tt.named, tt.kinds)
		}
		for _, pr := range p.Problems {
			if !strings.Contains(pr, "regular expression") {
				t.Errorf("%q: problem %q does not say it is not a valid regular expression", tt.value, pr)
			}
		}
	}
	// Exclusions are names only, as in stakater.
	p := def.Of(map[string]string{def.ConfigMapExclude: "app-.*"}, nil)
	if len(p.Problems) != 0 || !p.excluded[ConfigRef{KindConfigMap, "app-.*"}] {
		t.Errorf("exclude read as a pattern: %+v", p)
	}
}

func TestBooleansParseAsStakaterParsesThem(t *testing.T) {
	def := DefaultAnnotations()
	r := ConfigRef{KindConfigMap, "a"}
	for _, tt := range []struct {
		key, value string
		want       bool
		problems   int
	}{
		{def.Auto, "true", true, 0},
		{def.Auto, "True", true, 0},
		{def.Auto, "TRUE", true, 0},
		{def.Auto, "1", true, 0},
		{def.Auto, "t", true, 0},
		{def.Auto, "False", false, 0},
		{def.Auto, "0", false, 0},
		{def.Auto, "yes", false, 1},
		{def.ConfigMapAuto, "True", true, 0},
		{def.Search, "true", false, 0}, // search alone needs match on the config
		{def.Search, "True", false, 1}, // stakater compares search with "true" exactly: said
	} {
		meta := map[string]string{tt.key: tt.value}
		got := triggersOn(def, meta, r)
		if p := def.Of(meta, nil); got != tt.want || len(p.Problems) != tt.problems {
			t.Errorf("%s=%q: reloads %v with problems %q; want %v and %d problems", tt.key, tt.value, got, p.Problems, tt.want, tt.problems)
		}
	}
	// search "true" with a matched config reloads; "True" does not, as in stakater.
	for value, want := range map[string]bool{"true": true, "True": false} {
		p := def.Of(map[string]string{def.Search: value}, nil)
		spec := envFrom(KindConfigMap, "a")
		if ok, _ := p.Triggers(r, UsesOf(&spec)[r], true); ok != want {
			t.Errorf("search=%q on a matched config: %v, want %v", value, ok, want)
		}
	}
}

func TestAutoReloadAllReloadsEveryReferencedConfigUnlessOptedOut(t *testing.T) {
	all := DefaultAnnotations()
	all.ReloadAll = true
	cm, secret := ConfigRef{KindConfigMap, "c"}, ConfigRef{KindSecret, "s"}
	for _, tt := range []struct {
		name   string
		ann    Annotations
		meta   map[string]string
		config ConfigRef
		want   bool
	}{
		{"no annotation", all, nil, cm, true},
		{"no annotation, a Secret", all, nil, secret, true},
		{"flag off: no annotation does nothing", DefaultAnnotations(), nil, cm, false},
		{"auto false opts out", all, map[string]string{all.Auto: "false"}, cm, false},
		{"auto false opts out of Secrets too", all, map[string]string{all.Auto: "false"}, secret, false},
		{"configmap auto false opts out of ConfigMaps", all, map[string]string{all.ConfigMapAuto: "false"}, cm, false},
		{"configmap auto false leaves Secrets on", all, map[string]string{all.ConfigMapAuto: "false"}, secret, true},
		{"any set value opts out, as in stakater", all, map[string]string{all.Auto: "no"}, cm, false},
		{"an empty value counts as unset", all, map[string]string{all.Auto: ""}, cm, true},
		{"exclude still applies", all, map[string]string{all.ConfigMapExclude: "c"}, cm, false},
		{"ignored config: see judge; search alone reloads on all", all, map[string]string{all.Search: "true"}, cm, true},
	} {
		if got := triggersOn(tt.ann, tt.meta, tt.config); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMisplacedStakaterAnnotationsAreExplained(t *testing.T) {
	def := DefaultAnnotations()
	// Seed 004's workloads.
	p := def.Of(map[string]string{def.Auto: "true", def.Search: "true", def.Match: "configmap|secret", KindAnnotation: "configmap"}, nil)
	if len(p.Problems) != 2 {
		t.Fatalf("problems %q, want one for match and one for kind", p.Problems)
	}
	if !strings.Contains(p.Problems[0], "goes on a ConfigMap or Secret") || !strings.Contains(p.Problems[1], "means nothing") {
		t.Errorf("problems do not say what the annotations mean: %q", p.Problems)
	}
	if !slices.Contains(def.OnWorkload(), def.Match) || !slices.Contains(def.OnWorkload(), KindAnnotation) {
		t.Error("adding or removing match/kind on a workload would not be noticed")
	}
	if p := def.Of(map[string]string{def.Auto: "true"}, nil); len(p.Problems) != 0 {
		t.Errorf("problems without them: %q", p.Problems)
	}
}
