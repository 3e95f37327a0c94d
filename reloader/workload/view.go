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

// Read reads obj of kind once: its metadata, template, reload policy under annotations and the
// configs its pod spec uses, without a Target (the rule's); false when it has no pod template.
func Read(kind *Kind, obj any, annotations policy.Annotations) (View, bool) {
	meta, tmpl := kind.Template(obj)
	if tmpl == nil {
		return View{}, false
	}
	return View{
		Key:    Key{Kind: kind.Name, Namespace: meta.GetNamespace(), Name: meta.GetName()},
		Kind:   kind,
		Obj:    obj,
		Meta:   meta,
		Tmpl:   tmpl,
		Policy: annotations.Of(meta.GetAnnotations(), tmpl.Annotations),
		Uses:   policy.UsesOf(&tmpl.Spec),
	}, true
}
