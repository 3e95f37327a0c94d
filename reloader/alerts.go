package reloader

import (
	"github.com/reloader/reloader/alert"
	"github.com/reloader/reloader/policy"
)

// alertReload queues an alert about a reload (ALERT_ON_RELOAD) naming the workload and the
// configs that caused it, never their content. Queuing never waits for the sink.
func (c *Controller) alertReload(w workloadView, changes []policy.Change) {
	if c.opts.Alerts == nil {
		return
	}
	refs := make([]alert.ConfigRef, len(changes))
	for i, ch := range changes {
		refs[i] = alert.ConfigRef{Kind: ch.Ref.Kind, Name: ch.Ref.Name}
	}
	c.opts.Alerts.Send(alert.ReloadMessage(refs, w.key.namespace, w.kind.name, w.key.name))
}
