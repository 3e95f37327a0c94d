package reloader

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// The switch from stakater Reloader compares a workload's STAKATER_* variable with stakater's
// hash of the config once: at the first start, where the state knows no content yet
// (docs/migrating.md). Once that start has synced every config and written the state, it notes
// in the state that the comparison is over. A config entry the state loses later (corrupt, or
// deleted) is then a config never seen, which restarts nothing, and not compared again with a
// variable from stakater's last restart: that variable lags by every change since, read by the
// workload or not (soak seed 1795725183900764066@4 restarted a CronJob for a change of a key it
// does not read, once a corrupt entry made its state unknown). A start killed before the note,
// having recorded some configs, compares again at the next start, so no change stakater missed
// is lost; one that finds no state at all but the key an earlier reloader made does not
// (stakaterToCompare).
const stakaterComparedKey = "reloader.stakater-compared"

// stakaterCompared reports whether a reloader has made the first comparison with this state.
func stakaterCompared(store *state.Store) bool {
	_, ok := store.Other(stakaterComparedKey)
	return ok
}

// stakaterToCompare reports whether this start compares stakater's variables: not once a start
// noted the comparison over, nor when the state holds nothing (empty) while the hash key Secret
// was made by a reloader before this start (keyInherited). Then a reloader ran here and its state
// was lost: the switch is over, and a variable from stakater's last restart would restart
// workloads for every change since, read or not. A first start killed before its note left the
// entries it recorded, so the next start still compares.
func stakaterToCompare(store *state.Store, empty, keyInherited bool, log *slog.Logger) bool {
	if stakaterCompared(store) {
		return false
	}
	if empty && keyInherited {
		log.Info("the state is empty but an earlier reloader made the hash key Secret: the state was lost, " +
			"the switch from stakater is over, and stakater's variables are not compared")
		return false
	}
	return true
}

// noteStakaterCompared waits until the start-up's syncs are done (drained), flushes the state
// they wrote, notes that the comparison is over (or, when stakaterToCompare found it over
// already, that it is), and stops comparing. It gives up when ctx ends:
// the next start compares again.
func noteStakaterCompared(ctx context.Context, store *state.Store, drained func(context.Context, time.Duration) bool,
	comparing *atomic.Bool, log *slog.Logger) {
	for !drained(ctx, time.Second) {
		if ctx.Err() != nil {
			return
		}
	}
	if err := store.Flush(ctx); err != nil {
		log.Warn("cannot note that stakater's variables were compared; the next start compares them again", "err", err)
		return
	}
	at := time.Now().UTC().Format(time.RFC3339)
	if err := store.WriteOther(ctx, stakaterComparedKey, &at); err != nil {
		log.Warn("cannot note that stakater's variables were compared; the next start compares them again", "err", err)
		return
	}
	comparing.Store(false)
}

// stakaterOthers gives stakater's hashes of the other configs w reloads on whose names fold to
// r's variable (policy.StakaterFacts).
func (ru *rule) stakaterOthers(w workload.View, r policy.ConfigRef) func() []string {
	return func() []string {
		var out []string
		name := policy.StakaterVar(r)
		for _, other := range ru.ReloadsOn(w) {
			if other == r || policy.StakaterVar(other) != name {
				continue
			}
			if o := ru.caches.lookup(workload.ConfigKey(other, w.Key.Namespace)); o != nil {
				out = append(out, o.Stakater.String())
			}
		}
		return out
	}
}
