package e2e

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reloader/reloader/e2e/checker"
	"github.com/reloader/reloader/internal/dev/testcluster"
)

// rolloutsTimeout is --rollout-timeout where rollouts complete: far past what a rollout of one
// kwok pod takes, so that only a broken Deployment's rollout fails.
const rolloutsTimeout = 60 * time.Second

// brokenDeadline is a broken Deployment's progressDeadlineSeconds: its rollouts fail this long
// after they begin (the condition's times are whole seconds, so rolloutTimeout, the shortest
// span the oracle takes for a rollback, stays below it).
const brokenDeadline = 4

// The cluster whose rollouts complete, started by the first sequence that needs it and
// stopped by TestMain.
var (
	podsOnce    sync.Once
	podsCluster *testcluster.Cluster
	podsErr     error
)

// rolloutsCluster starts, once, the cluster whose rollouts complete.
func rolloutsCluster(t *testing.T) *testcluster.Cluster {
	podsOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		podsCluster, podsErr = testcluster.Start(ctx, testcluster.Options{Pods: true, Log: os.Stderr})
	})
	if podsErr != nil {
		t.Fatalf("start the cluster whose rollouts complete: %v", podsErr)
	}
	return podsCluster
}

// stopRolloutsCluster stops the cluster whose rollouts complete, if a sequence started it.
func stopRolloutsCluster() error {
	if podsCluster == nil {
		return nil
	}
	return podsCluster.Stop()
}

// rolloutSpec gives a Deployment of a sequence whose rollouts complete one replica, and a
// broken one a short progress deadline.
func rolloutSpec(u *unstructured.Unstructured, broken bool) error {
	if err := unstructured.SetNestedField(u.Object, int64(1), "spec", "replicas"); err != nil {
		return fmt.Errorf("set the replicas of %s: %w", u.GetName(), err)
	}
	if broken {
		if err := unstructured.SetNestedField(u.Object, int64(brokenDeadline), "spec", "progressDeadlineSeconds"); err != nil {
			return fmt.Errorf("set the progress deadline of %s: %w", u.GetName(), err)
		}
	}
	return nil
}

// The checker names the cluster's not-ready variable without importing testcluster.
func TestBrokenPodsUseTheClustersNotReadyVariable(t *testing.T) {
	if checker.NotReadyWhen != testcluster.NotReadyWhen {
		t.Fatalf("checker.NotReadyWhen = %q, want testcluster.NotReadyWhen %q", checker.NotReadyWhen, testcluster.NotReadyWhen)
	}
}
