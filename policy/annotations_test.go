package policy

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func envFrom(kind string, names ...string) corev1.PodSpec {
	c := corev1.Container{Name: "app"}
	for _, n := range names {
		ref := corev1.LocalObjectReference{Name: n}
		if kind == KindSecret {
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref}})
		} else {
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref}})
		}
	}
	return corev1.PodSpec{Containers: []corev1.Container{c}}
}

func namedAnn(kind, names string) map[string]string {
	return map[string]string{kind + ".reloader.stakater.com/reload": names}
}

// reloads is the whole pure decision for one config change: is the config among the workload's
// candidates (the index), and does its change trigger the workload?
func reloads(a Annotations, meta, tmpl map[string]string, spec corev1.PodSpec, r ConfigRef, matched bool) bool {
	pol := a.Of(meta, tmpl)
	uses := UsesOf(&spec)
	if !slices.Contains(pol.Candidates(uses), r) {
		return false
	}
	ok, _ := pol.Triggers(r, uses[r], matched)
	return ok
}

func TestAnnotationTable(t *testing.T) {
	cm := func(n string) ConfigRef { return ConfigRef{KindConfigMap, n} }
	secret := ConfigRef{KindSecret, "s"}
	auto := map[string]string{"reloader.stakater.com/auto": "true"}
	search := map[string]string{"reloader.stakater.com/search": "true"}
	rename := func(f func(*Annotations)) Annotations { a := DefaultAnnotations(); f(&a); return a }
	def := DefaultAnnotations()
	tests := []struct {
		name      string
		ann       Annotations
		meta      map[string]string
		tmpl      map[string]string
		spec      corev1.PodSpec
		change    ConfigRef
		matched   bool
		wantLoads bool
	}{
		{"named configmap", def, namedAnn("configmap", "a"), nil, envFrom(KindConfigMap), cm("a"), false, true},
		{"named list with spaces", def, namedAnn("configmap", "x, a ,b"), nil, envFrom(KindConfigMap), cm("a"), false, true},
		{"named secret", def, namedAnn("secret", "s"), nil, envFrom(KindConfigMap), secret, false, true},
		{"named on the pod template", def, nil, namedAnn("configmap", "a"), envFrom(KindConfigMap), cm("a"), false, true},
		{"metadata wins over the template", def, map[string]string{"reloader.stakater.com/auto": "false"}, auto, envFrom(KindConfigMap, "a"), cm("a"), false, false},
		{"unrelated config changes", def, namedAnn("configmap", "a"), nil, envFrom(KindConfigMap, "b"), cm("b"), false, false},
		{"named secret is not a configmap of that name", def, namedAnn("secret", "a"), nil, envFrom(KindConfigMap), cm("a"), false, false},
		{"auto", def, auto, nil, envFrom(KindConfigMap, "a"), cm("a"), false, true},
		{"auto false opts out", def, map[string]string{"reloader.stakater.com/auto": "false"}, nil, envFrom(KindConfigMap, "a"), cm("a"), false, false},
		{"auto ignores unreferenced configs", def, auto, nil, envFrom(KindConfigMap, "a"), cm("b"), false, false},
		{"configmap auto", def, map[string]string{"configmap.reloader.stakater.com/auto": "true"}, nil, envFrom(KindConfigMap, "a"), cm("a"), false, true},
		{"configmap auto skips secrets", def, map[string]string{"configmap.reloader.stakater.com/auto": "true"}, nil, envFrom(KindSecret, "s"), secret, false, false},
		{"secret auto", def, map[string]string{"secret.reloader.stakater.com/auto": "true"}, nil, envFrom(KindSecret, "s"), secret, false, true},
		{"secret auto skips configmaps", def, map[string]string{"secret.reloader.stakater.com/auto": "true"}, nil, envFrom(KindConfigMap, "a"), cm("a"), false, false},
		{"search with match", def, search, nil, envFrom(KindConfigMap, "a"), cm("a"), true, true},
		{"search without match", def, search, nil, envFrom(KindConfigMap, "a"), cm("a"), false, false},
		{"auto wins over search", def, map[string]string{"reloader.stakater.com/search": "true", "reloader.stakater.com/auto": "true"}, nil, envFrom(KindConfigMap, "a"), cm("a"), false, true},
		{"exclude from auto", def, map[string]string{"reloader.stakater.com/auto": "true", "configmaps.exclude.reloader.stakater.com/reload": "a"}, nil, envFrom(KindConfigMap, "a", "b"), cm("a"), false, false},
		{"exclude leaves others", def, map[string]string{"reloader.stakater.com/auto": "true", "configmaps.exclude.reloader.stakater.com/reload": "a"}, nil, envFrom(KindConfigMap, "a", "b"), cm("b"), false, true},
		{"named wins over exclude", def, map[string]string{"configmap.reloader.stakater.com/reload": "a", "configmaps.exclude.reloader.stakater.com/reload": "a"}, nil, envFrom(KindConfigMap, "a"), cm("a"), false, true},
		{"secrets exclude", def, map[string]string{"reloader.stakater.com/auto": "true", "secrets.exclude.reloader.stakater.com/reload": "s"}, nil, envFrom(KindSecret, "s"), secret, false, false},
		{"malformed auto is false", def, map[string]string{"reloader.stakater.com/auto": "yes please"}, nil, envFrom(KindConfigMap, "a"), cm("a"), false, false},
		{"empty name in a list is skipped", def, namedAnn("configmap", "b,,a"), nil, envFrom(KindConfigMap), cm("a"), false, true},
		// Every renaming flag moves the key: the new key works, the default no longer does.
		{"--auto-annotation", rename(func(a *Annotations) { a.Auto = "example.com/auto" }), map[string]string{"example.com/auto": "true"}, nil, envFrom(KindConfigMap, "a"), cm("a"), false, true},
		{"--auto-annotation replaces the default", rename(func(a *Annotations) { a.Auto = "example.com/auto" }), auto, nil, envFrom(KindConfigMap, "a"), cm("a"), false, false},
		{"--configmap-auto-annotation", rename(func(a *Annotations) { a.ConfigMapAuto = "example.com/cm-auto" }), map[string]string{"example.com/cm-auto": "true"}, nil, envFrom(KindConfigMap, "a"), cm("a"), false, true},
		{"--secret-auto-annotation", rename(func(a *Annotations) { a.SecretAuto = "example.com/secret-auto" }), map[string]string{"example.com/secret-auto": "true"}, nil, envFrom(KindSecret, "s"), secret, false, true},
		{"--auto-search-annotation", rename(func(a *Annotations) { a.Search = "example.com/search" }), map[string]string{"example.com/search": "true"}, nil, envFrom(KindConfigMap, "a"), cm("a"), true, true},
		{"--configmap-annotation", rename(func(a *Annotations) { a.ConfigMap = "example.com/cms" }), map[string]string{"example.com/cms": "a"}, nil, envFrom(KindConfigMap), cm("a"), false, true},
		{"--configmap-annotation replaces the default", rename(func(a *Annotations) { a.ConfigMap = "example.com/cms" }), namedAnn("configmap", "a"), nil, envFrom(KindConfigMap), cm("a"), false, false},
		{"--secret-annotation", rename(func(a *Annotations) { a.Secret = "example.com/secrets" }), map[string]string{"example.com/secrets": "s"}, nil, envFrom(KindConfigMap), secret, false, true},
		{"--alternative-configmap-annotation", rename(func(a *Annotations) { a.AlternativeConfigMap = []string{"example.com/also-cms"} }), map[string]string{"example.com/also-cms": "a"}, nil, envFrom(KindConfigMap), cm("a"), false, true},
		{"--alternative-secret-annotation", rename(func(a *Annotations) { a.AlternativeSecret = []string{"example.com/also-secrets"} }), map[string]string{"example.com/also-secrets": "s"}, nil, envFrom(KindConfigMap), secret, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reloads(tt.ann, tt.meta, tt.tmpl, tt.spec, tt.change, tt.matched); got != tt.wantLoads {
				t.Fatalf("reloads = %v, want %v", got, tt.wantLoads)
			}
		})
	}
}

func TestMalformedValuesAreReported(t *testing.T) {
	a := DefaultAnnotations()
	for _, tt := range []struct {
		name string
		meta map[string]string
		want int
	}{
		{"a boolean that is neither true nor false", map[string]string{"reloader.stakater.com/auto": "yes please"}, 1},
		{"an empty name in a list", namedAnn("configmap", "a,,b"), 1},
		{"well-formed values", map[string]string{"reloader.stakater.com/auto": "false", "configmap.reloader.stakater.com/reload": "a, b"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := a.Of(tt.meta, nil).Problems; len(got) != tt.want {
				t.Fatalf("problems %q, want %d", got, tt.want)
			}
		})
	}
}

func TestKeyLevelUses(t *testing.T) {
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{
		{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "x"}, Key: "b"}}},
		{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "x"}, Key: "a"}}},
	}}}}
	pol := DefaultAnnotations().Of(map[string]string{"reloader.stakater.com/auto": "true"}, nil)
	uses := UsesOf(&spec)
	ok, keys := pol.Triggers(ConfigRef{KindConfigMap, "x"}, uses[ConfigRef{KindConfigMap, "x"}], false)
	if !ok || !slices.Equal(keys, []string{"a", "b"}) {
		t.Fatalf("auto on key refs: ok=%v keys=%v, want true [a b]", ok, keys)
	}
	named := DefaultAnnotations().Of(namedAnn("configmap", "x"), nil)
	if ok, keys := named.Triggers(ConfigRef{KindConfigMap, "x"}, uses[ConfigRef{KindConfigMap, "x"}], false); !ok || keys != nil {
		t.Fatalf("named: ok=%v keys=%v, want true and every key", ok, keys)
	}
}
