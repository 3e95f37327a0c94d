package state

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Fencing, for replicas under leader election (Fence). A leader frozen with a state write in
// flight (after its Guard let the request through, before it left the process) may send it after
// a successor took over; unfenced, that late merge patch would put back entries the successor
// had replaced. So:
//   - a fenced store's Load claims every shard it read: it writes its name and the time into the
//     shard's writerAnnotation, on the version it read, which gives each shard a new version;
//   - every write names the version our last read or write left, so the API server refuses (409)
//     a write computed before anyone else wrote the shard, a predecessor's late one included;
//   - after a conflict the store reads the shard's version (metadata only, where the client can)
//     and writes again: a new request, which the Guard refuses on a replica that no longer leads.
//
// A predecessor's write that lands before the claim was read by Load, so memory holds it. The
// controller's other writes to the first shard (WriteOther) go through the same fence. Other
// conflicts (a person's edit, a write of ours whose answer was lost) only cost that second
// attempt: a merge patch of our changed entries, as before, which leaves everyone else's keys
// alone. Unfenced stores write as before, unconditionally.

// writerAnnotation names, on each state ConfigMap, the fenced store that last claimed it.
const writerAnnotation = "reloader/state-writer"

// Fence makes every later Load claim the shards and every write conditional on the shard's
// version, as writer. Call it before Load.
func (s *Store) Fence(writer string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writer = writer
}

// claim gives shard i a new version as s.writer, on the version Load read. The caller holds
// s.mu.
func (s *Store) claim(ctx context.Context, i int) error {
	stamp := s.writer + " " + time.Now().UTC().Format(time.RFC3339Nano)
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": s.version[i], "annotations": map[string]string{writerAnnotation: stamp}}})
	if err != nil {
		return fmt.Errorf("encode state claim: %w", err)
	}
	out, err := s.client.Patch(ctx, s.ShardName(i), types.MergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("claim state ConfigMap %s/%s: written while it was read, so it is read again: %w", s.namespace, s.ShardName(i), err)
	}
	if err != nil {
		return s.explain("patch", s.ShardName(i), err)
	}
	s.version[i] = versionOf(out)
	return nil
}

// fencedAttempts bounds the writes of one flush of a shard that lose to other writers; Run
// retries a flush that still fails.
const fencedAttempts = 5

// patchFenced merge-patches changes into shard on its known version, reading the version again
// after each conflict.
func (s *Store) patchFenced(ctx context.Context, shard int, changes map[string]*string) error {
	var err error
	for attempt := range fencedAttempts {
		if err = s.patchOnVersion(ctx, shard, changes); !apierrors.IsConflict(err) {
			return err
		}
		// Writers that lost together would meet again at once: wait a random, growing while.
		sleep(ctx, rand.N(time.Duration(attempt+1)*10*time.Millisecond))
		if verr := s.fetchVersion(ctx, shard); verr != nil {
			return fmt.Errorf("%w; then %w", err, verr)
		}
	}
	return err
}

func (s *Store) patchOnVersion(ctx context.Context, shard int, changes map[string]*string) error {
	s.mu.Lock()
	version, fenced := s.version[shard], s.writer != ""
	s.mu.Unlock()
	patch := map[string]any{"data": changes}
	if version != "" && fenced {
		patch["metadata"] = map[string]string{"resourceVersion": version}
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encode state patch: %w", err)
	}
	out, err := s.client.Patch(ctx, s.ShardName(shard), types.MergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version[shard] = versionOf(out)
	return nil
}

// VersionReader is what a ConfigMapClient may offer to read a shard's resourceVersion without
// its data; internal/kube.StateClient does.
type VersionReader interface {
	ResourceVersion(ctx context.Context, name string) (string, error)
}

// fetchVersion reads shard's current resourceVersion.
func (s *Store) fetchVersion(ctx context.Context, shard int) error {
	name := s.ShardName(shard)
	var version string
	var err error
	if r, ok := s.client.(VersionReader); ok {
		version, err = r.ResourceVersion(ctx, name)
	} else {
		var cm *corev1.ConfigMap
		cm, err = s.client.Get(ctx, name, metav1.GetOptions{})
		version = versionOf(cm)
	}
	if err != nil {
		return fmt.Errorf("read the version of state ConfigMap %s/%s after a conflict: %w", s.namespace, name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version[shard] = version
	return nil
}

// versionOf is cm's resourceVersion; "" for a client that answers a write with no object.
func versionOf(cm *corev1.ConfigMap) string {
	if cm == nil {
		return ""
	}
	return cm.ResourceVersion
}
