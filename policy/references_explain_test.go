package policy_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/reloader/reloader/policy"
)

func TestReferencesToSaysHowWhereAndWhichKeysAConfigIsRead(t *testing.T) {
	yes := true
	ref := corev1.LocalObjectReference{Name: "app"}
	app := policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app"}
	cases := []struct {
		name string
		spec corev1.PodSpec
		want []policy.Reference
	}{
		{"envFrom", corev1.PodSpec{Containers: []corev1.Container{{Name: "web", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref}}}}}},
			[]policy.Reference{{How: policy.ReadEnvFrom, Container: "web"}}},
		{"optional key ref in an init container", corev1.PodSpec{InitContainers: []corev1.Container{{Name: "init", Env: []corev1.EnvVar{{Name: "LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref, Key: "level", Optional: &yes}}}}}}},
			[]policy.Reference{{How: policy.ReadEnvKey, Container: "init", Init: true, Env: "LEVEL", Optional: true, Keys: []string{"level"}}}},
		{"volume with items", corev1.PodSpec{Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref, Items: []corev1.KeyToPath{{Key: "a", Path: "a"}}}}}}},
			[]policy.Reference{{How: policy.ReadVolume, Volume: "cfg", Keys: []string{"a"}}}},
		{"optional projected source", corev1.PodSpec{Volumes: []corev1.Volume{{Name: "all", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref, Optional: &yes}}}}}}}},
			[]policy.Reference{{How: policy.ReadProjected, Volume: "all", Optional: true}}},
		{"a Secret of the same name", corev1.PodSpec{Containers: []corev1.Container{{Name: "web", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref}}}}}}, nil},
		{"volume and env, in order", corev1.PodSpec{
			Volumes:    []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref}}}},
			Containers: []corev1.Container{{Name: "web", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref}}}}}},
			[]policy.Reference{{How: policy.ReadVolume, Volume: "cfg"}, {How: policy.ReadEnvFrom, Container: "web"}}},
	}
	for _, c := range cases {
		if got := policy.ReferencesTo(&c.spec, app); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: ReferencesTo = %+v, want %+v", c.name, got, c.want)
		}
	}
}
