package reloader

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
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/runs"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// lagCheck is the part that tells a change of a workload made by another writer from a config
// cache behind the workload cache, with a live read of the config.
type lagCheck struct {
	store  *state.Configs
	names  entrykeys.Names
	lookup func(k key) *configRecord
	// live reads a config's resourceVersion from the API server ("" when it is gone).
	live func(ctx context.Context, r policy.ConfigRef, namespace string) (string, error)
}

// confirm returns workload.ErrStale when a change of w may come from a config cache behind w.
func (l *lagCheck) confirm(ctx context.Context, w workloadView, changes []policy.Change) error {
	for _, ch := range changes {
		rec := l.lookup(workload.ConfigKey(ch.Ref, w.Key.Namespace))
		if rec == nil || !l.markerUnseen(w, ch, rec) {
			continue
		}
		rv, err := l.live(ctx, ch.Ref, w.Key.Namespace)
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
func (l *lagCheck) markerUnseen(w workloadView, ch policy.Change, rec *configRecord) bool {
	if !runs.WrittenBefore(rec.ResourceVersion(), w.Meta.GetResourceVersion()) {
		return false
	}
	meta := w.Meta.GetAnnotations()
	if w.Target.MarkerOf(meta, w.Tmpl, ch.Ref, policy.Content{Value: ch.Value}) != policy.Stale {
		return false // no marker: the state asked for the change
	}
	e, known := l.store.Get(l.names.Config(workload.ConfigKey(ch.Ref, w.Key.Namespace)))
	return !known || e.Hash == "" || w.Target.MarkerOf(meta, w.Tmpl, ch.Ref, policy.Content{Value: e.Hash}) != policy.Current
}

// liveVersion is lagCheck.live through clients.
func liveVersion(clients *kube.Clients) func(ctx context.Context, r policy.ConfigRef, ns string) (string, error) {
	return func(ctx context.Context, r policy.ConfigRef, ns string) (string, error) {
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
}
