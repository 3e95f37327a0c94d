package reloader

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/reloader/reloader/internal/kube"
	"github.com/reloader/reloader/reloader/jobs"
	"github.com/reloader/reloader/reloader/workload"
)

// Workload type names, as --ignored-workload-types takes them.
const (
	TypeDeployments       = "deployments"
	TypeStatefulSets      = "statefulsets"
	TypeDaemonSets        = "daemonsets"
	TypeRollouts          = "rollouts"
	TypeDeploymentConfigs = "deploymentconfigs"
	// CronJobs and Jobs are reloaded with stakater Reloader's semantics (reloader/jobs).
	TypeCronJobs = jobs.TypeCronJobs
	TypeJobs     = jobs.TypeJobs
)

// kindEntry is one workload kind the reloader can restart: its --ignored-workload-types name,
// whether the options enable it, and how to build it. Kinds are built on demand, so a kind that
// is off never gets an informer (which would list and watch it, and need RBAC for it).
type kindEntry struct {
	typ     string
	enabled func(Options) bool
	build   func() *workload.Kind
}

// kindTable lists every workload kind; adding a kind is adding an entry.
func kindTable(c *kube.Clients, ns string, transform cache.TransformFunc, key jobs.RunKey) []kindEntry {
	always := func(Options) bool { return true }
	return []kindEntry{
		{TypeDeployments, always, func() *workload.Kind {
			k := workload.TypedKind("Deployment", &appsv1.Deployment{},
				func(d *appsv1.Deployment) *corev1.PodTemplateSpec { return &d.Spec.Template },
				func(ns string) workload.TypedClient[*appsv1.Deployment, *appsv1.DeploymentList] {
					return c.Deployments(ns)
				}, ns, c.Link, transform)
			k.Paused = func(o any) bool { return o.(*appsv1.Deployment).Spec.Paused }
			return k
		}},
		{TypeStatefulSets, always, func() *workload.Kind {
			k := workload.TypedKind("StatefulSet", &appsv1.StatefulSet{},
				func(s *appsv1.StatefulSet) *corev1.PodTemplateSpec { return &s.Spec.Template },
				func(ns string) workload.TypedClient[*appsv1.StatefulSet, *appsv1.StatefulSetList] {
					return c.StatefulSets(ns)
				}, ns, c.Link, transform)
			k.OnDelete = func(o any) bool {
				return o.(*appsv1.StatefulSet).Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType
			}
			return k
		}},
		{TypeDaemonSets, always, func() *workload.Kind {
			k := workload.TypedKind("DaemonSet", &appsv1.DaemonSet{},
				func(d *appsv1.DaemonSet) *corev1.PodTemplateSpec { return &d.Spec.Template },
				func(ns string) workload.TypedClient[*appsv1.DaemonSet, *appsv1.DaemonSetList] {
					return c.DaemonSets(ns)
				}, ns, c.Link, transform)
			k.OnDelete = func(o any) bool {
				return o.(*appsv1.DaemonSet).Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType
			}
			return k
		}},
		{TypeCronJobs, always, func() *workload.Kind { return jobs.CronJobKind(c, ns, c.Link, transform, key) }},
		{TypeJobs, always, func() *workload.Kind { return jobs.JobKind(c, ns, c.Link, transform) }},
		{TypeRollouts, func(o Options) bool { return o.ArgoRollouts }, func() *workload.Kind {
			k := workload.DynamicKind("Rollout", workload.RolloutsGVR, c.Dynamic, ns, c.Link, transform)
			k.TemplateRef = workload.WorkloadRef
			// Argo refuses a template beside a workloadRef: the reloader never writes one there.
			k.Template = func(o any) (metav1.Object, *corev1.PodTemplateSpec) {
				if kind, _ := workload.WorkloadRef(o); kind != "" {
					return o.(*unstructured.Unstructured), nil
				}
				return workload.UnstructuredTemplate(o)
			}
			return k
		}},
		{TypeDeploymentConfigs, func(o Options) bool { return o.OpenShift }, func() *workload.Kind {
			return workload.DynamicKind("DeploymentConfig", workload.DeploymentConfigsGVR, c.Dynamic, ns, c.Link, transform)
		}},
	}
}

// selectKinds builds the enabled workload kinds, keyed by Kind.
func selectKinds(opts Options, c *kube.Clients, transform cache.TransformFunc, key jobs.RunKey) map[string]*workload.Kind {
	kinds := map[string]*workload.Kind{}
	for _, e := range kindTable(c, opts.listNamespace(), transform, key) {
		if e.enabled(opts) && !slices.Contains(opts.IgnoredWorkloadTypes, e.typ) {
			k := e.build()
			kinds[k.Name] = k
		}
	}
	return kinds
}
