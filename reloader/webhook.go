package reloader

import (
	"context"
	"log/slog"

	"github.com/reloader/reloader/alert"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/safe"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// webhookSync is the config sync under --webhook-url, stakater's mode that calls a URL
// instead of reloading: no workload is watched or patched. A change (policy.WebhookDue) calls the
// webhook, and only once it answered does the state record the content, so a failed call is
// retried, and a change made while the reloader was down is notified at its start. A crash
// between the call and the state write calls it again on the next start. Content that does not
// validate calls nothing and is not recorded, as in workload mode (validate.go).
type webhookSync struct {
	webhook                        alert.Webhook
	annotations                    policy.Annotations
	reloadOnCreate, reloadOnDelete bool
	caches                         *caches
	changes                        *changeLog
	store                          *state.Configs
	names                          entrykeys.Names
	records                        *configs.Records
	tombstones                     *configs.Tombstones
	validation                     *safe.Validation
	log                            *slog.Logger
}

// sync calls the webhook for a change of config k, then records its content.
func (ws *webhookSync) sync(ctx context.Context, k workload.Key) error {
	fresh := ws.changes.take(k)
	if !ws.caches.allowed(k.Namespace) {
		return nil
	}
	rec := ws.caches.lookup(k)
	if rec != nil && ws.annotations.Ignores(rec.Annotations()) {
		return nil
	}
	if rec != nil && rec.Invalid() != "" {
		ws.validation.Invalid(k, rec, fresh)
		ws.changes.forget(k)
		return nil
	}
	ws.validation.Valid(rec)
	skey := ws.names.Config(k)
	e, known := ws.store.Get(skey)
	var current policy.Content
	if rec != nil {
		current = ws.records.Content(rec, nil)
	}
	recorded := policy.Recorded{Known: known, Deleted: e.Deleted, Hash: e.Hash}
	if policy.WebhookDue(rec != nil, current, recorded, ws.reloadOnCreate, ws.reloadOnDelete) {
		if err := ws.webhook.Post(ctx); err != nil {
			return err
		}
		ws.log.Info("config changed; called --webhook-url instead of reloading", "kind", k.Kind, "namespace", k.Namespace, "name", k.Name)
	}
	ws.changes.forget(k)
	if rec == nil {
		ws.tombstones.Settle(k, false)
		return nil
	}
	ws.records.Write(k, rec)
	return nil
}
