package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// tracker watches the Deployments of a namespace. It records when each value of a reloader
// env var first appears in a pod template, and how many template revisions (generation
// increments) each Deployment went through while watched.
type tracker struct {
	cancel context.CancelFunc

	mu        sync.Mutex
	seen      map[string]time.Time // trackerKey → first observed
	waiters   map[string][]chan time.Time
	revisions map[string]int64
}

// trackerKey names one value of one env var in one Deployment.
func trackerKey(deployment, envVar, value string) string {
	return deployment + "/" + envVar + "=" + value
}

// startTracker lists and watches the Deployments of ns until stop is called.
func startTracker(ctx context.Context, client kubernetes.Interface, ns string) (*tracker, error) {
	ctx, cancel := context.WithCancel(ctx)
	t := &tracker{
		cancel:    cancel,
		seen:      map[string]time.Time{},
		waiters:   map[string][]chan time.Time{},
		revisions: map[string]int64{},
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := factory.Apps().V1().Deployments().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.observe(nil, obj.(*appsv1.Deployment)) },
		UpdateFunc: func(old, obj any) { t.observe(old.(*appsv1.Deployment), obj.(*appsv1.Deployment)) },
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch Deployments in %s: %w", ns, err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		cancel()
		return nil, fmt.Errorf("watch Deployments in %s: cache did not sync", ns)
	}
	return t, nil
}

func (t *tracker) stop() { t.cancel() }

func (t *tracker) observe(old, d *appsv1.Deployment) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if old != nil && d.Generation > old.Generation {
		t.revisions[d.Name] += d.Generation - old.Generation
	}
	for name, value := range reloaderEnv(&d.Spec.Template.Spec) {
		key := trackerKey(d.Name, name, value)
		if _, ok := t.seen[key]; ok {
			continue
		}
		t.seen[key] = now
		for _, ch := range t.waiters[key] {
			ch <- now
		}
		delete(t.waiters, key)
	}
}

// wait returns when key was first observed, waiting until deadline; ok is false if it was not.
func (t *tracker) wait(ctx context.Context, key string, deadline time.Time) (at time.Time, ok bool) {
	t.mu.Lock()
	if at, ok := t.seen[key]; ok {
		t.mu.Unlock()
		return at, true
	}
	ch := make(chan time.Time, 1)
	t.waiters[key] = append(t.waiters[key], ch)
	t.mu.Unlock()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case at := <-ch:
		return at, true
	case <-timer.C:
	case <-ctx.Done():
	}
	return time.Time{}, false
}

// seenAt reports whether and when key was observed, without waiting.
func (t *tracker) seenAt(key string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.seen[key]
	return at, ok
}

// revisionsOf returns the template revisions of a Deployment observed so far.
func (t *tracker) revisionsOf(deployment string) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.revisions[deployment]
}
