package policy

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestHistoryRoundTripsAndStaysBounded(t *testing.T) {
	at := time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC)
	var entries []Entry
	for i := range 8 {
		entries = append(entries, Entry{At: at.Add(time.Duration(i) * time.Minute), Outcome: OutcomeFailed, RolledBack: i%2 == 0,
			Generation: int64(10 + i), Configs: []string{"ConfigMap/app@1a2b3c4d"}})
	}
	got := ParseHistory(FormatHistory(entries))
	if len(got) != MaxHistory {
		t.Fatalf("kept %d entries, want %d", len(got), MaxHistory)
	}
	for i, e := range got {
		if e.Generation != entries[i].Generation || e.RolledBack != entries[i].RolledBack || !e.At.Equal(entries[i].At) ||
			e.Outcome != OutcomeFailed || e.Configs[0] != "ConfigMap/app@1a2b3c4d" {
			t.Errorf("entry %d: got %+v, want %+v", i, e, entries[i])
		}
	}

	long := Entry{At: at, Outcome: OutcomeSucceeded, Generation: 1}
	for i := range 50 {
		long.Configs = append(long.Configs, fmt.Sprintf("ConfigMap/%s@%08d", strings.Repeat("n", 200), i))
	}
	v := FormatHistory([]Entry{long, long, long, long, long})
	if len(v) > maxHistoryBytes {
		t.Errorf("history of huge entries is %d bytes, want at most %d", len(v), maxHistoryBytes)
	}
	if !strings.Contains(v, "+46") {
		t.Errorf("history does not count the configs left out: %q", v)
	}
}

func TestParseHistorySkipsLinesItCannotRead(t *testing.T) {
	h := ParseHistory("garbage\n2026-11-23T16:00:00Z succeeded g4 ConfigMap/a@12345678\n2026 x y z")
	if len(h) != 1 || h[0].Generation != 4 || h[0].Outcome != OutcomeSucceeded {
		t.Fatalf("got %+v", h)
	}
	if _, ok := Pending(map[string]string{HistoryAnnotation: "2026-11-23T16:00:00Z progressing g4 ConfigMap/a@12345678"}); !ok {
		t.Error("a progressing newest entry is not pending")
	}
	if _, ok := Pending(map[string]string{HistoryAnnotation: h[0].String()}); ok {
		t.Error("a succeeded newest entry is pending")
	}
}

func TestRestorePutsTheReplacedEnvValuesBack(t *testing.T) {
	ref := ConfigRef{Kind: KindConfigMap, Name: "app"}
	other := ConfigRef{Kind: KindConfigMap, Name: "new"}
	before := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
		Env: []corev1.EnvVar{{Name: "X", Value: "1"}, {Name: EnvVarName(ref), Value: "old"}}}}}}
	target := Target{Strategy: StrategyEnvVars}
	r, ok := target.RestoreOf(before, []Change{{Ref: ref, Value: "new"}, {Ref: other, Value: "h"}})
	if !ok {
		t.Fatal("nothing to restore")
	}
	r, err := ParseRestore(r.Encode())
	if err != nil {
		t.Fatal(err)
	}
	after := before.DeepCopy()
	after.Spec.Containers[0].Env[1].Value = "new"
	after.Spec.Containers[0].Env = append(after.Spec.Containers[0].Env, corev1.EnvVar{Name: EnvVarName(other), Value: "h"})
	b, _ := json.Marshal(r.Ops(after))
	want := `[{"op":"test","path":"/spec/template/spec/containers/0/name","value":"c"},` +
		`{"op":"test","path":"/spec/template/spec/containers/0/env/1/name","value":"_RELOADER_-configmap-app"},` +
		`{"op":"replace","path":"/spec/template/spec/containers/0/env/1","value":{"name":"_RELOADER_-configmap-app","value":"old"}},` +
		`{"op":"test","path":"/spec/template/spec/containers/0/env/2/name","value":"_RELOADER_-configmap-new"},` +
		`{"op":"remove","path":"/spec/template/spec/containers/0/env/2"}]`
	if string(b) != want {
		t.Errorf("restore ops\n got %s\nwant %s", b, want)
	}
	if _, ok := (Target{RestartAt: true}).RestoreOf(before, nil); ok {
		t.Error("an Argo restart has a template to restore")
	}
}

func TestRestoreKeepsWhatThePodsRanWithoutAMarker(t *testing.T) {
	ref := ConfigRef{Kind: KindConfigMap, Name: "app"}
	other := ConfigRef{Kind: KindSecret, Name: "db"}
	r, _ := Target{Strategy: StrategyEnvVars}.RestoreOf(&corev1.PodTemplateSpec{},
		[]Change{{Ref: ref, Value: "new", Ran: "old"}, {Ref: other, Value: "h"}})
	r, err := ParseRestore(r.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"ConfigMap/app": "old"}; !maps.Equal(r.Ran, want) {
		t.Errorf("ran without a marker %v, want %v", r.Ran, want)
	}
}

func TestARestoreSinceAReloadThatNeverRolledOutPutsBackTheTemplateFromBeforeBoth(t *testing.T) {
	earlier := Restore{Strategy: StrategyEnvVars, Values: map[string]string{"ConfigMap/a": "", "Secret/s": "s0"},
		Applied: map[string]string{"ConfigMap/a": "deleted", "Secret/s": "s1"}, Ran: map[string]string{"ConfigMap/a": "a0"}}
	later := Restore{Strategy: StrategyEnvVars, Values: map[string]string{"ConfigMap/a": "deleted", "ConfigMap/b": "b0"},
		Applied: map[string]string{"ConfigMap/a": "a2", "ConfigMap/b": "b1"}}
	got := later.Since(earlier)
	want := Restore{Strategy: StrategyEnvVars, Values: map[string]string{"ConfigMap/a": "", "ConfigMap/b": "b0", "Secret/s": "s0"},
		Applied: map[string]string{"ConfigMap/a": "a2", "ConfigMap/b": "b1", "Secret/s": "s1"}, Ran: map[string]string{"ConfigMap/a": "a0"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("since\n got %+v\nwant %+v", got, want)
	}
	other := Restore{Strategy: StrategyAnnotations}
	if got := later.Since(other); !reflect.DeepEqual(got, later) {
		t.Errorf("a restore of another strategy was merged: %+v", got)
	}
}

func TestRestorePutsTheReplacedAnnotationsBack(t *testing.T) {
	before := &corev1.PodTemplateSpec{}
	before.Annotations = map[string]string{hashesAnnotation: `{"configmap/app":"old"}`}
	r, _ := Target{Strategy: StrategyAnnotations}.RestoreOf(before, nil)
	after := before.DeepCopy()
	after.Annotations = map[string]string{hashesAnnotation: `{"configmap/app":"new"}`, lastReloadedFrom: "{}"}
	b, _ := json.Marshal(r.Ops(after))
	want := `[{"op":"remove","path":"/spec/template/metadata/annotations/reloader.stakater.com~1last-reloaded-from"},` +
		`{"op":"add","path":"/spec/template/metadata/annotations/reloader~1config-hashes","value":"{\"configmap/app\":\"old\"}"}]`
	if string(b) != want {
		t.Errorf("restore ops\n got %s\nwant %s", b, want)
	}
}

func TestMetaAnnotationOpsCreateTheMapOnlyWhenMissing(t *testing.T) {
	v := "x"
	b, _ := json.Marshal(MetaAnnotationOps(nil, false, map[string]*string{HistoryAnnotation: &v, RestoreAnnotation: nil}))
	if string(b) != `[{"op":"add","path":"/metadata/annotations","value":{"reloader/history":"x"}}]` {
		t.Errorf("no map: %s", b)
	}
	b, _ = json.Marshal(MetaAnnotationOps(map[string]string{RestoreAnnotation: "{}"}, true, map[string]*string{HistoryAnnotation: &v, RestoreAnnotation: nil}))
	if string(b) != `[{"op":"add","path":"/metadata/annotations/reloader~1history","value":"x"},{"op":"remove","path":"/metadata/annotations/reloader~1restore"}]` {
		t.Errorf("map: %s", b)
	}
}

func TestAFollowedEntryKeepsItsTemplateAndOlderLinesStillRead(t *testing.T) {
	at := time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC)
	e := Entry{At: at, Outcome: OutcomeProgressing, Generation: 7, Template: "0123456789ab", Configs: []string{"ConfigMap/app@1a2b3c4d"}}
	if want := "2026-11-23T16:00:00Z progressing g7 t0123456789ab ConfigMap/app@1a2b3c4d"; e.String() != want {
		t.Errorf("line %q, want %q", e.String(), want)
	}
	got := ParseHistory(e.String() + "\n2026-11-23T15:00:00Z succeeded g5 ConfigMap/app@9e8f7a6b")
	if len(got) != 2 || got[0].Template != e.Template || got[0].Generation != 7 || got[0].Configs[0] != e.Configs[0] ||
		got[1].Template != "" || got[1].Generation != 5 || got[1].Configs[0] != "ConfigMap/app@9e8f7a6b" {
		t.Fatalf("got %+v", got)
	}
}

func TestTemplateAfterAppliesOnlyTheTemplateOpsAndTheHashSeesAnyChange(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "app:1"}}}}
	ref := ConfigRef{Kind: KindConfigMap, Name: "app"}
	ops := append(EnvOps(tmpl, []Change{{Ref: ref, Value: "abc"}}),
		JSONOp{Op: "test", Path: "/metadata/generation", Value: 3}, JSONOp{Op: "replace", Path: "/spec/paused", Value: false})
	after, err := TemplateAfter(tmpl, ops)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := EnvValue(after, EnvVarName(ref)); v != "abc" || after.Spec.Containers[0].Image != "app:1" {
		t.Fatalf("template after the ops: %+v", after)
	}
	if _, ok := EnvValue(tmpl, EnvVarName(ref)); ok {
		t.Error("TemplateAfter changed the template it was given")
	}
	same := after.DeepCopy()
	other := after.DeepCopy()
	other.Spec.Containers[0].Image = "app:2"
	if TemplateHash(same) != TemplateHash(after) || TemplateHash(other) == TemplateHash(after) || TemplateHash(tmpl) == TemplateHash(after) {
		t.Error("the template hash does not tell templates apart, or tells equal ones apart")
	}
	if _, err := TemplateAfter(tmpl, []JSONOp{{Op: "test", Path: "/spec/template/spec/containers/0/name", Value: "x"}}); err == nil {
		t.Error("a failing test op applied")
	}
}

func TestARolloutTimesOutNoSoonerThanItsTimeoutAfterTheReload(t *testing.T) {
	const timeout = 3 * time.Second
	for _, reload := range []time.Time{
		time.Date(2026, 11, 25, 22, 36, 40, 0, time.UTC),
		time.Date(2026, 11, 25, 22, 36, 40, 689_000_000, time.UTC),
		time.Date(2026, 11, 25, 22, 36, 40, 999_999_999, time.UTC),
	} {
		line := Entry{At: reload, Outcome: OutcomeProgressing, Generation: 2, Configs: []string{"ConfigMap/app@1a2b3c4d"}}.String()
		read, ok := parseReload(line)
		if !ok {
			t.Fatalf("history line %q does not read back", line)
		}
		deadline := read.Deadline(timeout)
		if deadline.Before(reload.Add(timeout)) {
			t.Errorf("reload at %s: deadline %s is before the timeout has passed", reload.Format(time.StampMilli), deadline.Format(time.StampMilli))
		}
		if deadline.After(reload.Add(timeout + time.Second)) {
			t.Errorf("reload at %s: deadline %s is more than a second late", reload.Format(time.StampMilli), deadline.Format(time.StampMilli))
		}
	}
}

// The annotation is for people to read: named fields, one per line. A rollout followed across an
// upgrade carries the compact form older versions wrote, which still reads the same.
func TestRestoreIsReadableAndTheCompactFormStillReads(t *testing.T) {
	r := Restore{Strategy: StrategyEnvVars, Values: map[string]string{"ConfigMap/app": "old"}, Applied: map[string]string{"ConfigMap/app": "new"}}
	enc := r.Encode()
	for _, want := range []string{"\n", `"strategy": "env-vars"`, `"replaced": {`, `"ConfigMap/app": "old"`, `"applied": {`} {
		if !strings.Contains(enc, want) {
			t.Errorf("the annotation lacks %q:\n%s", want, enc)
		}
	}
	for _, v := range []string{enc, `{"s":"env-vars","v":{"ConfigMap/app":"old"},"h":{"ConfigMap/app":"new"}}`} {
		got, err := ParseRestore(v)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("ParseRestore(%s) = %+v, %v; want %+v", v, got, err, r)
		}
	}
	if _, err := ParseRestore(`{}`); err == nil {
		t.Error("a restore without a strategy reads")
	}
}
