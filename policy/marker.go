package policy

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Target says where a workload carries its markers: the value, per config, of the content it was
// last reloaded for.
type Target struct {
	Strategy string // StrategyEnvVars or StrategyAnnotations
	// RestartAt: an Argo Rollout that asks for spec.restartAt keeps the hashes on its own metadata.
	RestartAt bool
}

// MarkerState is what a workload carries for one config, against the value it should carry.
type MarkerState int

const (
	// NoMarker: nothing for this config, because it was never reloaded for it or because
	// kubectl apply or helm upgrade stripped it. The state decides.
	NoMarker MarkerState = iota
	// Current: every copy of the marker holds the desired value.
	Current
	// Stale: some copy holds another value.
	Stale
)

// Marker reads what the workload carries for r against desired, the value for the config's
// current content ("" when the config does not exist). It is MarkerOf without a legacy value.
func (t Target) Marker(meta map[string]string, tmpl *corev1.PodTemplateSpec, r ConfigRef, desired string) MarkerState {
	return t.MarkerOf(meta, tmpl, r, Content{Value: desired})
}

// MarkerOf reads what the workload carries for r against want, the config's current content
// (want.Value "" when the config does not exist).
//
// For an existing config every place a marker can be is read, whatever the strategy: the env var,
// the pod template's hashes annotation and, for an Argo restart, the Rollout's own. The workload
// runs the current content if any of them holds it, so switching --reload-strategy, or a Rollout's
// rollout-strategy annotation, restarts nothing by itself. A copy made under a hash key the
// reloader no longer has says nothing, as if it were not there: the state decides, as for a
// stripped marker, so that a lost or rotated key restarts nothing. So does a copy that says too
// little (Undecided): one written before the workload's reload annotations switched between
// the whole config and some keys. A deletion is judged where the strategy marks it.
func (t Target) MarkerOf(meta map[string]string, tmpl *corev1.PodTemplateSpec, r ConfigRef, want Content) MarkerState {
	if want.Value == "" {
		if t.RestartAt {
			return hashMarker(meta, r, want)
		}
		if t.Strategy == StrategyAnnotations {
			return hashMarker(tmpl.Annotations, r, want)
		}
		return envMarker(tmpl, EnvVarName(r), want)
	}
	state := NoMarker
	for _, m := range []MarkerState{envMarker(tmpl, EnvVarName(r), want), hashMarker(tmpl.Annotations, r, want), hashMarker(meta, r, want)} {
		if m == Current {
			return Current
		}
		if m == Stale {
			state = Stale
		}
	}
	return state
}

// MarkedUnderOtherKey reports whether some copy of the workload's marker of r holds a value made
// under a hash key the reloader no longer has (want: the config's current content).
func MarkedUnderOtherKey(meta map[string]string, tmpl *corev1.PodTemplateSpec, r ConfigRef, want Content) bool {
	return slices.ContainsFunc(MarkerCopies(meta, tmpl, r), func(m MarkerCopy) bool { return want.Match(m.Value) == OtherKey })
}

// MarkerCopy is one copy of a workload's marker of a config: where it sits, and its value.
type MarkerCopy struct{ Place, Value string }

// MarkerCopies are the copies of the workload's marker of r in every place MarkerOf reads, in a
// fixed order: two lists differ when any copy was added, changed or removed.
func MarkerCopies(meta map[string]string, tmpl *corev1.PodTemplateSpec, r ConfigRef) []MarkerCopy {
	var out []MarkerCopy
	for _, c := range tmpl.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == EnvVarName(r) {
				out = append(out, MarkerCopy{"env of " + c.Name, e.Value})
			}
		}
	}
	if v, ok := appliedHash(tmpl.Annotations, r); ok {
		out = append(out, MarkerCopy{"template", v})
	}
	if v, ok := appliedHash(meta, r); ok {
		out = append(out, MarkerCopy{"workload", v})
	}
	return out
}

// appliedHash is r's entry in a hashes annotation, read without decoding when there is none (the
// common case: every judgement of a workload asks).
func appliedHash(annotations map[string]string, r ConfigRef) (string, bool) {
	if annotations[hashesAnnotation] == "" {
		return "", false
	}
	v, ok := AppliedHashes(annotations)[hashKey(r)]
	return v, ok
}

// copyOf is what one copy of a marker, holding v, says against want. For a deleted config
// (want.Value "") only DeletedMarker is current: with --reload-on-delete any other is to be
// set to it.
func copyOf(v string, want Content) MarkerState {
	if want.Value == "" {
		if v == DeletedMarker {
			return Current
		}
		return Stale
	}
	switch want.Match(v) {
	case Same:
		return Current
	case OtherKey, Undecided:
		return NoMarker
	}
	return Stale
}

// hashMarker reads r's entry in a hashes annotation (stakater's annotations strategy, Argo
// restarts); a deleted config's entry is DeletedMarker.
func hashMarker(annotations map[string]string, r ConfigRef, want Content) MarkerState {
	v, ok := appliedHash(annotations, r)
	if !ok {
		return NoMarker
	}
	return copyOf(v, want)
}

// envMarker reads r's variable in every container: one that is behind makes the marker stale.
func envMarker(tmpl *corev1.PodTemplateSpec, name string, want Content) MarkerState {
	state := NoMarker
	for _, c := range tmpl.Spec.Containers {
		for _, e := range c.Env {
			if e.Name != name {
				continue
			}
			m := copyOf(e.Value, want)
			if m == Stale || e.ValueFrom != nil {
				return Stale
			}
			if m == Current {
				state = Current
			}
		}
	}
	return state
}

// Ops returns the patch that gives the workload every change, or nil when it already holds
// them and none is forced. Its first op tests the resourceVersion the patch was computed from: a patch built from a
// cache that has not yet seen our own last write, or anyone else's, fails instead of adding a
// variable twice or undoing another writer.
func (t Target) Ops(meta metav1.Object, tmpl *corev1.PodTemplateSpec, changes []Change, now time.Time) ([]JSONOp, error) {
	if len(changes) == 0 {
		return nil, nil
	}
	var ops []JSONOp
	var err error
	switch {
	case t.RestartAt:
		ops = RestartOps(meta, changes, now)
	case t.Strategy == StrategyAnnotations:
		ops, err = AnnotationOps(meta.GetNamespace(), tmpl, changes, now)
	default:
		ops = EnvOps(tmpl, changes)
	}
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 && slices.ContainsFunc(changes, func(ch Change) bool { return ch.Force }) {
		ops = t.forcedOps(meta, tmpl, now)
	}
	if len(ops) == 0 {
		return nil, nil
	}
	guard := JSONOp{Op: "test", Path: "/metadata/resourceVersion", Value: meta.GetResourceVersion()}
	return append([]JSONOp{guard}, ops...), nil
}

// StakaterVar is the variable stakater Reloader keeps a config's hash in: STAKATER_, the name
// upper-cased with every run of other characters turned into one '_' (none at the start), then
// _CONFIGMAP or _SECRET. So "app--config" gives STAKATER_APP_CONFIG_CONFIGMAP.
func StakaterVar(r ConfigRef) string {
	var b strings.Builder
	b.WriteString("STAKATER_")
	valid := false
	for _, ch := range []byte(strings.ToUpper(r.Name)) {
		if 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' {
			b.WriteByte(ch)
			valid = true
			continue
		}
		if valid {
			b.WriteByte('_')
		}
		valid = false
	}
	return b.String() + "_" + strings.ToUpper(r.Kind)
}

// EnvValue returns the value of variable name in the first container that sets it.
func EnvValue(tmpl *corev1.PodTemplateSpec, name string) (string, bool) {
	for _, c := range AllContainers(&tmpl.Spec) {
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value, true
			}
		}
	}
	return "", false
}
