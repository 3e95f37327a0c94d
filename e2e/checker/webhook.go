package checker

import (
	"fmt"
)

// Generator version 10: `--webhook-url` sequences (reloader/webhook.go). In a share of the
// sequences with validated configs, the reloader calls a receiver of the test's instead of
// reloading: a change of a config POSTs {"webhook":"update successful"}, which names no config.
// The receiver is the observer:
//   - no workload is restarted by the reloader;
//   - webhookInvalid (after a quiet point): content that does not validate calls nothing
//     within the coalescing period and 3 s, with nothing else changing, and the next valid
//     content of that config calls the webhook (when the state knew the config);
//   - after the final change of every config, at least one call.
//
// Calls are not counted against changes: a restart between a call and its state write calls
// again, and the body names no config.

// webhookInvalidEvery: how often, after a main action, a webhook sequence judges validation.
const webhookInvalidEvery = 6

// webhookMode draws a --webhook-url sequence: a fifth of the sequences with validated configs that
// run neither where rollouts complete nor over all namespaces.
func (g *laterDraws) webhookMode(s Sequence) bool {
	return !s.Rollouts && !s.NsSelector && len(s.Validated) > 0 && g.eleventh.IntN(5) == 0
}

// webhookInvalid draws a quiet point, then an invalid content of a validated config that exists
// and is not ignored, then a valid one. Nil when there is none.
func (g *laterDraws) webhookInvalid() []Action {
	var live []string
	for _, c := range g.validated {
		if g.configs[c] && !g.ignored[c] {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return []Action{{Op: "quiet"}, {Op: "webhook-invalid", Target: pick(g.eleventh, live), Value: fmt.Sprint(7000 + g.eleventh.IntN(1000))}}
}
