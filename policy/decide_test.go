package policy

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Values of two contents a and b: a Secret's keyed hashes under the current key (id 2b39b88d)
// and under another, and their plain legacy hashes.
const (
	plainA    = "3f7a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a"
	plainB    = "a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c1b2a3f7"
	keyedA    = "hmac-2b39b88d-0000000000000000000000000000000000000001"
	keyedB    = "hmac-2b39b88d-0000000000000000000000000000000000000002"
	otherKeyA = "hmac-77777777-0000000000000000000000000000000000000001"
	otherKeyB = "hmac-77777777-0000000000000000000000000000000000000002"
)

func TestContentMatch(t *testing.T) {
	secret := Content{Value: keyedA, Legacy: plainA}
	configMap := Content{Value: plainA}
	tests := []struct {
		name string
		c    Content
		v    string
		want Match
	}{
		{"secret: this content under the current key", secret, keyedA, Same},
		{"secret: other content under the current key", secret, keyedB, Differs},
		{"secret: this content as an earlier version wrote it", secret, plainA, Same},
		{"secret: other content as an earlier version wrote it", secret, plainB, Differs},
		{"secret: a value under another key, whatever its content", secret, otherKeyA, OtherKey},
		{"secret: another key's value of other content", secret, otherKeyB, OtherKey},
		{"secret: garbage", secret, "old", Differs},
		{"secret: malformed keyed value", secret, "hmac-7777-0000000000000000000000000000000000000001", Differs},
		{"secret: empty", secret, "", Differs},
		{"configmap: this content", configMap, plainA, Same},
		{"configmap: other content", configMap, plainB, Differs},
		{"configmap: a keyed value was never ours to compare", configMap, keyedA, OtherKey},
		{"configmap: the deleted marker", configMap, DeletedMarker, Differs},
		{"keys: the whole current content's marker vouches for every key", Content{Value: plainA, Whole: plainB}, plainB, Same},
		{"keys: another whole content's marker does not", Content{Value: plainA, Whole: plainB}, keyedA[len(keyedA)-40:], Differs},
		{"whole: the current value of the keys the pod reads says nothing of the others", Content{Value: plainB, Undecided: []string{plainA}}, plainA, Undecided},
		{"whole: a Secret's keys, keyed", Content{Value: keyedB, Legacy: plainB, Undecided: []string{keyedA, plainA}}, keyedA, Undecided},
		{"whole: a Secret's keys, as an earlier version wrote them", Content{Value: keyedB, Legacy: plainB, Undecided: []string{keyedA, plainA}}, plainA, Undecided},
		{"whole: the whole current content wins over a part equal to it", Content{Value: plainA, Undecided: []string{plainA}}, plainA, Same},
		{"whole: an older value of the keys is other content", Content{Value: plainB, Undecided: []string{plainA}}, keyedA[len(keyedA)-40:], Differs},
		{"whole: an empty value is never undecided", Content{Value: plainB, Undecided: []string{plainA, ""}}, "", Differs},
		{"keys: the whole content the state records leaves it to the state", Content{Value: plainA, Whole: plainB, Undecided: []string{keyedA[len(keyedA)-40:]}}, keyedA[len(keyedA)-40:], Undecided},
		{"keys: the whole current content is still current", Content{Value: plainA, Whole: plainB, Undecided: []string{plainB}}, plainB, Same},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.Match(tt.v); got != tt.want {
				t.Fatalf("Match(%q) = %v, want %v", tt.v, got, tt.want)
			}
		})
	}
}

func TestReloadRule(t *testing.T) {
	const a, b = "aaaa", "bbbb"
	live := func(h string) Recorded { return Recorded{Known: true, Hash: h} }
	tomb := func(h string) Recorded { return Recorded{Known: true, Deleted: true, Hash: h} }
	t0 := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	tombAt := func(h string, at time.Time) Recorded { return Recorded{Known: true, Deleted: true, Hash: h, Since: at} }
	tests := []struct {
		name string
		f    facts
		want bool
	}{
		{"marker holds the current content", facts{Exists: true, Hash: a, Marker: Current, State: live(b)}, false},
		{"marker holds other content, whatever the state says (a revert after a partial rollout)", facts{Exists: true, Hash: a, Marker: Stale, State: live(a)}, true},
		{"no marker, state holds the current content (stripped by helm upgrade)", facts{Exists: true, Hash: a, State: live(a)}, false},
		{"no marker, state holds other content", facts{Exists: true, Hash: a, State: live(b)}, true},
		{"no marker, key-level, its keys unchanged", facts{Exists: true, Hash: a, State: live(b), KeyLevel: true, KeysSame: true}, false},
		{"no marker, key-level, a key it reads changed", facts{Exists: true, Hash: a, State: live(b), KeyLevel: true}, true},
		{"no marker, never recorded (first start, corrupt entry, new scope)", facts{Exists: true, Hash: a}, false},
		{"never recorded, even with --reload-on-create", facts{Exists: true, Hash: a, ReloadOnCreate: true}, false},
		{"never recorded, stakater missed a change", facts{Exists: true, Hash: a, StakaterStale: true}, true},
		{"recreated with other content", facts{Exists: true, Hash: a, State: tomb(b)}, true},
		{"recreated with the same content", facts{Exists: true, Hash: a, State: tomb(a)}, false},
		{"appeared after being absent, without --reload-on-create", facts{Exists: true, Hash: a, State: tomb("")}, false},
		{"appeared after being absent, with --reload-on-create", facts{Exists: true, Hash: a, State: tomb(""), ReloadOnCreate: true}, true},
		{"deleted, without --reload-on-delete", facts{Marker: Stale, State: live(a)}, false},
		{"deleted, with --reload-on-delete, marker still there", facts{Marker: Stale, State: live(a), ReloadOnDelete: true}, true},
		{"deleted, with --reload-on-delete, marker set to the deletion", facts{Marker: Current, State: tomb(a), ReloadOnDelete: true}, false},
		{"deleted, with --reload-on-delete, no marker, seen deleted now: it ran the content", facts{Marker: NoMarker, State: live(a), ReloadOnDelete: true}, true},
		{"deleted, with --reload-on-delete, no marker, created before the deletion", facts{Marker: NoMarker, State: tombAt(a, t0), Created: t0.Add(-time.Hour), ReloadOnDelete: true}, true},
		{"deleted, with --reload-on-delete, no marker, created in the deletion's second", facts{Marker: NoMarker, State: tombAt(a, t0), Created: t0, ReloadOnDelete: true}, true},
		{"deleted, with --reload-on-delete, no marker, created after the deletion: never read it", facts{Marker: NoMarker, State: tombAt(a, t0), Created: t0.Add(time.Second), ReloadOnDelete: true}, false},
		{"deleted, with --reload-on-delete, no marker, no content was rolled out", facts{Marker: NoMarker, State: tombAt("", t0), Created: t0.Add(-time.Hour), ReloadOnDelete: true}, false},
		{"deleted, with --reload-on-delete, no marker, never recorded", facts{Marker: NoMarker, ReloadOnDelete: true}, false},
		{"deleted, without --reload-on-delete, no marker, it ran the content", facts{Marker: NoMarker, State: live(a)}, false},
		// Secrets: the state may hold what an earlier version wrote, or a value under a lost key.
		{"no marker, state holds the legacy plain hash of this content (upgrade)", facts{Exists: true, Hash: keyedA, Legacy: plainA, State: live(plainA)}, false},
		{"no marker, state holds the legacy plain hash of other content (changed during the upgrade)", facts{Exists: true, Hash: keyedA, Legacy: plainA, State: live(plainB)}, true},
		{"no marker, state holds this content under the current key", facts{Exists: true, Hash: keyedA, Legacy: plainA, State: live(keyedA)}, false},
		{"no marker, state holds other content under the current key", facts{Exists: true, Hash: keyedA, Legacy: plainA, State: live(keyedB)}, true},
		{"no marker, state holds a value under a lost key: cannot tell, no restart", facts{Exists: true, Hash: keyedA, Legacy: plainA, State: live(otherKeyB)}, false},
		{"recreated, tombstone under a lost key", facts{Exists: true, Hash: keyedA, Legacy: plainA, State: tomb(otherKeyB)}, false},
		{"recreated, tombstone holds the legacy hash of other content", facts{Exists: true, Hash: keyedA, Legacy: plainA, State: tomb(plainB)}, true},
		{"appeared after being absent, marked under a lost key: rolled out by a process that did not record it", facts{Exists: true, Hash: keyedA, State: tomb(""), ReloadOnCreate: true, MarkedUnderOtherKey: true}, false},
		{"no marker, key-level, state under a lost key", facts{Exists: true, Hash: keyedA, Legacy: plainA, State: live(otherKeyB), KeyLevel: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := reload(tt.f); got != tt.want {
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

// TestMarkerUnderKeys: a Secret's marker may be keyed under the current key, keyed under a key
// the reloader no longer has (judged through the state, as a stripped one is), or plain, as
// versions before keyed hashes wrote it (judged against the plain hash of the current content).
func TestMarkerUnderKeys(t *testing.T) {
	r := ConfigRef{KindSecret, "db"}
	name := EnvVarName(r)
	tmpl := func(vs ...string) *corev1.PodTemplateSpec {
		t := &corev1.PodTemplateSpec{}
		for _, v := range vs {
			t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: "c", Env: []corev1.EnvVar{{Name: name, Value: v}}})
		}
		return t
	}
	hashes := func(v string) *corev1.PodTemplateSpec {
		t := tmpl("")
		t.Spec.Containers[0].Env = nil
		t.Annotations = map[string]string{"reloader/config-hashes": `{"secret/db":"` + v + `"}`}
		return t
	}
	env := Target{Strategy: StrategyEnvVars}
	ann := Target{Strategy: StrategyAnnotations}
	want := Content{Value: keyedA, Legacy: plainA}
	tests := []struct {
		name   string
		target Target
		tmpl   *corev1.PodTemplateSpec
		want   Content
		got    MarkerState
	}{
		{"env: current key, this content", env, tmpl(keyedA), want, Current},
		{"env: current key, other content", env, tmpl(keyedB), want, Stale},
		{"env: another key: no marker, the state decides", env, tmpl(otherKeyA), want, NoMarker},
		{"env: another key, even of other content", env, tmpl(otherKeyB), want, NoMarker},
		{"env: legacy plain hash of this content (upgrade)", env, tmpl(plainA), want, Current},
		{"env: legacy plain hash of other content (changed during the upgrade)", env, tmpl(plainB), want, Stale},
		{"env: one container under another key, one current", env, tmpl(otherKeyA, keyedA), want, Current},
		{"env: one container under another key, one stale", env, tmpl(otherKeyA, keyedB), want, Stale},
		{"env: a plain marker is not legacy without a legacy value", env, tmpl(plainA), Content{Value: keyedA}, Stale},
		{"env: deleted config, marker under another key still to remove", env, tmpl(otherKeyA), Content{}, Stale},
		{"env: the keys the pod reads, reloaded on the whole: the state decides", env, tmpl(keyedA), Content{Value: keyedB, Undecided: []string{keyedA}}, NoMarker},
		{"env: one container holds the keys, one the whole content", env, tmpl(keyedA, keyedB), Content{Value: keyedB, Undecided: []string{keyedA}}, Current},
		{"env: one container holds the keys, one an older whole content", env, tmpl(keyedA, keyedB[:14]+"0000000000000000000000000000000000000009"), Content{Value: keyedB, Undecided: []string{keyedA}}, Stale},
		{"annotations: the keys the pod reads: the state decides", ann, hashes(keyedA), Content{Value: keyedB, Undecided: []string{keyedA}}, NoMarker},
		{"annotations: another key", ann, hashes(otherKeyA), want, NoMarker},
		{"annotations: legacy of this content", ann, hashes(plainA), want, Current},
		{"annotations: legacy of other content", ann, hashes(plainB), want, Stale},
		{"annotations: current key", ann, hashes(keyedA), want, Current},
		{"annotations: deleted config, marked so", ann, hashes(DeletedMarker), Content{}, Current},
		{"annotations: deleted config, marker under another key", ann, hashes(otherKeyA), Content{}, Stale},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.target.MarkerOf(nil, tt.tmpl, r, tt.want); got != tt.got {
				t.Fatalf("MarkerOf = %v, want %v", got, tt.got)
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

func TestMarkedUnderOtherKeyReadsEveryPlaceAMarkerCanBe(t *testing.T) {
	r := ConfigRef{Kind: KindSecret, Name: "db"}
	want := Content{Value: keyedA, Legacy: plainA}
	env := func(v string) *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{{Name: EnvVarName(r), Value: v}}}}}}
	}
	hashes := func(v string) map[string]string {
		return map[string]string{hashesAnnotation: `{"secret/db":"` + v + `"}`}
	}
	tests := []struct {
		name string
		meta map[string]string
		tmpl *corev1.PodTemplateSpec
		want bool
	}{
		{"env var under another key", nil, env(otherKeyA), true},
		{"env var under the current key, other content", nil, env(keyedB), false},
		{"env var of the legacy plain hash", nil, env(plainA), false},
		{"template annotation under another key", nil, &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: hashes(otherKeyB)}}, true},
		{"workload annotation under another key (Argo restartAt)", hashes(otherKeyB), &corev1.PodTemplateSpec{}, true},
		{"no marker", nil, &corev1.PodTemplateSpec{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MarkedUnderOtherKey(tt.meta, tt.tmpl, r, want); got != tt.want {
				t.Fatalf("MarkedUnderOtherKey = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMarkerCopiesDifferWhenAnyCopyIsAddedChangedOrRemoved(t *testing.T) {
	r := ConfigRef{Kind: KindConfigMap, Name: "db"}
	tmpl := func(env string, ann string) *corev1.PodTemplateSpec {
		t := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
		if env != "" {
			t.Spec.Containers[0].Env = []corev1.EnvVar{{Name: EnvVarName(r), Value: env}}
		}
		if ann != "" {
			t.Annotations = map[string]string{hashesAnnotation: `{"configmap/db":"` + ann + `"}`}
		}
		return t
	}
	base := MarkerCopies(nil, tmpl("a", "a"), r)
	if len(base) != 2 {
		t.Fatalf("copies %v, want the env var and the template annotation", base)
	}
	for name, other := range map[string][]MarkerCopy{
		"env changed":         MarkerCopies(nil, tmpl("b", "a"), r),
		"env removed":         MarkerCopies(nil, tmpl("", "a"), r),
		"annotation changed":  MarkerCopies(nil, tmpl("a", "b"), r),
		"annotation removed":  MarkerCopies(nil, tmpl("a", ""), r),
		"workload copy added": MarkerCopies(map[string]string{hashesAnnotation: `{"configmap/db":"a"}`}, tmpl("a", "a"), r),
	} {
		if slices.Equal(base, other) {
			t.Errorf("%s: copies %v equal %v", name, other, base)
		}
	}
	if !slices.Equal(base, MarkerCopies(nil, tmpl("a", "a"), r)) {
		t.Error("the same copies differ")
	}
}
