package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
)

// Workload annotations of safe reloads, under the reloader's own prefix.
const (
	// HistoryAnnotation holds the workload's last reloads, newest first, one per line.
	HistoryAnnotation = "reloader/history"
	// RollbackAnnotation "true" undoes a reload whose rollout fails or times out ("false" opts
	// out of --rollback).
	RollbackAnnotation = "reloader/rollback"
	// TimeoutAnnotation is how long a rollout may take before it counts as timed out.
	TimeoutAnnotation = "reloader/rollout-timeout"
	// RestoreAnnotation holds, while a reload with rollback on is followed, the marker values the
	// reload replaced: what a rollback puts back.
	RestoreAnnotation = "reloader/restore"
)

// Outcomes of a reload's rollout.
const (
	OutcomeProgressing = "progressing"
	OutcomeSucceeded   = "succeeded"
	OutcomeFailed      = "failed"
	OutcomeTimedOut    = "timed-out"
	OutcomeSuperseded  = "superseded"
)

// History bounds: the annotation keeps the last MaxHistory reloads, names at most
// maxHistoryConfigs configs per reload, and never exceeds maxHistoryBytes.
const (
	MaxHistory        = 5
	maxHistoryConfigs = 4
	maxHistoryBytes   = 2048
	rolledBackSuffix  = "+rolled-back"
	templatePrefix    = "t"
	stoppedPrefix     = "s"
	templateHashLen   = 12
)

// Entry is one reload of a workload's history.
type Entry struct {
	At         time.Time
	Outcome    string
	RolledBack bool
	// Generation is the workload generation the reload's patch produced: its rollout is done
	// when the controller has observed it.
	Generation int64
	// Template is the short hash (TemplateHash) of the whole pod template the reload's patch
	// made, kept while its rollout is followed: the rollout is the reload's only while the
	// template is still that one. "" when unknown (a line written before it was recorded).
	Template string
	// Stopped is when the rollout's timeout clock stopped because its owner paused it (whole
	// seconds); zero while the clock runs (StopClock, StartClock).
	Stopped time.Time
	// Configs are "<Kind>/<name>@<hash prefix>"; past maxHistoryConfigs, "+<n>" counts the rest.
	Configs []string
}

// NamesRollbackOf reports whether a history annotation names a rolled-back reload that applied
// config, named as Entry.Configs names it. Only a history that names a rollback is parsed.
func NamesRollbackOf(history, config string) bool {
	if !strings.Contains(history, rolledBackSuffix) {
		return false
	}
	return slices.ContainsFunc(ParseHistory(history), func(e Entry) bool {
		return e.RolledBack && slices.Contains(e.Configs, config)
	})
}

// String is the entry's line:
// "<RFC 3339 time> <outcome>[+rolled-back] g<generation> [t<template>] [s<RFC 3339 time>] <configs>".
func (r Entry) String() string {
	outcome := r.Outcome
	if r.RolledBack {
		outcome += rolledBackSuffix
	}
	configs := r.Configs
	if len(configs) > maxHistoryConfigs {
		configs = append(configs[:maxHistoryConfigs:maxHistoryConfigs], "+"+strconv.Itoa(len(r.Configs)-maxHistoryConfigs))
	}
	gen := "g" + strconv.FormatInt(r.Generation, 10)
	if r.Template != "" {
		gen += " " + templatePrefix + r.Template
	}
	if !r.Stopped.IsZero() {
		gen += " " + stoppedPrefix + r.Stopped.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s %s %s %s", r.At.UTC().Format(time.RFC3339), outcome, gen, strings.Join(configs, ","))
}

// ParseHistory reads the annotation; lines it cannot read (edited by hand) are skipped.
func ParseHistory(v string) []Entry {
	var out []Entry
	for line := range strings.SplitSeq(v, "\n") {
		if r, ok := parseReload(line); ok {
			out = append(out, r)
		}
	}
	return out
}

// parseReload reads a line; the optional fields between the generation and the configs (a
// template, a stopped clock) may be absent, as versions before them wrote none.
func parseReload(line string) (Entry, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[2], "g") {
		return Entry{}, false
	}
	at, err := time.Parse(time.RFC3339, f[0])
	if err != nil {
		return Entry{}, false
	}
	gen, err := strconv.ParseInt(f[2][1:], 10, 64)
	if err != nil {
		return Entry{}, false
	}
	outcome, rolledBack := strings.CutSuffix(f[1], rolledBackSuffix)
	e := Entry{At: at, Outcome: outcome, RolledBack: rolledBack, Generation: gen, Configs: strings.Split(f[len(f)-1], ",")}
	for _, opt := range f[3 : len(f)-1] {
		if v, ok := strings.CutPrefix(opt, stoppedPrefix); ok && e.Stopped.IsZero() {
			if e.Stopped, err = time.Parse(time.RFC3339, v); err != nil {
				return Entry{}, false
			}
		} else if v, ok := strings.CutPrefix(opt, templatePrefix); ok && e.Template == "" {
			e.Template = v
		} else {
			return Entry{}, false
		}
	}
	return e, true
}

// TemplateHash is a short hash of a whole pod template, as the API server returns it.
func TemplateHash(tmpl *corev1.PodTemplateSpec) string {
	b, _ := json.Marshal(tmpl) // a PodTemplateSpec always encodes
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:templateHashLen]
}

// TemplateAfter is the pod template a patch makes of tmpl: its ops that address the template
// (at /spec/template, as every op of a reload does) applied to a copy; the others are ignored.
func TemplateAfter(tmpl *corev1.PodTemplateSpec, ops []JSONOp) (*corev1.PodTemplateSpec, error) {
	const at = "/spec/template"
	var own []JSONOp
	for _, op := range ops {
		if op.Path == at || strings.HasPrefix(op.Path, at+"/") {
			own = append(own, op)
		}
	}
	var doc struct {
		Spec struct {
			Template *corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	doc.Spec.Template = tmpl
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode the pod template: %w", err)
	}
	body, err := json.Marshal(own)
	if err != nil {
		return nil, fmt.Errorf("encode the template's ops: %w", err)
	}
	p, err := jsonpatch.DecodePatch(body)
	if err != nil {
		return nil, fmt.Errorf("decode the template's ops: %w", err)
	}
	if raw, err = p.Apply(raw); err != nil {
		return nil, fmt.Errorf("apply the template's ops: %w", err)
	}
	doc.Spec.Template = nil
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("decode the patched pod template: %w", err)
	}
	return doc.Spec.Template, nil
}

// FormatHistory writes entries, newest first, keeping the newest MaxHistory that fit in
// maxHistoryBytes.
func FormatHistory(entries []Entry) string {
	var b strings.Builder
	for i, r := range entries[:min(len(entries), MaxHistory)] {
		line := r.String()
		if i > 0 && b.Len()+1+len(line) > maxHistoryBytes {
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line[:min(len(line), maxHistoryBytes)])
	}
	return b.String()
}

// HistoryTest is a JSON patch op that fails unless the history annotation still holds v: an
// outcome is written over the history it was judged from, or not at all.
func HistoryTest(v string) JSONOp {
	return JSONOp{Op: "test", Path: pointer("metadata", "annotations", HistoryAnnotation), Value: v}
}

// Pending returns the newest entry if its rollout is still being followed.
func Pending(annotations map[string]string) (Entry, bool) {
	h := ParseHistory(annotations[HistoryAnnotation])
	if len(h) == 0 || h[0].Outcome != OutcomeProgressing {
		return Entry{}, false
	}
	return h[0], true
}

// Restore is what a reload replaced, per config: the marker value before it ("" when there was
// none), in the place the strategy keeps it. RestoreAnnotation holds it as indented JSON, for
// people to read.
type Restore struct {
	Strategy string            `json:"strategy"`
	Values   map[string]string `json:"replaced"` // env-vars: "<Kind>/<name>" → previous value
	// Annotations are the pod-template annotations of the annotations strategy before the
	// reload; a key mapped to nil was absent.
	Annotations map[string]*string `json:"replacedAnnotations,omitempty"`
	// Applied are the values the reload wrote, "<Kind>/<name>" → value: what a rollback holds.
	Applied map[string]string `json:"applied"`
	// Ran are, for configs the workload carried no marker of, the content its pods ran before the
	// reload, as the state said: the pods a rollback puts back run it, and no marker says so.
	Ran map[string]string `json:"ranWithoutMarker,omitempty"`
}

// compactRestore is how versions before the readable form wrote RestoreAnnotation; a rollout
// followed across an upgrade still carries it.
type compactRestore struct {
	Strategy    string             `json:"s"`
	Values      map[string]string  `json:"v"`
	Annotations map[string]*string `json:"a"`
	Applied     map[string]string  `json:"h"`
}

// RestoreOf records what the reload of changes replaces in tmpl. An Argo restart (spec.restartAt)
// replaces no template, so it has nothing to restore.
func (t Target) RestoreOf(tmpl *corev1.PodTemplateSpec, changes []Change) (Restore, bool) {
	if t.RestartAt {
		return Restore{}, false
	}
	r := Restore{Strategy: t.Strategy, Values: map[string]string{}, Applied: map[string]string{}}
	for _, ch := range changes {
		r.Applied[ch.Ref.Kind+"/"+ch.Ref.Name] = ch.Value
		if ch.Ran != "" {
			if r.Ran == nil {
				r.Ran = map[string]string{}
			}
			r.Ran[ch.Ref.Kind+"/"+ch.Ref.Name] = ch.Ran
		}
	}
	if t.Strategy == StrategyAnnotations {
		r.Annotations = map[string]*string{}
		for _, k := range []string{hashesAnnotation, lastReloadedFrom} {
			if v, ok := tmpl.Annotations[k]; ok {
				r.Annotations[k] = &v
			} else {
				r.Annotations[k] = nil
			}
		}
		return r, true
	}
	for _, ch := range changes {
		v, _ := EnvValue(tmpl, EnvVarName(ch.Ref))
		r.Values[ch.Ref.Kind+"/"+ch.Ref.Name] = v
	}
	return r, true
}

// Since is r for a reload patched in before the rollout of the one it supersedes, earlier, began
// (a paused Deployment rolls nothing out): a rollback must put back the template from before
// both, so a config keeps the value earlier replaced, and the contents both applied are held.
func (r Restore) Since(earlier Restore) Restore {
	if earlier.Strategy != r.Strategy {
		return r
	}
	out := Restore{Strategy: r.Strategy, Values: map[string]string{}, Applied: map[string]string{}, Annotations: earlier.Annotations}
	maps.Copy(out.Values, r.Values)
	maps.Copy(out.Values, earlier.Values)
	maps.Copy(out.Applied, earlier.Applied)
	maps.Copy(out.Applied, r.Applied)
	if len(r.Ran)+len(earlier.Ran) > 0 {
		out.Ran = map[string]string{}
		maps.Copy(out.Ran, r.Ran)
		maps.Copy(out.Ran, earlier.Ran)
	}
	return out
}

// RestoreRef is the config a key of Restore.Values or Restore.Applied ("<Kind>/<name>") names.
func RestoreRef(key string) ConfigRef {
	kind, name, _ := strings.Cut(key, "/")
	return ConfigRef{Kind: kind, Name: name}
}

// Encode is the Restore as RestoreAnnotation holds it.
func (r Restore) Encode() string {
	b, _ := json.MarshalIndent(r, "", "  ") // strings and maps of strings always encode
	return string(b)
}

// ParseRestore reads RestoreAnnotation, in either form.
func ParseRestore(v string) (Restore, error) {
	var r Restore
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return Restore{}, fmt.Errorf("read %s: %w", RestoreAnnotation, err)
	}
	if r.Strategy != "" {
		return r, nil
	}
	var old compactRestore
	if err := json.Unmarshal([]byte(v), &old); err != nil || old.Strategy == "" {
		return Restore{}, fmt.Errorf("read %s: no strategy", RestoreAnnotation)
	}
	return Restore{Strategy: old.Strategy, Values: old.Values, Annotations: old.Annotations, Applied: old.Applied}, nil
}

// Ops puts the template back as the reload found it: the same template the previous ReplicaSet
// (or revision) was made from, so its controller scales that one back up.
func (r Restore) Ops(tmpl *corev1.PodTemplateSpec) []JSONOp {
	if r.Strategy == StrategyAnnotations {
		var ops []JSONOp
		at := []string{"spec", "template", "metadata", "annotations"}
		for _, k := range slices.Sorted(maps.Keys(r.Annotations)) {
			v := r.Annotations[k]
			_, has := tmpl.Annotations[k]
			switch {
			case v != nil:
				ops = append(ops, JSONOp{Op: "add", Path: pointer(append(at, k)...), Value: *v})
			case has:
				ops = append(ops, JSONOp{Op: "remove", Path: pointer(append(at, k)...)})
			}
		}
		return ops
	}
	var changes []Change
	for _, ref := range slices.Sorted(maps.Keys(r.Values)) {
		v := r.Values[ref]
		kind, name, _ := strings.Cut(ref, "/")
		changes = append(changes, Change{Ref: ConfigRef{Kind: kind, Name: name}, Value: v})
	}
	return setEnv(tmpl, changes)
}

// MetaAnnotationOps sets (value non-nil) or removes (nil) metadata annotations. exists says whether
// the object has an annotations map, or an earlier op of the same patch creates one.
func MetaAnnotationOps(current map[string]string, exists bool, set map[string]*string) []JSONOp {
	if !exists {
		m := map[string]string{}
		for k, v := range set {
			if v != nil {
				m[k] = *v
			}
		}
		if len(m) == 0 {
			return nil
		}
		return []JSONOp{{Op: "add", Path: "/metadata/annotations", Value: m}}
	}
	var ops []JSONOp
	for _, k := range slices.Sorted(maps.Keys(set)) {
		v := set[k]
		p := pointer("metadata", "annotations", k)
		if v != nil {
			ops = append(ops, JSONOp{Op: "add", Path: p, Value: *v})
		} else if _, has := current[k]; has {
			ops = append(ops, JSONOp{Op: "remove", Path: p})
		}
	}
	return ops
}

// Deadline is when the reload's rollout times out. The history keeps its time to the second,
// so the reload happened within the second after At: the deadline counts from the end of that
// second, never before the timeout has passed (the checker saw rollbacks 2.4 s after a reload
// with a 3 s timeout).
func (r Entry) Deadline(timeout time.Duration) time.Time {
	return r.At.Truncate(time.Second).Add(time.Second + timeout)
}

// StopClock stops the entry's timeout clock at now, while its owner keeps the rollout paused;
// a stopped clock stays stopped at its first time.
func (r Entry) StopClock(now time.Time) Entry {
	if r.Stopped.IsZero() {
		r.Stopped = now.UTC().Truncate(time.Second)
	}
	return r
}

// StartClock runs the stopped clock again at now: the reload's time moves on by the whole
// seconds it was stopped, rounded up, so that the deadline lies as far past the resume as it
// lay past the pause, never nearer. A stop after now (a clock set back, a forged line) stopped
// nothing.
func (r Entry) StartClock(now time.Time) Entry {
	if r.Stopped.IsZero() {
		return r
	}
	if paused := now.Sub(r.Stopped); paused > 0 {
		r.At = r.At.Add(paused.Truncate(time.Second))
		if paused%time.Second != 0 {
			r.At = r.At.Add(time.Second)
		}
	}
	r.Stopped = time.Time{}
	return r
}
