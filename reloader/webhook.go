package reloader

import (
	"context"

	"github.com/reloader/reloader/policy"
)

// syncConfigWebhook is a config sync under --webhook-url, stakater's mode that calls a URL
// instead of reloading: no workload is watched or patched. A change (policy.WebhookDue) calls the
// webhook, and only once it answered does the state record the content, so a failed call is
// retried, and a change made while the reloader was down is notified at its start. A crash
// between the call and the state write calls it again on the next start.
func (c *Controller) syncConfigWebhook(ctx context.Context, k key) error {
	c.changes.take(k)
	if !c.caches.allowed(k.namespace) {
		return nil
	}
	rec := c.caches.lookup(k)
	if rec != nil && rec.Annotations[c.opts.Annotations.Ignore] == "true" {
		return nil
	}
	skey := c.names.config(k)
	e, known := c.state.Get(skey)
	var current policy.Content
	if rec != nil {
		current = c.records.content(rec, nil)
	}
	recorded := policy.Recorded{Known: known, Deleted: e.Deleted, Hash: e.Hash}
	if policy.WebhookDue(rec != nil, current, recorded, c.opts.ReloadOnCreate, c.opts.ReloadOnDelete) {
		if err := c.opts.Webhook.Post(ctx); err != nil {
			return err
		}
		c.log.Info("config changed; called --webhook-url instead of reloading", "kind", k.kind, "namespace", k.namespace, "name", k.name)
	}
	c.changes.forget(k)
	if rec == nil {
		c.tombstones.settle(k, false)
		return nil
	}
	c.state.Set(skey, rec.Hash)
	return nil
}
