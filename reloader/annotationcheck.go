package reloader

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/report"
	"github.com/reloader/reloader/reloader/jobs"
	"github.com/reloader/reloader/reloader/safe"
	"github.com/reloader/reloader/reloader/workload"
)

// annotationCheck reports a workload's reload annotations that are malformed or name configs
// that do not exist, keys under the reloader's prefixes that it does not read, and a Rollout
// whose pod template is another object's, once, when they are applied: as a Warning Event and
// a log line. Once is per workload and message, in memory: a restart says it again. A reload
// schedule or a safe-reload annotation that does not parse is said the same way, with the
// Warning the gate or the tracker would give when a reload comes (safe.WarnSchedule, safe.WarnFollow).
type annotationCheck struct {
	annotations policy.Annotations
	gate        policy.GateDefaults
	follow      policy.Follow
	caches      *caches
	reports     *report.Reporter
	log         *slog.Logger
	ready       func() bool // whether the caches have synced: until then every config looks missing

	knownOnce sync.Once
	known     []string // the annotation keys the reloader reads or writes (knownKeys)
}

// knownKeys lists the annotation keys the reloader reads or writes, under the configured names.
func (a *annotationCheck) knownKeys() []string {
	a.knownOnce.Do(func() { a.known = a.annotations.KnownKeys(jobs.PendingAnnotation) })
	return a.known
}

// check reports a workload's malformed or unknown annotations, and the configs they name that
// do not exist, once as a Warning Event and a log line.
func (a *annotationCheck) check(k *workload.Kind, obj any) {
	meta, tmpl := k.Template(obj)
	elsewhere := false
	if k.TemplateRef != nil {
		kind, _ := k.TemplateRef(obj)
		elsewhere = kind != ""
	}
	if tmpl == nil && !elsewhere || !a.caches.allowed(meta.GetNamespace()) {
		return
	}
	if !a.ready() {
		return // every config would look missing; checkAll runs once the caches synced
	}
	if k.TemplateRef != nil {
		a.checkTemplateRef(k, obj, meta)
	}
	if tmpl == nil {
		a.checkKeys(k, obj, meta, nil)
		return
	}
	a.checkKeys(k, obj, meta, tmpl.Annotations)
	if g := a.annotations.GateOf(meta.GetAnnotations(), tmpl.Annotations, a.gate); len(g.Problems) > 0 {
		safe.WarnSchedule(a.reports, a.log, k.Name, obj, meta, g.Problems)
	}
	_, followProblems := policy.FollowOf(meta.GetAnnotations(), tmpl.Annotations, a.follow)
	safe.WarnFollow(a.reports, a.log, k.Name, obj, meta, followProblems)
	pol := a.annotations.Of(meta.GetAnnotations(), tmpl.Annotations)
	missing := a.caches.missingNamed(pol, meta.GetNamespace())
	uid := string(meta.GetUID())
	problems := append(slices.Clip(pol.Problems), missing...)
	if len(problems) == 0 {
		a.reports.Clear(uid, "InvalidAnnotation")
		return
	}
	if !a.reports.Warn(obj, uid, "InvalidAnnotation", strings.Join(problems, "; ")) {
		return
	}
	// Each log line says what is wrong: a malformed value, or a name that exists nowhere.
	log := a.log.With("kind", k.Name, "namespace", meta.GetNamespace(), "name", meta.GetName())
	if len(pol.Problems) > 0 {
		log.Warn("malformed reload annotation", "problems", strings.Join(pol.Problems, "; "))
	}
	if len(missing) > 0 {
		log.Warn("a config named in a reload annotation does not exist, or a pattern matches none", "problems", strings.Join(missing, "; "))
	}
}

// checkKeys reports the keys under the reloader's prefixes that it neither reads nor writes,
// each with the nearest key it reads.
func (a *annotationCheck) checkKeys(k *workload.Kind, obj any, meta metav1.Object, tmpl map[string]string) {
	uid := string(meta.GetUID())
	unknown := a.annotations.UnknownKeys(a.knownKeys(), meta.GetAnnotations(), tmpl)
	if len(unknown) == 0 {
		a.reports.Clear(uid, "UnknownAnnotation")
		return
	}
	msgs, keys := make([]string, len(unknown)), make([]string, len(unknown))
	for i, u := range unknown {
		msgs[i], keys[i] = u.String(), u.Key
	}
	if a.reports.Warn(obj, uid, "UnknownAnnotation", strings.Join(msgs, "; ")) {
		a.log.Warn("an annotation under the reloader's prefixes is not one it reads", "kind", k.Name,
			"namespace", meta.GetNamespace(), "name", meta.GetName(), "keys", strings.Join(keys, ","))
	}
}

// keysChanged reports whether an update that changes nothing the reloader reads adds or drops
// a key checkKeys reports: it is checked then, as it would be if the key were spelt right.
func (a *annotationCheck) keysChanged(old, obj metav1.Object) bool {
	known := a.knownKeys()
	return !slices.Equal(a.annotations.UnknownKeys(known, old.GetAnnotations()), a.annotations.UnknownKeys(known, obj.GetAnnotations()))
}

// checkTemplateRef reports a workload whose own reload annotations cannot apply: its pod
// template is another object's (an Argo Rollout's spec.workloadRef), and the reloader writes no
// template beside the reference. A change of that object's template is what rolls it out.
func (a *annotationCheck) checkTemplateRef(k *workload.Kind, obj any, meta metav1.Object) {
	uid := string(meta.GetUID())
	msg := a.templateRefProblem(k, obj, meta)
	if msg == "" {
		a.reports.Clear(uid, "TemplateElsewhere")
		return
	}
	if a.reports.Warn(obj, uid, "TemplateElsewhere", msg) {
		kind, name := k.TemplateRef(obj)
		a.log.Warn("a workload's reload annotations cannot apply: its pod template is another object's", "kind", k.Name,
			"namespace", meta.GetNamespace(), "name", meta.GetName(), "templateOf", fmt.Sprintf("%s %q", kind, name))
	}
}

// templateRefProblem is what TemplateElsewhere says of a workload whose pod template is another
// object's and whose annotations ask for reloads; "" when there is nothing to say.
func (a *annotationCheck) templateRefProblem(k *workload.Kind, obj any, meta metav1.Object) string {
	kind, name := k.TemplateRef(obj)
	if kind == "" || !a.annotations.Of(meta.GetAnnotations(), nil).RequestsReload() {
		return ""
	}
	ref := fmt.Sprintf("%s %q", kind, name)
	todo := fmt.Sprintf("put the reload annotations on %s instead: the reloader then changes its template, and Argo Rollouts rolls this %s out from it", ref, k.Name)
	if kind != "Deployment" {
		todo = fmt.Sprintf("the reloader does not reload a %s: reference a Deployment carrying the reload annotations, or give this %s its own spec.template", kind, k.Name)
	}
	return fmt.Sprintf("%s's pod template is %s's (spec.workloadRef), so the reloader does not reload it from its own annotations; %s", k.Name, ref, todo)
}

// problems are what the Warning Events of check say of a workload's annotations, as explain
// tells them: unknown keys, the workload's own template reference, schedules and follow
// annotations that do not parse, malformed reload annotations and configs they name that do
// not exist.
func (a *annotationCheck) problems(k *workload.Kind, obj any) []string {
	meta, tmpl := k.Template(obj)
	var tmplAnn map[string]string
	if tmpl != nil {
		tmplAnn = tmpl.Annotations
	}
	var out []string
	for _, u := range a.annotations.UnknownKeys(a.knownKeys(), meta.GetAnnotations(), tmplAnn) {
		out = append(out, u.String())
	}
	if k.TemplateRef != nil {
		if p := a.templateRefProblem(k, obj, meta); p != "" {
			out = append(out, p)
		}
	}
	if tmpl == nil {
		return out
	}
	out = append(out, a.annotations.GateOf(meta.GetAnnotations(), tmpl.Annotations, a.gate).Problems...)
	_, follow := policy.FollowOf(meta.GetAnnotations(), tmpl.Annotations, a.follow)
	out = append(out, follow...)
	pol := a.annotations.Of(meta.GetAnnotations(), tmpl.Annotations)
	out = append(out, pol.Problems...)
	return append(out, a.caches.missingNamed(pol, meta.GetNamespace())...)
}

// checkAll checks every cached workload's annotations once the caches have synced, for
// the checks that need them.
func (a *annotationCheck) checkAll() {
	for _, k := range a.caches.kinds {
		for obj := range k.All() {
			a.check(k, obj)
		}
	}
}
