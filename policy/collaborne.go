package policy

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// CollaborneVar is the variable Collaborne kubernetes-reloader keeps a config's hash in:
// "_RELOADER_", "_", the kind and the name joined by "_", upper-cased, with every run of
// characters other than A-Z and 0-9 turned into one '_'. ConfigMap app-config gives
// _RELOADER_CONFIGMAP_APP_CONFIG (app.config gives the same: Collaborne does not tell them apart).
func CollaborneVar(r ConfigRef) string {
	var b strings.Builder
	run := false
	for _, ch := range []byte(strings.ToUpper("_RELOADER__" + r.Kind + "_" + r.Name)) {
		if 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' {
			b.WriteByte(ch)
			run = false
			continue
		}
		if !run {
			b.WriteByte('_')
		}
		run = true
	}
	return b.String()
}

// CollaborneMarker reads Collaborne's variable for r as a marker of the whole content, whose
// Collaborne hash is want: Current when the variable holds it, Stale when it holds another (a
// change Collaborne recorded in its state but never rolled out, say because it stopped inside
// its coalescing window), NoMarker without the variable. It is read only when the workload
// carries no marker of ours, and only for a workload that reads the whole config.
func CollaborneMarker(tmpl *corev1.PodTemplateSpec, r ConfigRef, want string) MarkerState {
	v, ok := EnvValue(tmpl, CollaborneVar(r))
	switch {
	case !ok:
		return NoMarker
	case v == want:
		return Current
	}
	return Stale
}

// collaborneRemovals are the guarded removals of every Collaborne variable in container c
// (base is its JSON pointer). They go with a reload, which restarts the pods anyway: the pods
// then load every config's current content, so no variable of Collaborne's is needed any more
// as a marker, and the state, which took over Collaborne's entries, decides for the configs
// that did not change.
func collaborneRemovals(c corev1.Container, base string) []JSONOp {
	var ops []JSONOp
	for j, e := range c.Env {
		if isCollaborneVar(e.Name) {
			at := base + pointer("env", fmt.Sprint(j))
			ops = append(ops, JSONOp{Op: "test", Path: at + "/name", Value: e.Name}, JSONOp{Op: "remove", Path: at})
		}
	}
	return ops
}

// isCollaborneVar reports a name CollaborneVar can give.
func isCollaborneVar(name string) bool {
	return strings.HasPrefix(name, "_RELOADER_CONFIGMAP_") || strings.HasPrefix(name, "_RELOADER_SECRET_")
}
