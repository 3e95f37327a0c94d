package testcluster

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The deployment controller notices a passed progress deadline late under a test package's load:
// a sync less than a second before the deadline requeues the Deployment through its queue's
// rate limiter, which every conflicting status write of every test also draws on (10 per
// second in all), and the measured wait grew to 46 s by the end of a run of reloader/. A plain
// event is queued at once, so the nudger touches the Deployment's newest ReplicaSet once its
// deadline has passed by nudgeAfter and the controller still has not said so, and again each
// nudgeEvery while it has not. Only the timing changes: the controller decides, as it would
// have at its next sync.
const (
	nudgeAfter = 1500 * time.Millisecond
	nudgeEvery = time.Second
	// NudgeAnnotation is the ReplicaSet annotation the nudger writes.
	NudgeAnnotation = "testcluster.reloader.dev/deadline-nudge"
)

// nudgeDeadlines runs the nudger until ctx ends, with a client of its own, so its writes are
// not in Writes.
func nudgeDeadlines(ctx context.Context, cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = -1
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("deadline nudger client: %w", err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	lister := factory.Apps().V1().Deployments().Lister()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	last := map[types.UID]time.Time{} // when each Deployment was last nudged
	tick := time.NewTicker(nudgeEvery / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			deps, err := lister.List(labels.Everything())
			if err != nil {
				continue
			}
			for _, d := range deps {
				if deadlinePassed(d, now) && now.Sub(last[d.UID]) >= nudgeEvery {
					last[d.UID] = now
					nudge(ctx, client, d, now)
				}
			}
		}
	}
}

// deadlinePassed reports a Deployment whose progress deadline passed more than nudgeAfter ago
// by its Progressing condition, which the controller has not marked timed out or complete.
func deadlinePassed(d *appsv1.Deployment, now time.Time) bool {
	pds := d.Spec.ProgressDeadlineSeconds
	if pds == nil || d.Spec.Paused {
		return false
	}
	for _, c := range d.Status.Conditions {
		if c.Type != appsv1.DeploymentProgressing {
			continue
		}
		if c.Reason == "ProgressDeadlineExceeded" || c.Reason == "NewReplicaSetAvailable" {
			return false
		}
		return now.After(c.LastUpdateTime.Add(time.Duration(*pds)*time.Second + nudgeAfter))
	}
	return false
}

// nudge writes NudgeAnnotation on d's newest ReplicaSet: an update of a ReplicaSet it owns
// queues the Deployment at once. Errors are dropped: the next tick tries again.
func nudge(ctx context.Context, client kubernetes.Interface, d *appsv1.Deployment, now time.Time) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return
	}
	list, err := client.AppsV1().ReplicaSets(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return
	}
	var newest *appsv1.ReplicaSet
	for i := range list.Items {
		rs := &list.Items[i]
		if metav1.IsControlledBy(rs, d) && (newest == nil || newest.CreationTimestamp.Before(&rs.CreationTimestamp)) {
			newest = rs
		}
	}
	if newest == nil {
		return
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, NudgeAnnotation, now.UTC().Format(time.RFC3339Nano))
	_, _ = client.AppsV1().ReplicaSets(d.Namespace).Patch(ctx, newest.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
}
