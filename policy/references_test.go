package policy_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/reloader/reloader/policy"
)

func TestWaitsOnlyForAReferenceNotMarkedOptional(t *testing.T) {
	yes, no := true, false
	ref := corev1.LocalObjectReference{Name: "db"}
	db := policy.ConfigRef{Kind: policy.KindSecret, Name: "db"}
	cases := []struct {
		name string
		spec corev1.PodSpec
		want bool
	}{
		{"envFrom", corev1.PodSpec{Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref}}}}}}, true},
		{"optional envFrom", corev1.PodSpec{Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref, Optional: &yes}}}}}}, false},
		{"key ref optional false", corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref, Key: "p", Optional: &no}}}}}}}, true},
		{"optional key ref in an init container", corev1.PodSpec{InitContainers: []corev1.Container{{Env: []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref, Key: "p", Optional: &yes}}}}}}}, false},
		{"volume", corev1.PodSpec{Volumes: []corev1.Volume{{VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}}}}, true},
		{"optional projected source", corev1.PodSpec{Volumes: []corev1.Volume{{VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{LocalObjectReference: ref, Optional: &yes}}}}}}}}, false},
		{"a ConfigMap of the same name", corev1.PodSpec{Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref}}}}}}, false},
	}
	for _, c := range cases {
		if got := policy.Waits(&c.spec, db); got != c.want {
			t.Errorf("%s: Waits = %v, want %v", c.name, got, c.want)
		}
	}
}
