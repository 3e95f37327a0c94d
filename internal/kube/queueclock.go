package kube

import (
	"time"

	"k8s.io/utils/clock"
)

// QueueMinTick is the shortest period of QueueClock's tickers.
const QueueMinTick = 5 * time.Second

// QueueClock is a clock for client-go's work queue: the embedded clock, but its tickers tick no
// faster than QueueMinTick. The queue's only faster ticker refreshes the stuck-sync gauges
// (reloader_workqueue_unfinished_work_seconds, _longest_running_processor_seconds) every 500 ms,
// which woke an idle process twice a second; a scrape, every 15 s or more, needs no finer step.
type QueueClock struct{ clock.WithTicker }

// NewTicker returns a ticker of period d, or QueueMinTick if d is shorter.
func (c QueueClock) NewTicker(d time.Duration) clock.Ticker {
	return c.WithTicker.NewTicker(max(d, QueueMinTick))
}
