package reloader

import (
	"github.com/reloader/reloader/reloader/internal/arrivals"
	"github.com/reloader/reloader/reloader/workload"
)

// journal is what the handlers saw that only they can know (an old record, a version the cache
// has replaced), kept in arrival order until the next sync folds it into the parts.
type journal = arrivals.Journal[workload.Key, delta]

// delta is one event's arrival, applied by fold with the parts of the Controller it writes.
type delta interface {
	apply(c *Controller)
}

// fold applies every delta that arrived before it was called, in arrival order, before anything
// is judged: a sync that starts after an event was delivered sees what the event changed.
func (c *Controller) fold() {
	c.journal.Fold(func(_ workload.Key, d delta) { d.apply(c) })
}
