package testcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// NodeName is the name of the fake node kwok runs when Options.Pods is set.
const NodeName = "kwok-node-0"

// controllers leaves out what needs real nodes or would fight the fake one:
// pod CIDR allocation, node health tainting and legacy token secrets.
const controllers = "*,-nodeipam,-nodelifecycle,-serviceaccount-token"

// startPodComponents runs the controller manager, the scheduler and kwok, and
// registers one fake node that is Ready and schedulable.
func (c *Cluster) startPodComponents(ctx context.Context, bins Binaries, certs pki) error {
	begin := time.Now()
	kcm, err := c.procs.run("kube-controller-manager", bins.KubeControllerManager,
		"--kubeconfig", c.Kubeconfig,
		"--controllers", controllers,
		"--leader-elect=false",
		"--secure-port=0",
		"--root-ca-file", certs.CACert,
		"--cluster-signing-cert-file", certs.CACert,
		"--cluster-signing-key-file", certs.CAKey,
		"--service-cluster-ip-range", serviceCIDR,
		// Tests run in parallel on one controller manager: its defaults (20 requests/s, 5
		// workers per controller) would hold back one test's rollout behind another's.
		"--kube-api-qps=200", "--kube-api-burst=400",
		"--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10", "--concurrent-statefulset-syncs=10",
		"--concurrent-daemonset-syncs=10", "--concurrent-job-syncs=10", "--concurrent-cron-job-syncs=10",
	)
	if err != nil {
		return err
	}
	if _, err := c.procs.run("kube-scheduler", bins.KubeScheduler,
		"--kubeconfig", c.Kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--kube-api-qps=200", "--kube-api-burst=400",
	); err != nil {
		return err
	}
	notReady, err := writeNotReadyStage(c.Dir)
	if err != nil {
		return fmt.Errorf("write kwok stage: %w", err)
	}
	kwok, err := c.procs.run("kwok", bins.Kwok,
		"--kubeconfig", c.Kubeconfig,
		"--config", bins.KwokStages,
		"--config", notReady,
		"--manage-all-nodes=true",
	)
	if err != nil {
		return err
	}
	if err := c.addNode(ctx, kwok); err != nil {
		return err
	}
	// The serviceaccount controller creating default/default shows the
	// controller manager is up and running its controllers.
	if err := kcm.waitFor(ctx, "service account default/default", controllerTimeout, c.serviceAccountExists("default", "default")); err != nil {
		return err
	}
	if err := c.procs.checkRunning(); err != nil {
		return err
	}
	if c.nudging {
		ctx, cancel := context.WithCancel(context.Background())
		c.stopNudge, c.nudged = cancel, make(chan error, 1)
		go func() { c.nudged <- nudgeDeadlines(ctx, c.Config) }()
	}
	c.procs.logf("controller manager, scheduler, kwok and node %s ready in %s", NodeName, time.Since(begin).Round(time.Millisecond))
	return nil
}

// addNode registers the fake node, waits for kwok to make it Ready and then
// removes the not-ready taint the node lifecycle controller would remove.
func (c *Cluster) addNode(ctx context.Context, kwok *process) error {
	if _, err := c.client.CoreV1().Nodes().Create(ctx, fakeNode(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create node %s: %w", NodeName, err)
	}
	return kwok.waitFor(ctx, "node "+NodeName+" to be Ready and untainted", nodeTimeout, c.nodeSchedulable)
}

func fakeNode() *corev1.Node {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			Labels: map[string]string{
				"type":                   "kwok",
				"kubernetes.io/hostname": NodeName,
				"kubernetes.io/os":       "linux",
			},
		},
		Status: corev1.NodeStatus{Capacity: resources, Allocatable: resources},
	}
}

// nodeSchedulable reports whether the fake node is Ready without the
// not-ready taint, removing the taint once the node is Ready.
func (c *Cluster) nodeSchedulable(ctx context.Context) (bool, error) {
	node, err := c.client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	if !nodeReady(node) {
		return false, errors.New("node is not Ready yet")
	}
	if !hasTaint(node, corev1.TaintNodeNotReady) {
		return true, nil
	}
	if err := c.removeTaint(ctx, corev1.TaintNodeNotReady); err != nil {
		return false, fmt.Errorf("remove taint %s: %w", corev1.TaintNodeNotReady, err)
	}
	return false, nil
}

func (c *Cluster) removeTaint(ctx context.Context, key string) error {
	nodes := c.client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var kept []corev1.Taint
		for _, t := range node.Spec.Taints {
			if t.Key != key {
				kept = append(kept, t)
			}
		}
		node.Spec.Taints = kept
		_, err = nodes.Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

func nodeReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasTaint(node *corev1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func (c *Cluster) serviceAccountExists(namespace, name string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
		return err == nil, err
	}
}
