package checker

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/policy"
)

// The checker's workloads of every kind, through the dynamic client: one way to create, read,
// update and watch them, with the pod template at the kind's own path. A Deployment is what
// generator versions 1 and 2 make.

// wkind is where a kind lives in the API and where its pod template is.
type wkind struct {
	GVR      schema.GroupVersionResource
	tmplPath []string
}

var WorkloadKinds = map[string]wkind{
	KindDeployment:  {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, []string{"spec", "template"}},
	kindStatefulSet: {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, []string{"spec", "template"}},
	kindDaemonSet:   {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}, []string{"spec", "template"}},
	KindCronJob:     {schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}, []string{"spec", "jobTemplate", "spec", "template"}},
	KindJob:         {schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, []string{"spec", "template"}},
	KindRollout:     {RolloutGVR, []string{"spec", "template"}}, // gen 10, in sequences with Argo Rollouts
}

// KindOrDefault is a create-workload's kind: generator versions before 3 make Deployments.
func KindOrDefault(k string) string {
	if k == "" {
		return KindDeployment
	}
	return k
}

// TemplateKinds are the kinds whose template changes in place; a Job's is immutable, and
// its reload is a new Job under the same name.
var TemplateKinds = []string{KindDeployment, kindStatefulSet, kindDaemonSet, KindCronJob}

// Object is a workload as the checker reads it: the object, and its pod template decoded.
type Object struct {
	kind     string
	Obj      *unstructured.Unstructured
	Template corev1.PodTemplateSpec
}

func DecodeWorkload(kind string, u *unstructured.Unstructured) (*Object, error) {
	o := &Object{kind: kind, Obj: u}
	raw, found, err := unstructured.NestedMap(u.Object, WorkloadKinds[kind].tmplPath...)
	if err != nil || !found {
		return nil, fmt.Errorf("%s %s has no pod template: %v", kind, u.GetName(), err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &o.Template); err != nil {
		return nil, fmt.Errorf("decode the pod template of %s %s: %w", kind, u.GetName(), err)
	}
	return o, nil
}

// Store writes the (edited) pod template back into the object.
func (o *Object) Store() error {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&o.Template)
	if err != nil {
		return fmt.Errorf("encode the pod template of %s %s: %w", o.kind, o.Obj.GetName(), err)
	}
	return unstructured.SetNestedMap(o.Obj.Object, raw, WorkloadKinds[o.kind].tmplPath...)
}

// Annotations are where the workload's reload annotations sit: its metadata's, or its pod
// template's (onTemplate).
func (o *Object) Annotations(onTemplate bool) map[string]string {
	if onTemplate {
		if o.Template.Annotations == nil {
			o.Template.Annotations = map[string]string{}
		}
		return o.Template.Annotations
	}
	a := o.Obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	return a
}

// SetAnnotations stores what annotations(onTemplate) returned, after an edit.
func (o *Object) SetAnnotations(onTemplate bool, a map[string]string) {
	if !onTemplate {
		o.Obj.SetAnnotations(a)
	}
}

func (o *Object) controller() types.UID {
	for _, r := range o.Obj.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller {
			return r.UID
		}
	}
	return ""
}

// NewWorkload is the object create-workload makes: nothing runs for long or on a schedule (no
// replicas, suspended Jobs, CronJobs scheduled once a year whose Jobs are suspended; a
// suspended CronJob runs no Job for a reload), so a sequence costs the cluster little, yet every
// reload is seen: a template change, a CronJob's run (a new Job), a Job created again.
func NewWorkload(kind, name string, meta map[string]string, tmpl corev1.PodTemplateSpec) (*unstructured.Unstructured, error) {
	zero, yes := int32(0), true
	om := metav1.ObjectMeta{Name: name, Annotations: meta}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	var obj runtime.Object
	switch kind {
	case KindDeployment:
		obj = &appsv1.Deployment{ObjectMeta: om, Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: sel, Template: tmpl}}
	case kindStatefulSet:
		obj = &appsv1.StatefulSet{ObjectMeta: om, Spec: appsv1.StatefulSetSpec{Replicas: &zero, Selector: sel, ServiceName: name, Template: tmpl}}
	case kindDaemonSet:
		obj = &appsv1.DaemonSet{ObjectMeta: om, Spec: appsv1.DaemonSetSpec{Selector: sel, Template: tmpl}}
	case KindCronJob:
		obj = &batchv1.CronJob{ObjectMeta: om, Spec: batchv1.CronJobSpec{Schedule: "0 0 1 1 *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Suspend: &yes, Template: tmpl}}}}
	case KindJob:
		obj = &batchv1.Job{ObjectMeta: om, Spec: batchv1.JobSpec{Suspend: &yes, Template: tmpl}}
	case KindRollout:
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl)
		if err != nil {
			return nil, fmt.Errorf("encode the pod template of %s %s: %w", kind, name, err)
		}
		ann := map[string]any{}
		for k, v := range meta {
			ann[k] = v
		}
		return newRollout(name, ann, raw), nil
	default:
		return nil, fmt.Errorf("unknown workload kind %q", kind)
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s: %w", kind, name, err)
	}
	return &unstructured.Unstructured{Object: raw}, nil
}

// PodTemplate is template() made valid for kind: a Job's pods must not restart in place.
func PodTemplate(kind, name string, refs []Ref) corev1.PodTemplateSpec {
	t := template(name, refs)
	if kind == KindCronJob || kind == KindJob {
		t.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	return t
}

// markers reads the reloader's marker of every config from a pod template, whichever strategy
// wrote it: the env var, or the hashes annotation.
func markers(t *corev1.PodTemplateSpec) map[string]string {
	out := map[string]string{}
	var hashes map[string]string
	_ = json.Unmarshal([]byte(t.Annotations["reloader/config-hashes"]), &hashes)
	for _, c := range JudgedConfigs {
		r := configRef(c)
		if v, ok := policy.EnvValue(t, policy.EnvVarName(r)); ok {
			out[c] = "env:" + v
		}
		if v, ok := hashes[lowerKind(r)+"/"+c]; ok {
			out[c] += " ann:" + v
		}
	}
	return out
}

func lowerKind(r policy.ConfigRef) string {
	if r.Kind == policy.KindSecret {
		return "secret"
	}
	return "configmap"
}

func configRef(c string) policy.ConfigRef {
	if IsSecret(c) {
		return policy.ConfigRef{Kind: policy.KindSecret, Name: c}
	}
	return policy.ConfigRef{Kind: policy.KindConfigMap, Name: c}
}
