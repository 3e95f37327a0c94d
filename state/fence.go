package state

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
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

// shardIO reads and writes the state ConfigMaps for the store: every API call, and the fence. It
// knows each shard's name and last known version, and nothing of what the entries mean. Its own
// lock guards the versions; the store may hold its lock while calling it, never the reverse.
type shardIO struct {
	client    ConfigMapClient
	namespace string
	name      string
	log       *slog.Logger

	mu sync.Mutex
	// version is each shard's resourceVersion as our last read or write of it left it; a write
	// applies only to that version. "" when unknown: the write is unconditional.
	version [MaxShards]string
	// checked is each shard's resourceVersion as a check last found it (keep.go): a version
	// someone else left, with nothing of ours to write back.
	checked [MaxShards]string
	// wrote is when a write of ours to each shard last answered: the shard existed then.
	wrote  [MaxShards]time.Time
	writer string // the fenced store's name (Fence); "" writes unconditionally
}

// shardName returns the name of shard i.
func (io *shardIO) shardName(i int) string {
	if i == 0 {
		return io.name
	}
	return fmt.Sprintf("%s-%d", io.name, i)
}

// fence makes every later write conditional on the shard's version, as writer.
func (io *shardIO) fence(writer string) {
	io.mu.Lock()
	defer io.mu.Unlock()
	io.writer = writer
}

func (io *shardIO) fenced() bool {
	io.mu.Lock()
	defer io.mu.Unlock()
	return io.writer != ""
}

func (io *shardIO) setVersion(i int, version string) {
	io.mu.Lock()
	defer io.mu.Unlock()
	io.version[i] = version
}

// setWritten keeps the version a write of ours to shard i left, and when it answered.
func (io *shardIO) setWritten(i int, version string) {
	io.mu.Lock()
	defer io.mu.Unlock()
	io.version[i], io.wrote[i] = version, time.Now()
}

// writtenWithin reports whether a write of ours to shard i answered within d.
func (io *shardIO) writtenWithin(i int, d time.Duration) bool {
	io.mu.Lock()
	defer io.mu.Unlock()
	return time.Since(io.wrote[i]) < d
}

// forget drops every known version, before a Load reads them again.
func (io *shardIO) forget() {
	io.mu.Lock()
	defer io.mu.Unlock()
	io.version, io.checked = [MaxShards]string{}, [MaxShards]string{}
}

// get reads shard i whole, and keeps its version.
func (io *shardIO) get(ctx context.Context, i int) (*corev1.ConfigMap, error) {
	cm, err := io.client.Get(ctx, io.shardName(i), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	io.setVersion(i, cm.ResourceVersion)
	return cm, nil
}

// claim gives shard i a new version as the fenced writer, on the version Load read.
func (io *shardIO) claim(ctx context.Context, i int) error {
	io.mu.Lock()
	stamp := io.writer + " " + time.Now().UTC().Format(time.RFC3339Nano)
	version := io.version[i]
	io.mu.Unlock()
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": version, "annotations": map[string]string{writerAnnotation: stamp}}})
	if err != nil {
		return fmt.Errorf("encode state claim: %w", err)
	}
	out, err := io.client.Patch(ctx, io.shardName(i), types.MergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("claim state ConfigMap %s/%s: written while it was read, so it is read again: %w", io.namespace, io.shardName(i), err)
	}
	if err != nil {
		return io.explain("patch", io.shardName(i), err)
	}
	io.setVersion(i, versionOf(out))
	return nil
}

// fencedAttempts bounds the writes of one flush of a shard that lose to other writers; Run
// retries a flush that still fails.
const fencedAttempts = 5

// patch merge-patches changes into shard on its known version, reading the version again after
// each conflict.
func (io *shardIO) patch(ctx context.Context, shard int, changes map[string]*string) error {
	var err error
	for attempt := range fencedAttempts {
		if err = io.patchOnVersion(ctx, shard, changes); !apierrors.IsConflict(err) {
			return err
		}
		// Writers that lost together would meet again at once: wait a random, growing while.
		sleep(ctx, rand.N(time.Duration(attempt+1)*10*time.Millisecond))
		if verr := io.fetchVersion(ctx, shard); verr != nil {
			return fmt.Errorf("%w; then %w", err, verr)
		}
	}
	return err
}

func (io *shardIO) patchOnVersion(ctx context.Context, shard int, changes map[string]*string) error {
	io.mu.Lock()
	version, fenced := io.version[shard], io.writer != ""
	io.mu.Unlock()
	patch := map[string]any{"data": changes}
	if version != "" && fenced {
		patch["metadata"] = map[string]string{"resourceVersion": version}
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encode state patch: %w", err)
	}
	out, err := io.client.Patch(ctx, io.shardName(shard), types.MergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		return err
	}
	io.setWritten(shard, versionOf(out))
	return nil
}

// VersionReader is what a ConfigMapClient may offer to read a shard's resourceVersion without
// its data; internal/kube.StateClient does.
type VersionReader interface {
	ResourceVersion(ctx context.Context, name string) (string, error)
}

// fetchVersion reads shard's current resourceVersion, and keeps it.
func (io *shardIO) fetchVersion(ctx context.Context, shard int) error {
	version, err := io.readVersion(ctx, shard)
	if err != nil {
		return fmt.Errorf("read the version of state ConfigMap %s/%s after a conflict: %w", io.namespace, io.shardName(shard), err)
	}
	io.setVersion(shard, version)
	return nil
}

// readVersion reads shard's current resourceVersion, metadata only where the client can.
func (io *shardIO) readVersion(ctx context.Context, shard int) (string, error) {
	name := io.shardName(shard)
	if r, ok := io.client.(VersionReader); ok {
		return r.ResourceVersion(ctx, name)
	}
	cm, err := io.client.Get(ctx, name, metav1.GetOptions{})
	return versionOf(cm), err
}

// knows reports whether version is what our last read or write of shard left, or what a check
// (keep.go) found holding what memory holds.
func (io *shardIO) knows(shard int, version string) bool {
	io.mu.Lock()
	defer io.mu.Unlock()
	return version != "" && (version == io.version[shard] || version == io.checked[shard])
}

// setChecked records that shard, at version, was found holding what memory holds, or made to.
func (io *shardIO) setChecked(shard int, version string) {
	io.mu.Lock()
	defer io.mu.Unlock()
	io.checked[shard] = version
}

// create creates shard i holding data; if someone created it since our read, data is merged in.
func (io *shardIO) create(ctx context.Context, i int, data map[string]string) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: io.shardName(i), Namespace: io.namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "reloader"}},
		Data: data,
	}
	out, err := io.client.Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return io.patchAll(ctx, i, data)
	}
	if err == nil {
		io.setWritten(i, versionOf(out))
		io.log.Info("created state ConfigMap", "configmap", cm.Name, "namespace", io.namespace, "entries", len(data))
	}
	return io.explain("create", cm.Name, err)
}

// patchAll merges data into shard i, unconditionally.
func (io *shardIO) patchAll(ctx context.Context, i int, data map[string]string) error {
	body, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		return fmt.Errorf("encode state patch: %w", err)
	}
	out, err := io.client.Patch(ctx, io.shardName(i), types.MergePatchType, body, metav1.PatchOptions{})
	if err == nil {
		io.setWritten(i, versionOf(out))
	}
	return io.explain("patch", io.shardName(i), err)
}

// explain wraps err and, for a permission error, names the verb and resource the reloader lacks.
func (io *shardIO) explain(verb, name string, err error) error {
	if err == nil {
		return nil
	}
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%s state ConfigMap %s/%s: the reloader lacks permission %q on configmaps in namespace %q; grant it in the Role (or create the ConfigMap yourself): %w",
			verb, io.namespace, name, verb, io.namespace, err)
	}
	return fmt.Errorf("%s state ConfigMap %s/%s: %w", verb, io.namespace, name, err)
}

// versionOf is cm's resourceVersion; "" for a client that answers a write with no object.
func versionOf(cm *corev1.ConfigMap) string {
	if cm == nil {
		return ""
	}
	return cm.ResourceVersion
}
