package safe

// A config cache behind the workload cache.
//
// The informers of configs and of workloads are separate watches: either may lag the other. A
// workload written after the version of a config this process holds, whose marker holds content
// this process has never recorded, may carry another writer's reload to content newer than the
// cache's: a second replica acting at once (leader election off by mistake), or a leader's
// last patch seen by its successor. Patching it "back" to the cached content would restart the
// workload twice. Before such a patch, the config is read live; when it is newer than the
// cache, the patch waits for the informer (workload.ErrStale, retried soon), which then judges it again.
//
// The read is rare: it needs a stale marker that is not the content the state records, on a
// workload written after the config. A marker an old manifest put back passes the same check,
// once, and is corrected.

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/internal/kube"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/workload"
)

// Lag is the part that tells a change of a workload made by another writer from a config cache
// behind the workload cache, with a live read of the config.
type Lag struct {
	entries ConfigEntries
	cache   Cache
	live    LiveVersions
}

// ConfigEntries reads the state's entry of a config: the content hash it records, a
// tombstone's too, and whether there is one (configs.Records.EntryHash).
type ConfigEntries interface {
	EntryHash(k workload.Key) (hash string, known bool)
}

// LiveVersions reads a config's resourceVersion from the API server ("" when it is gone).
type LiveVersions interface {
	LiveVersion(ctx context.Context, r policy.ConfigRef, namespace string) (string, error)
}

// NewLag builds a Lag over the state's config entries, the config cache and live reads.
func NewLag(entries ConfigEntries, cache Cache, live LiveVersions) *Lag {
	return &Lag{entries: entries, cache: cache, live: live}
}

// Confirm returns workload.ErrStale when a change of w may come from a config cache behind w.
func (l *Lag) Confirm(ctx context.Context, w workload.View, changes []policy.Change) error {
	for _, ch := range changes {
		rec := l.cache.Lookup(workload.ConfigKey(ch.Ref, w.Key.Namespace))
		if rec == nil || !l.markerUnseen(w, ch, rec) {
			continue
		}
		rv, err := l.live.LiveVersion(ctx, ch.Ref, w.Key.Namespace)
		switch {
		case apierrors.IsForbidden(err):
			return nil // no get permission (a hand-made Role): judge by the cache, as before
		case err != nil:
			return fmt.Errorf("read %s %s/%s to confirm the cache before patching %s: %w", ch.Ref.Kind, w.Key.Namespace, ch.Ref.Name, w.Key, err)
		case rv != rec.ResourceVersion():
			return workload.ErrStale
		}
	}
	return nil
}

// markerUnseen reports whether w, written after the cached version of the config, carries a
// marker for it that is neither the wanted content nor the content the state records.
func (l *Lag) markerUnseen(w workload.View, ch policy.Change, rec *configs.Record) bool {
	if !policy.WrittenBefore(rec.ResourceVersion(), w.Meta.GetResourceVersion()) {
		return false
	}
	meta := w.Meta.GetAnnotations()
	if w.Target.MarkerOf(meta, w.Tmpl, ch.Ref, policy.Content{Value: ch.Value}) != policy.Stale {
		return false // no marker: the state asked for the change
	}
	hash, known := l.entries.EntryHash(workload.ConfigKey(ch.Ref, w.Key.Namespace))
	return !known || hash == "" || w.Target.MarkerOf(meta, w.Tmpl, ch.Ref, policy.Content{Value: hash}) != policy.Current
}

// LiveClients are LiveVersions through the API server's clients.
type LiveClients struct{ *kube.Clients }

// LiveVersion reads config r of namespace ns from the API server.
func (clients LiveClients) LiveVersion(ctx context.Context, r policy.ConfigRef, ns string) (string, error) {
	var (
		m   metav1.Object
		err error
	)
	if r.Kind == policy.KindSecret {
		m, err = clients.Secrets(ns).Get(ctx, r.Name, metav1.GetOptions{})
	} else {
		m, err = clients.ConfigMaps(ns).Get(ctx, r.Name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return m.GetResourceVersion(), nil
}
