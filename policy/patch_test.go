package policy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// applyOps applies envOps to a Deployment-shaped document, as the API server would.
func applyOps(t *testing.T, tmpl corev1.PodTemplateSpec, changes []Change) (corev1.PodTemplateSpec, int) {
	t.Helper()
	ops := EnvOps(&tmpl, changes)
	doc, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": tmpl}})
	if len(ops) == 0 {
		return tmpl, 0
	}
	body, _ := json.Marshal(ops)
	p, err := jsonpatch.DecodePatch(body)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(doc)
	if err != nil {
		t.Fatalf("apply %s: %v", body, err)
	}
	var got struct {
		Spec struct{ Template corev1.PodTemplateSpec } `json:"spec"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	return got.Spec.Template, len(ops)
}

func names(env []corev1.EnvVar) []string {
	var out []string
	for _, e := range env {
		out = append(out, e.Name+"="+e.Value)
	}
	return out
}

func TestEnvOpsResultingEnv(t *testing.T) {
	cm := func(n string) ConfigRef { return ConfigRef{Kind: KindConfigMap, Name: n} }
	many := []corev1.EnvVar{{Name: "USER", Value: "u"}}
	var manyChanges []Change
	for i := range 12 {
		many = append(many, corev1.EnvVar{Name: EnvVarName(cm(fmt.Sprint("c", i))), Value: "old"})
		manyChanges = append(manyChanges, Change{Ref: cm(fmt.Sprint("c", i))})
	}
	manyDeleted := []string{"USER=u"}
	for i := range 12 {
		manyDeleted = append(manyDeleted, EnvVarName(cm(fmt.Sprint("c", i)))+"="+DeletedMarker)
	}
	tests := []struct {
		name    string
		env     []corev1.EnvVar
		changes []Change
		want    []string
		noOps   bool
	}{
		{"adds the env list when there is none", nil, []Change{{Ref: cm("a"), Value: "h1"}}, []string{"_RELOADER_-configmap-a=h1"}, false},
		{"appends and keeps user vars", []corev1.EnvVar{{Name: "USER", Value: "u"}}, []Change{{Ref: cm("a"), Value: "h1"}, {Ref: cm("b"), Value: "h2"}},
			[]string{"USER=u", "_RELOADER_-configmap-a=h1", "_RELOADER_-configmap-b=h2"}, false},
		{"replaces in place", []corev1.EnvVar{{Name: "_RELOADER_-configmap-a", Value: "old"}, {Name: "USER", Value: "u"}}, []Change{{Ref: cm("a"), Value: "new"}},
			[]string{"_RELOADER_-configmap-a=new", "USER=u"}, false},
		{"current value means no ops", []corev1.EnvVar{{Name: "_RELOADER_-configmap-a", Value: "h1"}}, []Change{{Ref: cm("a"), Value: "h1"}},
			[]string{"_RELOADER_-configmap-a=h1"}, true},
		{"marks deleted configs, even past index 9", many, manyChanges, manyDeleted, false},
		{"marks a deletion where there was no var", []corev1.EnvVar{{Name: "USER", Value: "u"}}, []Change{{Ref: cm("a"), Value: ""}},
			[]string{"USER=u", "_RELOADER_-configmap-a=deleted"}, false},
		{"a deletion already marked means no ops", []corev1.EnvVar{{Name: "_RELOADER_-configmap-a", Value: DeletedMarker}}, []Change{{Ref: cm("a")}},
			[]string{"_RELOADER_-configmap-a=deleted"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: tt.env}}}}
			got, n := applyOps(t, tmpl, tt.changes)
			if (n == 0) != tt.noOps {
				t.Fatalf("%d ops, want no ops = %v", n, tt.noOps)
			}
			if g := names(got.Spec.Containers[0].Env); !reflect.DeepEqual(g, tt.want) && !(len(g) == 0 && len(tt.want) == 0) {
				t.Fatalf("env = %v, want %v", g, tt.want)
			}
		})
	}
}

func TestEnvOpsGuardAgainstAReorderedEnv(t *testing.T) {
	read := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		Env: []corev1.EnvVar{{Name: "_RELOADER_-configmap-a", Value: "old"}, {Name: "USER", Value: "u"}}}}}}
	ops := EnvOps(&read, []Change{{Ref: ConfigRef{Kind: KindConfigMap, Name: "a"}, Value: "new"}})
	// Meanwhile someone reordered the variables: the patch must fail, not overwrite USER.
	now := map[string]any{"spec": map[string]any{"template": corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		Env: []corev1.EnvVar{{Name: "USER", Value: "u"}, {Name: "_RELOADER_-configmap-a", Value: "old"}}}}}}}}
	doc, _ := json.Marshal(now)
	body, _ := json.Marshal(ops)
	p, _ := jsonpatch.DecodePatch(body)
	if _, err := p.Apply(doc); err == nil {
		t.Fatal("the patch applied to a reordered env list")
	}
}

// A forced change restarts a workload whose markers already hold every value, and only then: for
// each strategy, the template (or spec.restartAt) changes, and an unforced change does nothing.
func TestAForcedChangeRestartsAWorkloadWhoseMarkersAreCurrent(t *testing.T) {
	ref := ConfigRef{Kind: KindConfigMap, Name: "a"}
	now := time.Date(2026, 11, 26, 1, 2, 3, 4, time.UTC)
	meta := &metav1.ObjectMeta{Name: "w", ResourceVersion: "7", Annotations: map[string]string{hashesAnnotation: `{"configmap/a":"h1"}`}}
	tmpl := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{hashesAnnotation: `{"configmap/a":"h1"}`}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: EnvVarName(ref), Value: "h1"}}}}},
	}
	for _, target := range []Target{{Strategy: StrategyEnvVars}, {Strategy: StrategyAnnotations}, {Strategy: StrategyEnvVars, RestartAt: true}} {
		if ops, _ := target.Ops(meta, tmpl, []Change{{Ref: ref, Value: "h1"}}, now); ops != nil {
			t.Errorf("%+v: an unforced current change gave %v, want no ops", target, ops)
		}
		ops, err := target.Ops(meta, tmpl, []Change{{Ref: ref, Value: "h1", Force: true}}, now)
		if err != nil || len(ops) != 2 {
			t.Fatalf("%+v: a forced change gave %v, %v; want the guard and one restarting op", target, ops, err)
		}
		want := "/spec/template/metadata/annotations/reloader~1restarted-at"
		if target.RestartAt {
			want = "/spec/restartAt"
		}
		if ops[1].Path != want {
			t.Errorf("%+v: forced op at %s, want %s", target, ops[1].Path, want)
		}
	}
}
