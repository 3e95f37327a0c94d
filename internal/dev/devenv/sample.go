package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/reloader/reloader/internal/dev/testcluster"
)

// apply creates the namespace and every object of the sample in it.
func apply(ctx context.Context, c *testcluster.Cluster, ns, path string) error {
	if _, err := c.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	_, err := c.ApplyFile(ctx, ns, path)
	return err
}

// waitRolledOut waits until the Deployment has wantSets ReplicaSets and all its replicas are
// updated and available.
func waitRolledOut(ctx context.Context, client kubernetes.Interface, name string, wantSets int) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		sets, err := replicaSets(ctx, client, d)
		if err != nil {
			return false, err
		}
		s := d.Status
		return len(sets) == wantSets && s.ObservedGeneration == d.Generation && s.UpdatedReplicas == *d.Spec.Replicas &&
			s.AvailableReplicas == *d.Spec.Replicas && s.Replicas == *d.Spec.Replicas, nil
	})
	if err != nil {
		return fmt.Errorf("wait for deployment %s to roll out: %w", name, err)
	}
	return nil
}

func replicaSets(ctx context.Context, client kubernetes.Interface, d *appsv1.Deployment) ([]string, error) {
	list, err := client.AppsV1().ReplicaSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list replicasets: %w", err)
	}
	var names []string
	for _, rs := range list.Items {
		if metav1.IsControlledBy(&rs, d) {
			names = append(names, rs.Name)
		}
	}
	return names, nil
}

// runDemo edits the ConfigMap the way a user would and shows the rollout the reloader causes.
func runDemo(ctx context.Context, c *testcluster.Cluster) error {
	client := c.Client()
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	before, err := client.AppsV1().Deployments(namespace).Get(waitCtx, "web", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get deployment web: %w", err)
	}
	time.Sleep(2 * time.Second) // let the reloader record the current hashes first
	say("editing ConfigMap app-config: LOG_LEVEL info -> debug")
	edited := time.Now()
	patch := []byte(`{"data":{"LOG_LEVEL":"debug"}}`)
	if _, err := client.CoreV1().ConfigMaps(namespace).Patch(waitCtx, "app-config", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patch configmap app-config: %w", err)
	}
	if err := waitRolledOut(waitCtx, client, "web", 2); err != nil {
		return err
	}
	after, err := client.AppsV1().Deployments(namespace).Get(waitCtx, "web", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get deployment web: %w", err)
	}
	pods, err := client.CoreV1().Pods(namespace).List(waitCtx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	printSummary(before, after, pods.Items, time.Since(edited))
	return nil
}

func printSummary(before, after *appsv1.Deployment, pods []corev1.Pod, took time.Duration) {
	var vars []string
	for _, e := range after.Spec.Template.Spec.Containers[0].Env {
		if strings.HasPrefix(e.Name, "_RELOADER_-") {
			vars = append(vars, e.Name+"="+e.Value)
		}
	}
	var running []string
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			running = append(running, p.Name+" "+string(p.Status.Phase))
		}
	}
	fmt.Printf(`
==> Demo summary
    ConfigMap app-config changed; Deployment web rolled out in %s (coalesce period 2s included).
    pod template generation: %d -> %d (one restart)
    env var set by the reloader: %s
    pods now: %s
`, took.Round(100*time.Millisecond), before.Generation, after.Generation, strings.Join(vars, ", "), strings.Join(running, ", "))
}
