package reloader

import (
	"fmt"

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
