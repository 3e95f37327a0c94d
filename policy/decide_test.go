package policy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestReloadRule(t *testing.T) {
	const a, b = "aaaa", "bbbb"
	live := func(h string) Recorded { return Recorded{Known: true, Hash: h} }
	tomb := func(h string) Recorded { return Recorded{Known: true, Deleted: true, Hash: h} }
	tests := []struct {
		name string
		f    Facts
		want bool
	}{
		{"marker holds the current content", Facts{Exists: true, Hash: a, Marker: Current, State: live(b)}, false},
		{"marker holds other content, whatever the state says (a revert after a partial rollout)", Facts{Exists: true, Hash: a, Marker: Stale, State: live(a)}, true},
		{"no marker, state holds the current content (stripped by helm upgrade)", Facts{Exists: true, Hash: a, State: live(a)}, false},
		{"no marker, state holds other content", Facts{Exists: true, Hash: a, State: live(b)}, true},
		{"no marker, key-level, its keys unchanged", Facts{Exists: true, Hash: a, State: live(b), KeyLevel: true, KeysSame: true}, false},
		{"no marker, key-level, a key it reads changed", Facts{Exists: true, Hash: a, State: live(b), KeyLevel: true}, true},
		{"no marker, never recorded (first start, corrupt entry, new scope)", Facts{Exists: true, Hash: a}, false},
		{"never recorded, even with --reload-on-create", Facts{Exists: true, Hash: a, ReloadOnCreate: true}, false},
		{"never recorded, stakater missed a change", Facts{Exists: true, Hash: a, StakaterStale: true}, true},
		{"recreated with other content", Facts{Exists: true, Hash: a, State: tomb(b)}, true},
		{"recreated with the same content", Facts{Exists: true, Hash: a, State: tomb(a)}, false},
		{"appeared after being absent, without --reload-on-create", Facts{Exists: true, Hash: a, State: tomb("")}, false},
		{"appeared after being absent, with --reload-on-create", Facts{Exists: true, Hash: a, State: tomb(""), ReloadOnCreate: true}, true},
		{"deleted, without --reload-on-delete", Facts{Marker: Stale, State: live(a)}, false},
		{"deleted, with --reload-on-delete, marker still there", Facts{Marker: Stale, State: live(a), ReloadOnDelete: true}, true},
		{"deleted, with --reload-on-delete, marker gone", Facts{Marker: NoMarker, State: live(a), ReloadOnDelete: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Reload(tt.f); got != tt.want {
				t.Fatalf("Reload = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMarker(t *testing.T) {
	r := ConfigRef{KindConfigMap, "x"}
	name := EnvVarName(r)
	ctr := func(v ...string) corev1.Container {
		c := corev1.Container{Name: "c"}
		for _, s := range v {
			c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: s})
		}
		return c
	}
	tmpl := func(cs ...corev1.Container) *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: cs}}
	}
	env := Target{Strategy: StrategyEnvVars}
	ann := Target{Strategy: StrategyAnnotations}
	withHashes := func(v string) *corev1.PodTemplateSpec {
		t := tmpl(ctr())
		t.Annotations = map[string]string{"reloader/config-hashes": `{"configmap/x":"` + v + `"}`}
		return t
	}
	tests := []struct {
		name    string
		target  Target
		meta    map[string]string
		tmpl    *corev1.PodTemplateSpec
		desired string
		want    MarkerState
	}{
		{"env: none", env, nil, tmpl(ctr()), "h", NoMarker},
		{"env: current", env, nil, tmpl(ctr("h")), "h", Current},
		{"env: stale", env, nil, tmpl(ctr("old")), "h", Stale},
		{"env: one container behind", env, nil, tmpl(ctr("h"), ctr("old")), "h", Stale},
		{"env: a container without it does not count", env, nil, tmpl(ctr("h"), ctr()), "h", Current},
		{"env: config deleted, variable still there", env, nil, tmpl(ctr("h")), "", Stale},
		{"env: config deleted, variable gone", env, nil, tmpl(ctr()), "", NoMarker},
		{"annotations: none", ann, nil, tmpl(ctr()), "h", NoMarker},
		{"annotations: current", ann, nil, withHashes("h"), "h", Current},
		{"annotations: stale", ann, nil, withHashes("old"), "h", Stale},
		{"annotations: deleted and marked so", ann, nil, withHashes(DeletedMarker), "", Current},
		{"restartAt: hashes on the Rollout itself", Target{RestartAt: true}, map[string]string{"reloader/config-hashes": `{"configmap/x":"h"}`}, tmpl(ctr()), "h", Current},
		// After a switch of --reload-strategy the other place may hold the current content.
		{"env: variable stale, the annotation current", env, nil, func() *corev1.PodTemplateSpec { t := withHashes("h"); t.Spec.Containers[0] = ctr("old"); return t }(), "h", Current},
		{"annotations: annotation stale, the variable current", ann, nil, func() *corev1.PodTemplateSpec { t := withHashes("old"); t.Spec.Containers[0] = ctr("h"); return t }(), "h", Current},
		{"annotations: both stale", ann, nil, func() *corev1.PodTemplateSpec { t := withHashes("old"); t.Spec.Containers[0] = ctr("old"); return t }(), "h", Stale},
		{"restartAt: the template's variable current", Target{RestartAt: true}, map[string]string{"reloader/config-hashes": `{"configmap/x":"old"}`}, tmpl(ctr("h")), "h", Current},
		{"env: config deleted, only the annotation left", env, nil, withHashes("h"), "", NoMarker},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.target.Marker(tt.meta, tt.tmpl, r, tt.desired); got != tt.want {
				t.Fatalf("Marker = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStakaterVarMatchesStakatersNaming(t *testing.T) {
	for _, tt := range []struct {
		ref  ConfigRef
		want string
	}{
		{ConfigRef{KindConfigMap, "app-config"}, "STAKATER_APP_CONFIG_CONFIGMAP"},
		{ConfigRef{KindConfigMap, "app--config"}, "STAKATER_APP_CONFIG_CONFIGMAP"},
		{ConfigRef{KindConfigMap, "app.-config"}, "STAKATER_APP_CONFIG_CONFIGMAP"},
		{ConfigRef{KindSecret, "db.creds"}, "STAKATER_DB_CREDS_SECRET"},
		{ConfigRef{KindSecret, "x-"}, "STAKATER_X__SECRET"},
	} {
		if got := StakaterVar(tt.ref); got != tt.want {
			t.Errorf("StakaterVar(%v) = %q, want %q", tt.ref, got, tt.want)
		}
	}
}
