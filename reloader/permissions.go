package reloader

import (
	"context"
	"log/slog"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/reloader/reloader/reloader/workload"
)

// dropForbiddenKinds turns off, before the informers start, each kind with a probe that the
// reloader may not list: a Role written before CronJob and Job reloads existed (or stakater's
// chart with them ignored) would otherwise keep every cache from syncing, and so every reload
// from happening. It is said once, with what to grant. It returns the informers left to run.
func dropForbiddenKinds(ctx context.Context, kinds map[string]*workload.Kind, informers []cache.SharedIndexInformer, log *slog.Logger) []cache.SharedIndexInformer {
	for name, k := range kinds {
		if k.Probe == nil {
			continue
		}
		if err := k.Probe(ctx); !apierrors.IsForbidden(err) {
			continue
		}
		log.Warn("the reloader may not list "+name+"s: their reloads are off; grant get, list and watch on them (and what reloading them needs, see docs/install-and-upgrade.md, \"Permissions\"), or pass --ignored-workload-types to say so",
			"kind", name)
		delete(kinds, name)
		informers = slices.DeleteFunc(informers, func(inf cache.SharedIndexInformer) bool { return inf == k.Informer })
	}
	return informers
}
