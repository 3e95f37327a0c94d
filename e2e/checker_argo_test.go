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

// The Rollout CRD, with Argo's status subresource, installed once in each cluster a sequence
// runs on: the e2e cluster, the one whose rollouts complete, or a sequence's own (ownCluster).
var (
	rolloutCRDMu        sync.Mutex
	rolloutCRDInstalled = map[*testcluster.Cluster]bool{}
)

func ensureRolloutCRD(ctx context.Context, t *testing.T, c *testcluster.Cluster, dyn dynamic.Interface) {
	rolloutCRDMu.Lock()
	if !rolloutCRDInstalled[c] {
		if _, err := c.ApplyFile(ctx, "", "testdata/checker-rollouts-crd.yaml"); err != nil && !apierrors.IsAlreadyExists(err) {
			rolloutCRDMu.Unlock()
			t.Fatalf("install the Rollout CRD: %v", err)
		}
		rolloutCRDInstalled[c] = true
	}
	rolloutCRDMu.Unlock()
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
