package reloader

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reload strategies (--reload-strategy).
const (
	StrategyEnvVars     = "env-vars"
	StrategyAnnotations = "annotations"
)

const (
	// hashesAnnotation records, for the annotations and restart strategies, the value applied per
	// config, so that a repeated reload is recognised and skipped.
	hashesAnnotation = "reloader/config-hashes"
	// lastReloadedFrom is stakater Reloader's pod-template annotation for its annotations strategy.
	lastReloadedFrom = "reloader.stakater.com/last-reloaded-from"
	// deletedMarker is the value applied for a config that was deleted (--reload-on-delete).
	deletedMarker = "deleted"
)

// change is one config's new value for a workload: its hash, a subset hash for a workload that
// reads single keys, or "" when the config was deleted.
type change struct {
	ref   configRef
	value string
}

// jsonOp is one RFC 6902 operation.
type jsonOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

func pointer(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
	}
	return b.String()
}

// envVarName is the variable that carries a config's hash in the pod template, in Collaborne's
// form _RELOADER_-<configmap|secret>-<name>. Config names are DNS subdomains ([a-z0-9.-]), all
// valid in an env var name, so the name is used verbatim and distinct configs never share a
// variable: app-config and app.config stay apart.
func envVarName(r configRef) string {
	return "_RELOADER_-" + strings.ToLower(r.Kind) + "-" + r.Name
}

// targetContainers are the indexes of the containers that read r, or of the first container if
// none does.
func targetContainers(spec *corev1.PodSpec, r configRef) []int {
	var idx []int
	for i := range spec.Containers {
		if containerUses(spec, &spec.Containers[i], r) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 && len(spec.Containers) > 0 {
		idx = append(idx, 0)
	}
	return idx
}

// envOps sets (or, for a deleted config, removes) each config's variable on its target
// containers. It returns no ops when the template already holds every value.
func envOps(tmpl *corev1.PodTemplateSpec, changes []change) []jsonOp {
	spec := &tmpl.Spec
	var ops []jsonOp
	for ci := range spec.Containers {
		var wanted []change
		for _, ch := range changes {
			if slices.Contains(targetContainers(spec, ch.ref), ci) {
				wanted = append(wanted, ch)
			}
		}
		ops = append(ops, containerEnvOps(spec.Containers[ci], ci, wanted)...)
	}
	return ops
}

func containerEnvOps(c corev1.Container, ci int, wanted []change) []jsonOp {
	base := pointer("spec", "template", "spec", "containers", fmt.Sprint(ci))
	var sets, removes []jsonOp
	hasEnv := c.Env != nil
	for _, ch := range wanted {
		name := envVarName(ch.ref)
		j := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
		at := base + pointer("env", fmt.Sprint(j))
		// An index is only right for the template we read: each op on one re-checks its name.
		guard := jsonOp{Op: "test", Path: at + "/name", Value: name}
		switch {
		case ch.value == "" && j >= 0:
			removes = append(removes, guard, jsonOp{Op: "remove", Path: at})
		case ch.value == "" || j >= 0 && c.Env[j].Value == ch.value && c.Env[j].ValueFrom == nil:
		case j >= 0:
			sets = append(sets, guard, jsonOp{Op: "replace", Path: at, Value: corev1.EnvVar{Name: name, Value: ch.value}})
		case !hasEnv:
			sets = append(sets, jsonOp{Op: "add", Path: base + "/env", Value: []corev1.EnvVar{{Name: name, Value: ch.value}}})
			hasEnv = true
		default:
			sets = append(sets, jsonOp{Op: "add", Path: base + "/env/-", Value: corev1.EnvVar{Name: name, Value: ch.value}})
		}
	}
	if len(sets)+len(removes) == 0 {
		return nil
	}
	// Removals go last and from the highest index down, so earlier indexes stay valid; each
	// keeps its guard in front of it.
	slices.SortStableFunc(removes, func(a, b jsonOp) int { return envIndex(b) - envIndex(a) })
	guard := jsonOp{Op: "test", Path: base + "/name", Value: c.Name}
	return append(append([]jsonOp{guard}, sets...), removes...)
}

// envIndex is the env index an op addresses (its guard shares it).
func envIndex(op jsonOp) int {
	rest := op.Path[strings.LastIndex(op.Path, "/env/")+len("/env/"):]
	var i int
	fmt.Sscan(strings.TrimSuffix(rest, "/name"), &i)
	return i
}

// appliedHashes reads hashesAnnotation.
func appliedHashes(annotations map[string]string) map[string]string {
	m := map[string]string{}
	_ = json.Unmarshal([]byte(annotations[hashesAnnotation]), &m) // a mangled value counts as empty
	return m
}

func hashKey(r configRef) string { return strings.ToLower(r.Kind) + "/" + r.Name }

// withChanges returns the applied-hashes map updated by changes, and whether it differs.
func withChanges(applied map[string]string, changes []change) (map[string]string, bool) {
	next := maps.Clone(applied)
	for _, ch := range changes {
		v := ch.value
		if v == "" {
			v = deletedMarker
		}
		next[hashKey(ch.ref)] = v
	}
	return next, !maps.Equal(applied, next)
}

// annotationOps implements the annotations strategy: the pod template gets stakater's
// last-reloaded-from annotation and the per-config hashes.
func annotationOps(ns string, tmpl *corev1.PodTemplateSpec, changes []change, now time.Time) ([]jsonOp, error) {
	next, differs := withChanges(appliedHashes(tmpl.Annotations), changes)
	if !differs {
		return nil, nil
	}
	last := changes[len(changes)-1]
	from, err := json.Marshal(map[string]any{
		"type": strings.ToUpper(last.ref.Kind), "name": last.ref.Name, "namespace": ns,
		"hash": next[hashKey(last.ref)], "containerRefs": containerNames(&tmpl.Spec, last.ref), "observedAt": now.Unix(),
	})
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", lastReloadedFrom, err)
	}
	return setAnnotations([]string{"spec", "template", "metadata"}, tmpl.Annotations, map[string]string{
		hashesAnnotation: mustJSON(next), lastReloadedFrom: string(from),
	}), nil
}

// restartOps implements Argo Rollouts' restart strategy: spec.restartAt makes the Rollout
// replace its pods without a template change; the hashes go on the Rollout itself.
func restartOps(meta metav1.Object, changes []change, now time.Time) []jsonOp {
	next, differs := withChanges(appliedHashes(meta.GetAnnotations()), changes)
	if !differs {
		return nil
	}
	ops := setAnnotations([]string{"metadata"}, meta.GetAnnotations(), map[string]string{hashesAnnotation: mustJSON(next)})
	return append(ops, jsonOp{Op: "add", Path: "/spec/restartAt", Value: now.UTC().Format(time.RFC3339)})
}

func setAnnotations(at []string, current, set map[string]string) []jsonOp {
	if current == nil {
		return []jsonOp{{Op: "add", Path: pointer(append(at, "annotations")...), Value: set}}
	}
	var ops []jsonOp
	for _, k := range slices.Sorted(maps.Keys(set)) {
		ops = append(ops, jsonOp{Op: "add", Path: pointer(append(at, "annotations", k)...), Value: set[k]})
	}
	return ops
}

func containerNames(spec *corev1.PodSpec, r configRef) []string {
	var names []string
	for _, i := range targetContainers(spec, r) {
		names = append(names, spec.Containers[i].Name)
	}
	return names
}

func mustJSON(m map[string]string) string {
	b, _ := json.Marshal(m) // a map of strings always encodes
	return string(b)
}
