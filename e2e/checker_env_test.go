package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/reloader/reloader/e2e/checker"
	"github.com/reloader/reloader/internal/dev/testcluster"
)

// env is what every part of the executor shares, set once when the world is made: the test,
// the cluster and namespace, the sequence, its recorder, its draws and the faults injected so
// far. It holds no part's state, and its only methods are the retries of the checker's own
// writes and the workload client: each part embeds it, and reaches another part only through a
// named field.
type env struct {
	t   *testing.T
	ctx context.Context
	cl  *testcluster.Cluster // the e2e cluster, or where rollouts complete (gen 10)
	ns  string
	seq checker.Sequence
	rec *checker.Recorder
	rnd *rand.Rand
	dyn dynamic.Interface
	// faults counts the faults injected, by kind.
	faults map[string]int
}

// retry runs op until it succeeds, the object is gone (errNotThere), or a minute passes: the
// checker's own writes ride through the faults it injects.
func (w *env) retry(what string, op func() error) error {
	var last error
	err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		last = op()
		switch {
		case last == nil:
			return true, nil
		case apierrors.IsNotFound(last) || apierrors.IsAlreadyExists(last) || errors.Is(last, errNotThere):
			return true, nil
		case apierrors.IsInvalid(last) || apierrors.IsForbidden(last):
			return true, nil // refused by a policy the checker put in force: the action is skipped
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w (last: %v)", what, err, last)
	}
	return nil
}

// retryRefused is retry for a write that must happen: a refusal the checker lifted may still be
// in force for a while, and a gate left closed holds a reload past the final round (seed
// 1795681571291661038: the open window was refused, and skipped).
func (w *env) retryRefused(what string, op func() error) error {
	return w.retry(what, func() error {
		err := op()
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return fmt.Errorf("still refused: %v", err) // not wrapped: retry would skip it
		}
		return err
	})
}

var errNotThere = errors.New("not there")

func (w *env) must(err error) {
	if err != nil {
		w.t.Fatal(err)
	}
}

func (w *env) workloads(kind string) dynamic.ResourceInterface {
	return w.dyn.Resource(checker.WorkloadKinds[kind].GVR).Namespace(w.ns)
}
