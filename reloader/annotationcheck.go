package reloader

import (
	"log/slog"
	"slices"
	"strings"

	"github.com/reloader/reloader/policy"
)

// annotationCheck reports a workload's reload annotations that are malformed or name configs
// that do not exist, once, when they are applied: as a Warning Event and a log line. A reload
// schedule or a safe-reload annotation that does not parse is said the same way, with the
// Warning the gate or the tracker would give when a reload comes (warnSchedule, warnFollow).
type annotationCheck struct {
	annotations policy.Annotations
	gate        policy.GateDefaults
	follow      policy.Follow
	caches      *caches
	reports     *reporter
	log         *slog.Logger
	ready       func() bool // whether the caches have synced: until then every config looks missing
}

// check reports a workload's malformed annotations, and the configs they name that do
// not exist, once as a Warning Event and a log line.
func (a *annotationCheck) check(k *workloadKind, obj any) {
	meta, tmpl := k.template(obj)
	if tmpl == nil || !a.caches.allowed(meta.GetNamespace()) {
		return
	}
	if !a.ready() {
		return // every config would look missing; checkAll runs once the caches synced
	}
	if g := a.annotations.GateOf(meta.GetAnnotations(), tmpl.Annotations, a.gate); len(g.Problems) > 0 {
		warnSchedule(a.reports, a.log, k.name, obj, meta, g.Problems)
	}
	_, followProblems := policy.FollowOf(meta.GetAnnotations(), tmpl.Annotations, a.follow)
	warnFollow(a.reports, a.log, k.name, obj, meta, followProblems)
	pol := a.annotations.Of(meta.GetAnnotations(), tmpl.Annotations)
	missing := a.caches.missingNamed(pol, meta.GetNamespace())
	uid := string(meta.GetUID())
	problems := append(slices.Clip(pol.Problems), missing...)
	if len(problems) == 0 {
		a.reports.clear(uid, "InvalidAnnotation")
		return
	}
	if !a.reports.warn(obj, uid, "InvalidAnnotation", strings.Join(problems, "; ")) {
		return
	}
	// Each log line says what is wrong: a malformed value, or a name that exists nowhere.
	log := a.log.With("kind", k.name, "namespace", meta.GetNamespace(), "name", meta.GetName())
	if len(pol.Problems) > 0 {
		log.Warn("malformed reload annotation", "problems", strings.Join(pol.Problems, "; "))
	}
	if len(missing) > 0 {
		log.Warn("a config named in a reload annotation does not exist", "problems", strings.Join(missing, "; "))
	}
}

// checkAll checks every cached workload's annotations once the caches have synced, for
// the checks that need them.
func (a *annotationCheck) checkAll() {
	for _, k := range a.caches.kinds {
		for _, obj := range k.list() {
			a.check(k, obj)
		}
	}
}
