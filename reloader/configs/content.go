package configs

import (
	"log/slog"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/state"
)

// Content is what a dependent reading keys of rec (nil: all of it) should carry: a ConfigMap's
// plain hash, or a Secret's keyed hash with the plain one earlier versions wrote; for the whole
// content, also Collaborne's hash, so that its state entries are taken over (collaborne.go).
func (rs *Records) Content(rec *Record, keys []string) policy.Content {
	key := rs.hashKey.Key()
	switch {
	case rec.Legacy == nil && keys == nil:
		return policy.Content{Value: rec.Hash(), Collaborne: rec.Collaborne.String()}
	case rec.Legacy == nil:
		return policy.Content{Value: confighash.Subset(rec.Keys, keys), Whole: rec.Hash()}
	case keys == nil:
		return policy.Content{Value: rec.Hash(), Legacy: rec.Legacy.Hash.String(), Collaborne: rec.Collaborne.String()}
	}
	return policy.Content{Value: key.Subset(rec.Keys, keys), Legacy: confighash.Subset(rec.Legacy.Keys, keys), Whole: rec.Hash()}
}

// KeyContent is what the state records for one data key of rec that a dependent reads.
func (rs *Records) KeyContent(rec *Record, dataKey string) policy.Content {
	if rec.Legacy == nil {
		return policy.Content{Value: confighash.KeyValue(rec.Keys, dataKey)}
	}
	return policy.Content{Value: rs.hashKey.Key().KeyValue(rec.Keys, dataKey),
		Legacy: confighash.KeyValue(rec.Legacy.Keys, dataKey)}
}

// ReportStateHashes says once, at start, how many state entries hold Secret hashes that the
// current key did not make. Each is re-recorded under the current key when its config is synced.
func ReportStateHashes(store *state.Configs, id string, log *slog.Logger) {
	other := store.Count(func(_ string, e state.Entry) bool {
		kid, keyed := confighash.KeyIDOf(e.Hash)
		return keyed && kid != id
	})
	if other > 0 {
		log.Warn("state entries were made under another hash key (its Secret was deleted or replaced): "+
			"they are taken as current, restart nothing and are re-recorded under this key; "+
			"a Secret change made while the reloader was down and the key was lost is not caught up",
			"entries", other, "key_id", id)
	}
	legacy := store.Count(func(k string, e state.Entry) bool {
		return entrykeys.ConfigKindOf(k) == policy.KindSecret && confighash.IsPlain(e.Hash)
	})
	if legacy > 0 {
		log.Info("state holds unkeyed Secret hashes written by an earlier version: each is compared as before and re-recorded keyed",
			"entries", legacy, "key_id", id)
	}
}
