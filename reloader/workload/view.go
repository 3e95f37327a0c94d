package workload

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/policy"
)

// View is a cached workload read once: its metadata, template, annotations policy and
// the configs its pod spec uses.
type View struct {
	Key    Key
	Kind   *Kind
	Obj    any
	Meta   metav1.Object
	Tmpl   *corev1.PodTemplateSpec
	Policy policy.Policy
	Uses   map[policy.ConfigRef]policy.Use
	Target policy.Target
}
