package policy

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
	// DeletedMarker is the value applied for a config that was deleted (--reload-on-delete).
	DeletedMarker = "deleted"
	// RestartedAt, on the pod template, is written by a reload that must restart the pods though
	// every marker already holds its value (Change.Force): the change of the template restarts.
	RestartedAt = "reloader/restarted-at"
)

// Change is one config's new value for a workload: its hash, a subset hash for a workload that
// reads single keys, or "" when the config was deleted.
type Change struct {
	Ref   ConfigRef
	Value string
	// Force: the pods may run another content than the marker says (a restart gave them a
	// change the reloader had not seen yet), so the workload is restarted even when its marker
	// already holds Value.
	Force bool
	// Ran is the content the pods run where the workload carries no marker of the config, as the
	// state says ("" when unknown): what a rollback of the reload puts back.
	Ran string
}

// JSONOp is one RFC 6902 operation.
type JSONOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// pointerEscape escapes a JSON pointer segment (RFC 6901). A Replacer is safe for concurrent use
// and never changes once built; building one per call was a fifth of the bytes allocated per
// reload.
var pointerEscape = strings.NewReplacer("~", "~0", "/", "~1")

func pointer(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(pointerEscape.Replace(p))
	}
	return b.String()
}

// EnvVarName is the variable that carries a config's hash in the pod template, in Collaborne's
// form _RELOADER_-<configmap|secret>-<name>. Config names are DNS subdomains ([a-z0-9.-]), all
// valid in an env var name, so the name is used verbatim and distinct configs never share a
// variable: app-config and app.config stay apart.
func EnvVarName(r ConfigRef) string {
	return "_RELOADER_-" + strings.ToLower(r.Kind) + "-" + r.Name
}

// targetContainers are the indexes of the containers that read r, or of the first container if
// none does.
func targetContainers(spec *corev1.PodSpec, r ConfigRef) []int {
	var idx []int
	for i := range spec.Containers {
		if ContainerUses(spec, &spec.Containers[i], r) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 && len(spec.Containers) > 0 {
		idx = append(idx, 0)
	}
	return idx
}

// EnvOps sets each config's variable on its target containers to its change's value, a deleted
// config's to DeletedMarker: a workload without the variable may be one the deletion has yet to
// reach (Reload). It returns no ops when the template already holds every value.
func EnvOps(tmpl *corev1.PodTemplateSpec, changes []Change) []JSONOp {
	marked := slices.Clone(changes)
	for i := range marked {
		if marked[i].Value == "" {
			marked[i].Value = DeletedMarker
		}
	}
	return setEnv(tmpl, marked)
}

// setEnv sets each config's variable on its target containers, or removes it for a value ""
// (a restore of a template that lacked it). It returns no ops when the template already holds
// every value.
func setEnv(tmpl *corev1.PodTemplateSpec, changes []Change) []JSONOp {
	if len(envOps(tmpl, changes, false)) == 0 {
		return nil
	}
	// A reload restarts the pods anyway: it also drops Collaborne's variables (collaborne.go).
	return envOps(tmpl, changes, true)
}

func envOps(tmpl *corev1.PodTemplateSpec, changes []Change, dropCollaborne bool) []JSONOp {
	spec := &tmpl.Spec
	var ops []JSONOp
	for ci := range spec.Containers {
		var wanted []Change
		for _, ch := range changes {
			if slices.Contains(targetContainers(spec, ch.Ref), ci) {
				wanted = append(wanted, ch)
			}
		}
		ops = append(ops, containerEnvOps(spec.Containers[ci], ci, wanted, dropCollaborne)...)
	}
	return ops
}

// containerEnvOps gives container c, at index ci, the variables of the changes it is wanted
// for, and with dropCollaborne removes Collaborne's variables from it.
func containerEnvOps(c corev1.Container, ci int, wanted []Change, dropCollaborne bool) []JSONOp {
	base := pointer("spec", "template", "spec", "containers", fmt.Sprint(ci))
	var sets, removes []JSONOp
	if dropCollaborne {
		removes = collaborneRemovals(c, base)
	}
	hasEnv := c.Env != nil
	for _, ch := range wanted {
		name := EnvVarName(ch.Ref)
		j := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
		at := base + pointer("env", fmt.Sprint(j))
		// An index is only right for the template we read: each op on one re-checks its name.
		guard := JSONOp{Op: "test", Path: at + "/name", Value: name}
		switch {
		case ch.Value == "" && j >= 0:
			removes = append(removes, guard, JSONOp{Op: "remove", Path: at})
		case ch.Value == "" || j >= 0 && c.Env[j].Value == ch.Value && c.Env[j].ValueFrom == nil:
		case j >= 0:
			sets = append(sets, guard, JSONOp{Op: "replace", Path: at, Value: corev1.EnvVar{Name: name, Value: ch.Value}})
		case !hasEnv:
			sets = append(sets, JSONOp{Op: "add", Path: base + "/env", Value: []corev1.EnvVar{{Name: name, Value: ch.Value}}})
			hasEnv = true
		default:
			sets = append(sets, JSONOp{Op: "add", Path: base + "/env/-", Value: corev1.EnvVar{Name: name, Value: ch.Value}})
		}
	}
	if len(sets)+len(removes) == 0 {
		return nil
	}
	// Removals go last and from the highest index down, so earlier indexes stay valid; each
	// keeps its guard in front of it.
	slices.SortStableFunc(removes, func(a, b JSONOp) int { return envIndex(b) - envIndex(a) })
	guard := JSONOp{Op: "test", Path: base + "/name", Value: c.Name}
	return append(append([]JSONOp{guard}, sets...), removes...)
}

// envIndex is the env index an op addresses (its guard shares it).
func envIndex(op JSONOp) int {
	rest := op.Path[strings.LastIndex(op.Path, "/env/")+len("/env/"):]
	var i int
	_, _ = fmt.Sscan(strings.TrimSuffix(rest, "/name"), &i) // our own paths: a digit run
	return i
}

// AppliedHashes reads hashesAnnotation. A mangled value counts as empty, and so does "null",
// which would otherwise decode to a nil map that the next reload writes into.
func AppliedHashes(annotations map[string]string) map[string]string {
	var m map[string]string
	if err := json.Unmarshal([]byte(annotations[hashesAnnotation]), &m); err != nil || m == nil {
		return map[string]string{}
	}
	return m
}

func hashKey(r ConfigRef) string { return strings.ToLower(r.Kind) + "/" + r.Name }

// withChanges returns the applied-hashes map updated by changes, and whether it differs.
func withChanges(applied map[string]string, changes []Change) (map[string]string, bool) {
	next := maps.Clone(applied)
	for _, ch := range changes {
		v := ch.Value
		if v == "" {
			v = DeletedMarker
		}
		next[hashKey(ch.Ref)] = v
	}
	return next, !maps.Equal(applied, next)
}

// AnnotationOps implements the annotations strategy: the pod template gets stakater's
// last-reloaded-from annotation and the per-config hashes.
func AnnotationOps(ns string, tmpl *corev1.PodTemplateSpec, changes []Change, now time.Time) ([]JSONOp, error) {
	next, differs := withChanges(AppliedHashes(tmpl.Annotations), changes)
	if !differs {
		return nil, nil
	}
	last := changes[len(changes)-1]
	from, err := json.Marshal(map[string]any{
		"type": strings.ToUpper(last.Ref.Kind), "name": last.Ref.Name, "namespace": ns,
		"hash": next[hashKey(last.Ref)], "containerRefs": containerNames(&tmpl.Spec, last.Ref), "observedAt": now.Unix(),
	})
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", lastReloadedFrom, err)
	}
	return setAnnotations([]string{"spec", "template", "metadata"}, tmpl.Annotations, map[string]string{
		hashesAnnotation: mustJSON(next), lastReloadedFrom: string(from),
	}), nil
}

// RestartOps implements Argo Rollouts' restart strategy: spec.restartAt makes the Rollout
// replace its pods without a template change; the hashes go on the Rollout itself.
func RestartOps(meta metav1.Object, changes []Change, now time.Time) []JSONOp {
	next, differs := withChanges(AppliedHashes(meta.GetAnnotations()), changes)
	if !differs {
		return nil
	}
	ops := setAnnotations([]string{"metadata"}, meta.GetAnnotations(), map[string]string{hashesAnnotation: mustJSON(next)})
	return append(ops, JSONOp{Op: "add", Path: "/spec/restartAt", Value: now.UTC().Format(time.RFC3339)})
}

// forcedOps restart the pods without changing a marker: spec.restartAt for an Argo restart, a
// pod-template annotation otherwise.
func (t Target) forcedOps(meta metav1.Object, tmpl *corev1.PodTemplateSpec, now time.Time) []JSONOp {
	if t.RestartAt {
		return []JSONOp{{Op: "add", Path: "/spec/restartAt", Value: now.UTC().Format(time.RFC3339)}}
	}
	return setAnnotations([]string{"spec", "template", "metadata"}, tmpl.Annotations,
		map[string]string{RestartedAt: now.UTC().Format(time.RFC3339Nano)})
}

func setAnnotations(at []string, current, set map[string]string) []JSONOp {
	if current == nil {
		return []JSONOp{{Op: "add", Path: pointer(append(at, "annotations")...), Value: set}}
	}
	var ops []JSONOp
	for _, k := range slices.Sorted(maps.Keys(set)) {
		ops = append(ops, JSONOp{Op: "add", Path: pointer(append(at, "annotations", k)...), Value: set[k]})
	}
	return ops
}

func containerNames(spec *corev1.PodSpec, r ConfigRef) []string {
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
