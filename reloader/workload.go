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
	"k8s.io/client-go/tools/cache"

	"github.com/reloader/reloader/internal/kube"
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
	// byConfig indexes the cached objects by the configs they may reload on; their event
	// handlers keep it (watchWorkloads).
	byConfig *dependents
	// template returns the object's metadata and pod template (nil if it has none, or is not
	// reloaded as its own: a Job a CronJob controls, jobs.go).
	template func(obj any) (metav1.Object, *corev1.PodTemplateSpec)
	// reload applies a reload's (or a rollback's) RFC 6902 JSON patch and returns the object as
	// written: a restart, or for a CronJob and a Job a run (a CronJob's Job, a Job recreated,
	// jobs.go).
	reload func(ctx context.Context, namespace, name string, body []byte) (any, error)
	// writeMeta applies a JSON patch of the object alone (the gate's annotations): it never
	// restarts or runs anything, whatever patch does for the kind.
	writeMeta func(ctx context.Context, namespace, name string, body []byte) (any, error)
	// get reads the object from the API server, whole: the cache keeps a stripped pod template.
	get func(ctx context.Context, namespace, name string) (any, error)
	// onDelete reports whether a template change restarts no pods (updateStrategy OnDelete).
	onDelete func(obj any) bool
	// canRestartAt: the kind honours spec.restartAt (Argo Rollouts).
	canRestartAt bool
	// paused, when set, reports the object's spec.paused: the kind pauses its rollouts, and a
	// pause period pauses it (policy.Gate.Pausable).
	paused func(obj any) bool
	// resume, when set, finishes a reload that a patch recorded but did not complete (a
	// CronJob's Job to create, jobs.go); every sync of the workload calls it first. watched:
	// the workload's namespace is in the selection; out of it, only a run of ours is finished,
	// and anything else is left to whoever watches it.
	resume func(ctx context.Context, obj any, watched bool) error
	// unfinished, when set, finishes a reload that left no object behind to sync (a Job deleted
	// whose create failed, jobs.go); every sync of the key calls it first, the object there or not.
	unfinished func(ctx context.Context, namespace, name string) error
	// templateRef, when set, returns the kind and name of the object whose pod template the
	// workload runs in place of its own (an Argo Rollout's spec.workloadRef); "" if none.
	templateRef func(obj any) (kind, name string)
	// probe, when set, lists the kind once at start: a kind the reloader may not list is turned
	// off instead of keeping the caches from syncing (jobs.go).
	probe func(ctx context.Context) error
}

// cached returns the workload stored under key (namespace/name) in the kind's cache, decoded.
func (k *workloadKind) cached(key string) (any, bool, error) {
	obj, ok, err := k.informer.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		return nil, ok, err
	}
	return unpacked(obj), true, nil
}

// list returns every workload of the kind's cache, decoded.
func (k *workloadKind) list() []any {
	objs := k.informer.GetStore().List()
	for i, o := range objs {
		objs[i] = unpacked(o)
	}
	return objs
}

// typedClient is the List, Watch and Patch of a gentype client.
type typedClient[T any, L runtime.Object] interface {
	kube.Lister[L]
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
}

func typedKind[T metav1.Object, L runtime.Object](name string, example T, tmpl func(T) *corev1.PodTemplateSpec,
	client func(ns string) typedClient[T, L], ns string, link *kube.Link, transform cache.TransformFunc) *workloadKind {
	write := func(ctx context.Context, ns, n string, body []byte) (any, error) {
		out, err := client(ns).Patch(ctx, n, types.JSONPatchType, body, metav1.PatchOptions{})
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	return &workloadKind{
		name:     name,
		informer: kube.NewInformer[L](link, client(ns), any(example).(runtime.Object), kube.NoTweak, transform),
		template: func(o any) (metav1.Object, *corev1.PodTemplateSpec) {
			t := o.(T)
			return t, tmpl(t)
		},
		reload:    write,
		writeMeta: write,
		get: func(ctx context.Context, ns, n string) (any, error) {
			out, err := client(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return out, nil
		},
		onDelete: func(any) bool { return false },
	}
}

// kindEntry is one workload kind the reloader can restart: its --ignored-workload-types name,
// whether the options enable it, and how to build it. Kinds are built on demand, so a kind that
// is off never gets an informer (which would list and watch it, and need RBAC for it).
type kindEntry struct {
	typ     string
	enabled func(Options) bool
	build   func() *workloadKind
}

// kindTable lists every workload kind; adding a kind is adding an entry.
func kindTable(c *kube.Clients, ns string, transform cache.TransformFunc, key runKey) []kindEntry {
	always := func(Options) bool { return true }
	return []kindEntry{
		{TypeDeployments, always, func() *workloadKind {
			k := typedKind("Deployment", &appsv1.Deployment{},
				func(d *appsv1.Deployment) *corev1.PodTemplateSpec { return &d.Spec.Template },
				func(ns string) typedClient[*appsv1.Deployment, *appsv1.DeploymentList] { return c.Deployments(ns) }, ns, c.Link, transform)
			k.paused = func(o any) bool { return o.(*appsv1.Deployment).Spec.Paused }
			return k
		}},
		{TypeStatefulSets, always, func() *workloadKind {
			k := typedKind("StatefulSet", &appsv1.StatefulSet{},
				func(s *appsv1.StatefulSet) *corev1.PodTemplateSpec { return &s.Spec.Template },
				func(ns string) typedClient[*appsv1.StatefulSet, *appsv1.StatefulSetList] { return c.StatefulSets(ns) }, ns, c.Link, transform)
			k.onDelete = func(o any) bool {
				return o.(*appsv1.StatefulSet).Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType
			}
			return k
		}},
		{TypeDaemonSets, always, func() *workloadKind {
			k := typedKind("DaemonSet", &appsv1.DaemonSet{},
				func(d *appsv1.DaemonSet) *corev1.PodTemplateSpec { return &d.Spec.Template },
				func(ns string) typedClient[*appsv1.DaemonSet, *appsv1.DaemonSetList] { return c.DaemonSets(ns) }, ns, c.Link, transform)
			k.onDelete = func(o any) bool {
				return o.(*appsv1.DaemonSet).Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType
			}
			return k
		}},
		{TypeCronJobs, always, func() *workloadKind { return cronJobKind(c, ns, c.Link, transform, key) }},
		{TypeJobs, always, func() *workloadKind { return jobKind(c, ns, c.Link, transform) }},
		{TypeRollouts, func(o Options) bool { return o.ArgoRollouts }, func() *workloadKind {
			k := dynamicKind("Rollout", rolloutsGVR, c.Dynamic, ns, c.Link, transform)
			k.templateRef = workloadRef
			// Argo refuses a template beside a workloadRef: the reloader never writes one there.
			k.template = func(o any) (metav1.Object, *corev1.PodTemplateSpec) {
				if kind, _ := workloadRef(o); kind != "" {
					return o.(*unstructured.Unstructured), nil
				}
				return unstructuredTemplate(o)
			}
			return k
		}},
		{TypeDeploymentConfigs, func(o Options) bool { return o.OpenShift }, func() *workloadKind {
			return dynamicKind("DeploymentConfig", deploymentConfigsGVR, c.Dynamic, ns, c.Link, transform)
		}},
	}
}

// dynamicKind serves a custom resource whose pod template is at spec.template, through the
// dynamic client, so the reloader takes no dependency on its Go types.
func dynamicKind(name string, gvr schema.GroupVersionResource, client dynamic.Interface, ns string, link *kube.Link, transform cache.TransformFunc) *workloadKind {
	resource := client.Resource(gvr)
	write := func(ctx context.Context, ns, n string, body []byte) (any, error) {
		out, err := resource.Namespace(ns).Patch(ctx, n, types.JSONPatchType, body, metav1.PatchOptions{})
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	return &workloadKind{
		name:      name,
		informer:  kube.NewInformer[*unstructured.UnstructuredList](link, resource.Namespace(ns), &unstructured.Unstructured{}, kube.NoTweak, transform),
		template:  unstructuredTemplate,
		reload:    write,
		writeMeta: write,
		get: func(ctx context.Context, ns, n string) (any, error) {
			out, err := resource.Namespace(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return out, nil
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

// workloadRef returns the kind and name of the object an Argo Rollout's spec.workloadRef points
// to; kind is "" if it has none.
func workloadRef(o any) (kind, name string) {
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

// selectKinds builds the enabled workload kinds, keyed by Kind.
func selectKinds(opts Options, c *kube.Clients, transform cache.TransformFunc, key runKey) map[string]*workloadKind {
	kinds := map[string]*workloadKind{}
	for _, e := range kindTable(c, opts.listNamespace(), transform, key) {
		if e.enabled(opts) && !slices.Contains(opts.IgnoredWorkloadTypes, e.typ) {
			k := e.build()
			kinds[k.name] = k
		}
	}
	return kinds
}
