package reloader

import (
	"context"

	"github.com/reloader/reloader/reloader/safe"
	"github.com/reloader/reloader/reloader/workload"
)

// rollouts is the sync of a rollout key: it reads the followed workload from the cache, for the
// tracker to judge its rollout.
type rollouts struct {
	rule    *rule
	tracker *safe.Tracker
}

// sync reads the workload of rollout key k from the cache and hands it to the tracker.
func (r rollouts) sync(ctx context.Context, kind *workload.Kind, k workload.Key) error {
	obj, exists, err := kind.Cached(k.CacheKey())
	if err != nil || !exists {
		return err
	}
	w, ok := r.rule.View(kind, obj)
	if !ok {
		return nil
	}
	return r.tracker.Sync(ctx, k, w)
}
