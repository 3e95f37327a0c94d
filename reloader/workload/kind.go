package workload

import (
	"context"
	"iter"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/reloader/reloader/internal/kube"
)

// The custom resources the reloader restarts, served through the dynamic client.
var (
	RolloutsGVR          = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}
	DeploymentConfigsGVR = schema.GroupVersionResource{Group: "apps.openshift.io", Version: "v1", Resource: "deploymentconfigs"}
)

// Kind is one kind of object with a pod template that the reloader can restart.
type Kind struct {
	Name     string // the Kind, as in queue keys and Events
	Informer cache.SharedIndexInformer
	// ByConfig indexes the cached objects by the configs they may reload on; their event
	// handlers keep it (reloader/informers.go).
	ByConfig *Dependents
	// Template returns the object's metadata and pod template (nil if it has none, or is not
	// reloaded as its own: a Job a CronJob controls, reloader/jobs).
	Template func(obj any) (metav1.Object, *corev1.PodTemplateSpec)
	// Reload applies a reload's (or a rollback's) RFC 6902 JSON patch and returns the object as
	// written: a restart, or for a CronJob and a Job a run (a CronJob's Job, a Job recreated,
	// reloader/jobs).
	Reload func(ctx context.Context, namespace, name string, body []byte) (any, error)
	// WriteMeta applies a JSON patch of the object alone (the gate's annotations): it never
	// restarts or runs anything, whatever patch does for the kind.
	WriteMeta func(ctx context.Context, namespace, name string, body []byte) (any, error)
	// Get reads the object from the API server, whole: the cache keeps a stripped pod template.
	Get func(ctx context.Context, namespace, name string) (any, error)
	// OnDelete reports whether a template change restarts no pods (updateStrategy OnDelete).
	OnDelete func(obj any) bool
	// CanRestartAt: the kind honours spec.restartAt (Argo Rollouts).
	CanRestartAt bool
	// Paused, when set, reports the object's spec.paused: the kind pauses its rollouts, and a
	// pause period pauses it (policy.Gate.Pausable).
	Paused func(obj any) bool
	// Resume, when set, finishes a reload that a patch recorded but did not complete (a
	// CronJob's Job to create, reloader/jobs); every sync of the workload calls it first.
	// watched: the workload's namespace is in the selection; out of it, only a run of ours is
	// finished, and anything else is left to whoever watches it.
	Resume func(ctx context.Context, obj any, watched bool) error
	// Unfinished, when set, finishes a reload that left no object behind to sync (a Job deleted
	// whose create failed, reloader/jobs); every sync of the key calls it first, the object
	// there or not.
	Unfinished func(ctx context.Context, namespace, name string) error
	// TemplateRef, when set, returns the kind and name of the object whose pod template the
	// workload runs in place of its own (an Argo Rollout's spec.workloadRef); "" if none.
	TemplateRef func(obj any) (kind, name string)
	// Probe, when set, lists the kind once at start: a kind the reloader may not list is turned
	// off instead of keeping the caches from syncing (reloader/jobs).
	Probe func(ctx context.Context) error

	memo memo // the last workloads decoded, shared (Decoded, ViewOf)
}

// Cached returns the workload stored under key (namespace/name) in the kind's cache, decoded
// (Decoded: shared, never to be written).
func (k *Kind) Cached(key string) (any, bool, error) {
	obj, ok, err := k.Informer.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		return nil, ok, err
	}
	return k.Decoded(obj), true, nil
}

// All yields every workload of the kind's cache, decoded one at a time: each decoded object is
// garbage once the loop moves on. A slice of them all decoded was the largest live data of a
// start (about 4 KiB a Deployment, held by each pass over the workloads after the sync).
func (k *Kind) All() iter.Seq[any] {
	return func(yield func(any) bool) {
		for _, o := range k.Informer.GetStore().List() {
			if !yield(Unpacked(o)) {
				return
			}
		}
	}
}

// TypedClient is the List, Watch and Patch of a gentype client.
type TypedClient[T any, L runtime.Object] interface {
	kube.Lister[L]
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
}

// TypedKind serves a kind of the Kubernetes API with a typed client (a gentype client).
func TypedKind[T metav1.Object, L runtime.Object](name string, example T, tmpl func(T) *corev1.PodTemplateSpec,
	client func(ns string) TypedClient[T, L], ns string, link *kube.Link, transform cache.TransformFunc) *Kind {
	write := func(ctx context.Context, ns, n string, body []byte) (any, error) {
		out, err := client(ns).Patch(ctx, n, types.JSONPatchType, body, metav1.PatchOptions{})
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	return &Kind{
		Name:     name,
		Informer: kube.NewInformer[L](link, client(ns), any(example).(runtime.Object), kube.NoTweak, transform),
		Template: func(o any) (metav1.Object, *corev1.PodTemplateSpec) {
			t := o.(T)
			return t, tmpl(t)
		},
		Reload:    write,
		WriteMeta: write,
		Get: func(ctx context.Context, ns, n string) (any, error) {
			out, err := client(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return out, nil
		},
		OnDelete: func(any) bool { return false },
	}
}

// DynamicKind serves a custom resource whose pod template is at spec.template, through the
// dynamic client, so the reloader takes no dependency on its Go types.
func DynamicKind(name string, gvr schema.GroupVersionResource, client dynamic.Interface, ns string, link *kube.Link, transform cache.TransformFunc) *Kind {
	resource := client.Resource(gvr)
	write := func(ctx context.Context, ns, n string, body []byte) (any, error) {
		out, err := resource.Namespace(ns).Patch(ctx, n, types.JSONPatchType, body, metav1.PatchOptions{})
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	return &Kind{
		Name:      name,
		Informer:  kube.NewInformer[*unstructured.UnstructuredList](link, resource.Namespace(ns), &unstructured.Unstructured{}, kube.NoTweak, transform),
		Template:  UnstructuredTemplate,
		Reload:    write,
		WriteMeta: write,
		Get: func(ctx context.Context, ns, n string) (any, error) {
			out, err := resource.Namespace(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return out, nil
		},
		OnDelete:     func(any) bool { return false },
		CanRestartAt: gvr == RolloutsGVR,
	}
}

// UnstructuredTemplate converts spec.template; an object without a valid one has no template.
func UnstructuredTemplate(o any) (metav1.Object, *corev1.PodTemplateSpec) {
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

// WorkloadRef returns the kind and name of the object an Argo Rollout's spec.workloadRef points
// to; kind is "" if it has none.
func WorkloadRef(o any) (kind, name string) {
	ref, found, err := unstructured.NestedMap(o.(*unstructured.Unstructured).Object, "spec", "workloadRef")
	if err != nil || !found {
		return "", ""
	}
	kind, _ = ref["kind"].(string)
	name, _ = ref["name"].(string)
	if kind == "" {
		kind = "workload" // Argo requires the kind: a Rollout without one runs nothing
	}
	return kind, name
}
