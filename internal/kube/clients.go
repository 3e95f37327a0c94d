// Package kube owns the reloader's access to the API server: typed clients over a scheme of only
// the types it uses, informer construction, the Event sink, the permission probe, and the work
// queue's clock.
package kube

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Clients are typed clients over a scheme of only the types the reloader uses. client-go's
// kubernetes package would link and register every API group at start-up: measured, that is
// about a third of the reloader's resident memory.
type Clients struct {
	Scheme *runtime.Scheme
	core   rest.Interface
	apps   rest.Interface
	batch  rest.Interface
	coord  rest.Interface
	authz  rest.Interface // SelfSubjectAccessReviews: the start-up permission probe
	codec  runtime.ParameterCodec
	// Dynamic serves the custom resources (Argo Rollouts, OpenShift DeploymentConfigs).
	Dynamic dynamic.Interface
	// Link follows whether the informers reach the API server; nil: no tracking, no retry.
	Link *Link
}

// New builds the clients from a rest.Config.
func New(cfg *rest.Config) (*Clients, error) {
	cfg = limitReceiveBuffers(cfg)
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, coordinationv1.AddToScheme,
		authorizationv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("build scheme: %w", err)
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	c := &Clients{Scheme: s, codec: runtime.NewParameterCodec(s)}
	codecs := serializer.NewCodecFactory(s)
	var err error
	for _, g := range []struct {
		into    *rest.Interface
		gv      schema.GroupVersion
		apiPath string
	}{
		{&c.core, corev1.SchemeGroupVersion, "/api"},
		{&c.apps, appsv1.SchemeGroupVersion, "/apis"},
		{&c.batch, batchv1.SchemeGroupVersion, "/apis"},
		{&c.coord, coordinationv1.SchemeGroupVersion, "/apis"},
		{&c.authz, authorizationv1.SchemeGroupVersion, "/apis"},
	} {
		gc := rest.CopyConfig(cfg)
		gc.GroupVersion, gc.APIPath = &g.gv, g.apiPath
		gc.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(s, codecs).WithoutConversion()
		if gc.UserAgent == "" {
			gc.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		if *g.into, err = rest.RESTClientFor(gc); err != nil {
			return nil, fmt.Errorf("client for %s: %w", g.gv, err)
		}
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	return c, nil
}

// ConfigMaps returns the ConfigMap client of a namespace.
func (c *Clients) ConfigMaps(ns string) *gentype.ClientWithList[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return gentype.NewClientWithList("configmaps", c.core, c.codec, ns,
		func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} }, gentype.PrefersProtobuf[*corev1.ConfigMap]())
}

// Secrets returns the Secret client of a namespace.
func (c *Clients) Secrets(ns string) *gentype.ClientWithList[*corev1.Secret, *corev1.SecretList] {
	return gentype.NewClientWithList("secrets", c.core, c.codec, ns,
		func() *corev1.Secret { return &corev1.Secret{} }, func() *corev1.SecretList { return &corev1.SecretList{} }, gentype.PrefersProtobuf[*corev1.Secret]())
}

// Namespaces returns the Namespace client.
func (c *Clients) Namespaces() *gentype.ClientWithList[*corev1.Namespace, *corev1.NamespaceList] {
	return gentype.NewClientWithList("namespaces", c.core, c.codec, "",
		func() *corev1.Namespace { return &corev1.Namespace{} }, func() *corev1.NamespaceList { return &corev1.NamespaceList{} }, gentype.PrefersProtobuf[*corev1.Namespace]())
}

// Events returns the Event client of a namespace.
func (c *Clients) Events(ns string) *gentype.Client[*corev1.Event] {
	return gentype.NewClient("events", c.core, c.codec, ns, func() *corev1.Event { return &corev1.Event{} },
		gentype.PrefersProtobuf[*corev1.Event]())
}

// StateConfigMaps returns the client the state store reads and writes its shards through.
func (c *Clients) StateConfigMaps(ns string) StateClient {
	return NewStateClient(c.ConfigMaps(ns), c.core, c.codec, ns)
}

// Leases returns the Lease client of a namespace, for leader election.
func (c *Clients) Leases(ns string) *gentype.Client[*coordinationv1.Lease] {
	return gentype.NewClient("leases", c.coord, c.codec, ns, func() *coordinationv1.Lease { return &coordinationv1.Lease{} },
		gentype.PrefersProtobuf[*coordinationv1.Lease]())
}

// Deployments returns the Deployment client of a namespace.
func (c *Clients) Deployments(ns string) *gentype.ClientWithList[*appsv1.Deployment, *appsv1.DeploymentList] {
	return gentype.NewClientWithList("deployments", c.apps, c.codec, ns,
		func() *appsv1.Deployment { return &appsv1.Deployment{} }, func() *appsv1.DeploymentList { return &appsv1.DeploymentList{} }, gentype.PrefersProtobuf[*appsv1.Deployment]())
}

// StatefulSets returns the StatefulSet client of a namespace.
func (c *Clients) StatefulSets(ns string) *gentype.ClientWithList[*appsv1.StatefulSet, *appsv1.StatefulSetList] {
	return gentype.NewClientWithList("statefulsets", c.apps, c.codec, ns,
		func() *appsv1.StatefulSet { return &appsv1.StatefulSet{} }, func() *appsv1.StatefulSetList { return &appsv1.StatefulSetList{} }, gentype.PrefersProtobuf[*appsv1.StatefulSet]())
}

// DaemonSets returns the DaemonSet client of a namespace.
func (c *Clients) DaemonSets(ns string) *gentype.ClientWithList[*appsv1.DaemonSet, *appsv1.DaemonSetList] {
	return gentype.NewClientWithList("daemonsets", c.apps, c.codec, ns,
		func() *appsv1.DaemonSet { return &appsv1.DaemonSet{} }, func() *appsv1.DaemonSetList { return &appsv1.DaemonSetList{} }, gentype.PrefersProtobuf[*appsv1.DaemonSet]())
}

// CronJobs returns the CronJob client of a namespace.
func (c *Clients) CronJobs(ns string) *gentype.ClientWithList[*batchv1.CronJob, *batchv1.CronJobList] {
	return gentype.NewClientWithList("cronjobs", c.batch, c.codec, ns,
		func() *batchv1.CronJob { return &batchv1.CronJob{} }, func() *batchv1.CronJobList { return &batchv1.CronJobList{} }, gentype.PrefersProtobuf[*batchv1.CronJob]())
}

// Jobs returns the Job client of a namespace.
func (c *Clients) Jobs(ns string) *gentype.ClientWithList[*batchv1.Job, *batchv1.JobList] {
	return gentype.NewClientWithList("jobs", c.batch, c.codec, ns,
		func() *batchv1.Job { return &batchv1.Job{} }, func() *batchv1.JobList { return &batchv1.JobList{} }, gentype.PrefersProtobuf[*batchv1.Job]())
}

// Lister is the List and Watch of a typed client.
type Lister[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// NewInformer builds a shared informer over a typed client, with tweak applied to every list
// and watch, and transform stripping objects before they are cached. Its calls go through link,
// which holds them through an outage.
//
// The informer streams its initial list where the API server can (client-go's WatchListClient,
// on by default since v0.35; servers since Kubernetes 1.34): each object is transformed as it
// arrives, so the start never holds a whole list decoded. A list in its place is noted once.
func NewInformer[L runtime.Object](link *Link, client Lister[L], example runtime.Object, tweak func(*metav1.ListOptions), transform cache.TransformFunc) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			link.lists(fmt.Sprintf("%T", example))
			return retry(ctx, link, func() (L, error) { return client.List(ctx, o) })
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			return retry(ctx, link, func() (watch.Interface, error) { return client.Watch(ctx, o) })
		},
	}
	inf := cache.NewSharedIndexInformerWithOptions(lw, example, cache.SharedIndexInformerOptions{Indexers: cache.Indexers{}})
	_ = inf.SetTransform(transform) // fails only once started
	return inf
}

// NoTweak leaves list options as they are.
func NoTweak(*metav1.ListOptions) {}

// EventSink records Events through the reloader's own client.
type EventSink struct {
	Client func(ns string) *gentype.Client[*corev1.Event]
}

func (s EventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	return s.Client(e.Namespace).Create(context.Background(), e, metav1.CreateOptions{})
}

func (s EventSink) Update(e *corev1.Event) (*corev1.Event, error) {
	return s.Client(e.Namespace).Update(context.Background(), e, metav1.UpdateOptions{})
}

func (s EventSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	return s.Client(e.Namespace).Patch(context.Background(), e.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
}

// Permission is one thing the reloader may need to do: a verb on a resource in a namespace
// ("" for all namespaces).
type Permission struct {
	Verb, Group, Resource, Namespace string
}

func (p Permission) String() string {
	where := "in all namespaces"
	if p.Namespace != "" {
		where = fmt.Sprintf("in namespace %q", p.Namespace)
	}
	return fmt.Sprintf("%q on %s %s", p.Verb, p.Resource, where)
}

// Allowed asks the authorizer, through a SelfSubjectAccessReview, whether the reloader may do p.
// The review creates nothing and runs no admission webhook, and every authenticated user may ask
// (the system:basic-user ClusterRole), so it needs no permission of its own.
func (c *Clients) Allowed(ctx context.Context, p Permission) (bool, error) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: p.Namespace, Verb: p.Verb, Group: p.Group, Resource: p.Resource},
	}}
	out := &authorizationv1.SelfSubjectAccessReview{}
	if err := c.authz.Post().Resource("selfsubjectaccessreviews").Body(review).Do(ctx).Into(out); err != nil {
		return false, fmt.Errorf("ask whether the reloader may %s: %w", p, err)
	}
	return out.Status.Allowed, nil
}
