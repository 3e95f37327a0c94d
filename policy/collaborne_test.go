package policy

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestCollaborneVar(t *testing.T) {
	for _, tc := range []struct {
		ref  ConfigRef
		want string
	}{
		{ConfigRef{Kind: KindConfigMap, Name: "app-config"}, "_RELOADER_CONFIGMAP_APP_CONFIG"},
		{ConfigRef{Kind: KindSecret, Name: "db"}, "_RELOADER_SECRET_DB"},
		{ConfigRef{Kind: KindConfigMap, Name: "a..b--c"}, "_RELOADER_CONFIGMAP_A_B_C"},
		{ConfigRef{Kind: KindConfigMap, Name: "x-"}, "_RELOADER_CONFIGMAP_X_"},
	} {
		if got := CollaborneVar(tc.ref); got != tc.want {
			t.Errorf("CollaborneVar(%v) = %s, want %s", tc.ref, got, tc.want)
		}
	}
}

func TestCollaborneMarker(t *testing.T) {
	r := ConfigRef{Kind: KindConfigMap, Name: "app-config"}
	tmpl := func(env ...corev1.EnvVar) *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b", Env: env}}}}
	}
	for _, tc := range []struct {
		name string
		tmpl *corev1.PodTemplateSpec
		want MarkerState
	}{
		{"absent", tmpl(corev1.EnvVar{Name: "USER", Value: "x"}), NoMarker},
		{"current, in any container", tmpl(corev1.EnvVar{Name: "_RELOADER_CONFIGMAP_APP_CONFIG", Value: "c1"}), Current},
		{"a change Collaborne never rolled out", tmpl(corev1.EnvVar{Name: "_RELOADER_CONFIGMAP_APP_CONFIG", Value: "c0"}), Stale},
	} {
		if got := CollaborneMarker(tc.tmpl, r, "c1"); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A reload sets our variable and drops every Collaborne variable, in whichever container
// Collaborne put it; a workload that needs no reload gets no patch for them.
func TestEnvOpsDropCollaborneVariablesWithAReload(t *testing.T) {
	a := ConfigRef{Kind: KindConfigMap, Name: "a"}
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{
			{Name: "first", Env: []corev1.EnvVar{{Name: "_RELOADER_CONFIGMAP_A", Value: "c"}, {Name: "USER", Value: "u"}, {Name: "_RELOADER_SECRET_B", Value: "s"}}},
			{Name: "reader", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}}}}},
		}}}
	got, _ := applyOps(t, tmpl, []Change{{Ref: a, Value: "h1"}})
	if g := names(got.Spec.Containers[0].Env); !reflect.DeepEqual(g, []string{"USER=u"}) {
		t.Fatalf("first container env = %v", g)
	}
	if g := names(got.Spec.Containers[1].Env); !reflect.DeepEqual(g, []string{"_RELOADER_-configmap-a=h1"}) {
		t.Fatalf("reader container env = %v", g)
	}
	tmpl.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "_RELOADER_-configmap-a", Value: "h1"}}
	if _, n := applyOps(t, tmpl, []Change{{Ref: a, Value: "h1"}}); n != 0 {
		t.Fatalf("%d ops for a workload already current: Collaborne's variables alone must not restart it", n)
	}
}

// A state entry Collaborne wrote for the current content is current; one for other content is a
// change made while switching.
func TestReloadTakesOverCollaborneStateEntries(t *testing.T) {
	f := facts{Exists: true, Hash: "ours", Collaborne: "c1", Marker: NoMarker}
	f.State = Recorded{Known: true, Hash: "c1"}
	if got, _ := reload(f); got {
		t.Error("Collaborne's entry for the current content reloads")
	}
	f.State = Recorded{Known: true, Hash: "c0"}
	if got, _ := reload(f); !got {
		t.Error("Collaborne's entry for other content does not reload")
	}
}
