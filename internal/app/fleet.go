package app

import (
	"context"
	"errors"
	"sync"

	"github.com/reloader/reloader/reloader"
)

// fleet is one controller per watched namespace (--namespaces): each needs only a Role in its
// namespace, and keeps its state there, exactly as --namespace does.
type fleet []*reloader.Controller

// Ready reports whether every controller has synced.
func (f fleet) Ready() bool {
	for _, c := range f {
		if !c.Ready() {
			return false
		}
	}
	return true
}

// Run runs every controller until ctx ends or one of them fails; a failure stops the others,
// which flush as on shutdown, and is returned.
func (f fleet) Run(ctx context.Context) error {
	if len(f) == 1 {
		return f[0].Run(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(f))
	for i, c := range f {
		wg.Go(func() {
			if errs[i] = c.Run(ctx); errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
