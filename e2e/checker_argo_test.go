package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/reloader/reloader/e2e/checker"
	"github.com/reloader/reloader/internal/dev/testcluster"
)

// The Rollout CRD, with Argo's status subresource, installed once in the e2e cluster.
var (
	rolloutCRDOnce sync.Once
	rolloutCRDErr  error
)

func ensureRolloutCRD(ctx context.Context, t *testing.T, c *testcluster.Cluster, dyn dynamic.Interface) {
	rolloutCRDOnce.Do(func() {
		if _, err := c.ApplyFile(ctx, "", "testdata/checker-rollouts-crd.yaml"); err != nil && !apierrors.IsAlreadyExists(err) {
			rolloutCRDErr = err
		}
	})
	if rolloutCRDErr != nil {
		t.Fatalf("install the Rollout CRD: %v", rolloutCRDErr)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := dyn.Resource(checker.RolloutGVR).Namespace("default").List(ctx, metav1.ListOptions{})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Rollouts not served 30 s after their CRD: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
