package reloader

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// workloadKind is one kind of object with a pod template that the reloader can restart.
type workloadKind struct {
	name     string
	informer cache.SharedIndexInformer
	// template returns the object's metadata and pod template.
	template func(obj any) (metav1.Object, *corev1.PodTemplateSpec)
	patch    func(ctx context.Context, namespace, name string, body []byte) error
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
			_, err := client(ns).Patch(ctx, n, types.StrategicMergePatchType, body, metav1.PatchOptions{})
			return err
		},
	}
}

func builtinKinds(f informers.SharedInformerFactory, client kubernetes.Interface) []*workloadKind {
	apps, v1 := client.AppsV1(), f.Apps().V1()
	return []*workloadKind{
		typedKind("Deployment", v1.Deployments().Informer(),
			func(d *appsv1.Deployment) *corev1.PodTemplateSpec { return &d.Spec.Template },
			func(ns string) patcher[*appsv1.Deployment] { return apps.Deployments(ns) }),
		typedKind("StatefulSet", v1.StatefulSets().Informer(),
			func(s *appsv1.StatefulSet) *corev1.PodTemplateSpec { return &s.Spec.Template },
			func(ns string) patcher[*appsv1.StatefulSet] { return apps.StatefulSets(ns) }),
		typedKind("DaemonSet", v1.DaemonSets().Informer(),
			func(d *appsv1.DaemonSet) *corev1.PodTemplateSpec { return &d.Spec.Template },
			func(ns string) patcher[*appsv1.DaemonSet] { return apps.DaemonSets(ns) }),
	}
}
