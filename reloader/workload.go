package reloader

import (
	"context"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Workload type names, as --ignored-workload-types takes them.
const (
	TypeDeployments       = "deployments"
	TypeStatefulSets      = "statefulsets"
	TypeDaemonSets        = "daemonsets"
	TypeRollouts          = "rollouts"
	TypeDeploymentConfigs = "deploymentconfigs"
)

var (
	rolloutsGVR          = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}
	deploymentConfigsGVR = schema.GroupVersionResource{Group: "apps.openshift.io", Version: "v1", Resource: "deploymentconfigs"}
)

// workloadKind is one kind of object with a pod template that the reloader can restart.
type workloadKind struct {
	name     string // the Kind, as in queue keys and Events
	informer cache.SharedIndexInformer
	// template returns the object's metadata and pod template (nil if it has none).
	template func(obj any) (metav1.Object, *corev1.PodTemplateSpec)
	// patch applies an RFC 6902 JSON patch.
	patch func(ctx context.Context, namespace, name string, body []byte) error
	// onDelete reports whether a template change restarts no pods (updateStrategy OnDelete).
	onDelete func(obj any) bool
	// canRestartAt: the kind honours spec.restartAt (Argo Rollouts).
	canRestartAt bool
}

// patcher is the Patch method every typed client has.
type patcher[T any] interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

func typedKind[T metav1.Object](name string, inf cache.SharedIndexInformer, tmpl func(T) *corev1.PodTemplateSpec, client func(ns string) patcher[T]) *workloadKind {
	return &workloadKind{
		name:     name,
		informer: inf,
		template: func(o any) (metav1.Object, *corev1.PodTemplateSpec) {
			t := o.(T)
			return t, tmpl(t)
		},
		patch: func(ctx context.Context, ns, n string, body []byte) error {
			_, err := client(ns).Patch(ctx, n, types.JSONPatchType, body, metav1.PatchOptions{})
			return err
		},
		onDelete: func(any) bool { return false },
	}
}

// kindConstructors builds each workload kind on demand, so an ignored kind never gets an
// informer (which would list and watch it, and need RBAC for it).
func kindConstructors(f informers.SharedInformerFactory, client kubernetes.Interface) map[string]func() *workloadKind {
	apps, v1 := client.AppsV1(), f.Apps().V1()
	return map[string]func() *workloadKind{
		TypeDeployments: func() *workloadKind {
			return typedKind("Deployment", v1.Deployments().Informer(),
				func(d *appsv1.Deployment) *corev1.PodTemplateSpec { return &d.Spec.Template },
				func(ns string) patcher[*appsv1.Deployment] { return apps.Deployments(ns) })
		},
		TypeStatefulSets: func() *workloadKind {
			k := typedKind("StatefulSet", v1.StatefulSets().Informer(),
				func(s *appsv1.StatefulSet) *corev1.PodTemplateSpec { return &s.Spec.Template },
				func(ns string) patcher[*appsv1.StatefulSet] { return apps.StatefulSets(ns) })
			k.onDelete = func(o any) bool {
				return o.(*appsv1.StatefulSet).Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType
			}
			return k
		},
		TypeDaemonSets: func() *workloadKind {
			k := typedKind("DaemonSet", v1.DaemonSets().Informer(),
				func(d *appsv1.DaemonSet) *corev1.PodTemplateSpec { return &d.Spec.Template },
				func(ns string) patcher[*appsv1.DaemonSet] { return apps.DaemonSets(ns) })
			k.onDelete = func(o any) bool {
				return o.(*appsv1.DaemonSet).Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType
			}
			return k
		},
	}
}

// dynamicKind serves a custom resource whose pod template is at spec.template, through the
// dynamic client, so the reloader takes no dependency on its Go types.
func dynamicKind(name string, gvr schema.GroupVersionResource, f dynamicinformer.DynamicSharedInformerFactory, client dynamic.Interface) *workloadKind {
	return &workloadKind{
		name:     name,
		informer: f.ForResource(gvr).Informer(),
		template: unstructuredTemplate,
		patch: func(ctx context.Context, ns, n string, body []byte) error {
			_, err := client.Resource(gvr).Namespace(ns).Patch(ctx, n, types.JSONPatchType, body, metav1.PatchOptions{})
			return err
		},
		onDelete:     func(any) bool { return false },
		canRestartAt: gvr == rolloutsGVR,
	}
}

// unstructuredTemplate converts spec.template; an object without a valid one has no template.
func unstructuredTemplate(o any) (metav1.Object, *corev1.PodTemplateSpec) {
	u := o.(*unstructured.Unstructured)
	raw, found, err := unstructured.NestedMap(u.Object, "spec", "template")
	if err != nil || !found {
		return u, nil
	}
	var tmpl corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &tmpl); err != nil {
		return u, nil
	}
	return u, &tmpl
}

// selectKinds builds the enabled workload kinds, keyed by Kind.
func selectKinds(opts Options, f informers.SharedInformerFactory, df dynamicinformer.DynamicSharedInformerFactory,
	client kubernetes.Interface, dyn dynamic.Interface) map[string]*workloadKind {
	constructors := kindConstructors(f, client)
	if opts.ArgoRollouts {
		constructors[TypeRollouts] = func() *workloadKind { return dynamicKind("Rollout", rolloutsGVR, df, dyn) }
	}
	if opts.OpenShift {
		constructors[TypeDeploymentConfigs] = func() *workloadKind {
			return dynamicKind("DeploymentConfig", deploymentConfigsGVR, df, dyn)
		}
	}
	kinds := map[string]*workloadKind{}
	for typ, build := range constructors {
		if !slices.Contains(opts.IgnoredWorkloadTypes, typ) {
			k := build()
			kinds[k.name] = k
		}
	}
	return kinds
}
