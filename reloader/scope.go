package reloader

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/reloader/reloader/internal/kube"
)

// watchNamespaces follows namespace labels for --namespace-selector.
func (c *Controller) watchNamespaces() error {
	c.caches.namespaces = kube.NewInformer[*corev1.NamespaceList](c.clients.Link, c.clients.Namespaces(), &corev1.Namespace{}, kube.NoTweak, c.records.transform)
	// Only a namespace entering the selection needs its workloads by namespace; the configs
	// always have that index (buildInformers).
	for _, k := range c.caches.kinds {
		_ = k.informer.AddIndexers(cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	_, err := c.caches.namespaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj any) { c.namespaceRelabelled(old, obj) },
	})
	if err != nil {
		return fmt.Errorf("watch namespaces: %w", err)
	}
	return nil
}

// namespaceRelabelled syncs the configs and workloads of a namespace that just entered the
// selection. Configs the state has never seen are recorded, and restart nothing.
func (c *Controller) namespaceRelabelled(old, obj any) {
	was := c.opts.NamespaceSelector.Matches(labels.Set(old.(*corev1.Namespace).Labels))
	ns := obj.(*corev1.Namespace)
	if was || !c.caches.allowed(ns.Name) {
		return
	}
	for kind, inf := range c.caches.configs {
		objs, _ := inf.GetIndexer().ByIndex(cache.NamespaceIndex, ns.Name)
		for _, o := range objs {
			c.queue.Add(objectKey(kind, o))
		}
	}
	for _, k := range c.caches.kinds {
		objs, _ := k.informer.GetIndexer().ByIndex(cache.NamespaceIndex, ns.Name)
		for _, o := range objs {
			c.queue.Add(objectKey(k.name, o))
		}
	}
}

// checkAnnotations reports a workload's malformed annotations, and the configs they name that do
// not exist, once as a Warning Event and a log line.
func (c *Controller) checkAnnotations(k *workloadKind, obj any) {
	meta, tmpl := k.template(obj)
	if tmpl == nil || !c.caches.allowed(meta.GetNamespace()) {
		return
	}
	if !c.ready.Load() {
		return // every config would look missing; checkAllWorkloads runs once the caches synced
	}
	pol := c.opts.Annotations.Of(meta.GetAnnotations(), tmpl.Annotations)
	missing := c.caches.missingNamed(pol, meta.GetNamespace())
	uid := string(meta.GetUID())
	problems := append(slices.Clip(pol.Problems), missing...)
	if len(problems) == 0 {
		c.reports.clear(uid, "InvalidAnnotation")
		return
	}
	if !c.reports.warn(obj, uid, "InvalidAnnotation", strings.Join(problems, "; ")) {
		return
	}
	// Each log line says what is wrong: a malformed value, or a name that exists nowhere.
	log := c.log.With("kind", k.name, "namespace", meta.GetNamespace(), "name", meta.GetName())
	if len(pol.Problems) > 0 {
		log.Warn("malformed reload annotation", "problems", strings.Join(pol.Problems, "; "))
	}
	if len(missing) > 0 {
		log.Warn("a config named in a reload annotation does not exist", "problems", strings.Join(missing, "; "))
	}
}

// checkAllWorkloads checks every cached workload's annotations once the caches have synced, for
// the checks that need them.
func (c *Controller) checkAllWorkloads() {
	for _, k := range c.caches.kinds {
		for _, obj := range k.informer.GetStore().List() {
			c.checkAnnotations(k, obj)
		}
	}
}
