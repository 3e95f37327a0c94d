package main

import (
	"context"
	"fmt"
)

// growthScenario measures one size of the growth population.
type growthScenario struct{ *kit }

// run measures settled memory, reload latency and API requests per change at one
// population size.
func (gs *growthScenario) run(ctx context.Context, e *env, r *result) error {
	name := fmt.Sprintf("%s-%d", scGrowth, e.pop.ConfigMaps+e.pop.Secrets)
	p, err := gs.procs.start(e, name, 0)
	if err != nil {
		return err
	}
	defer p.stop()
	settled, err := gs.measureSettled(ctx, p, r, name)
	if err != nil {
		return err
	}
	r.add(info("RSS settled", mib(settled.RSS), unitMiB), info("VmHWM at settle", mib(settled.HWM), unitMiB))
	gs.logf("%s: %d updates, %s apart", name, gs.cfg.growthSamples, gs.cfg.growthInterval)
	first, err := gs.firstReload(ctx, e, r, gs.cfg.growthInterval)
	if err != nil {
		return err
	}
	if _, _, err := gs.sampleChanges(ctx, e, p, r, gs.cfg.growthSamples, first); err != nil {
		return err
	}
	r.detail("setup_seconds", round1(e.setup.Seconds()))
	return stopGracefully(p, r)
}

// sampleChanges measures n ConfigMap updates, growthInterval apart, after the first reload:
// the latency checks, the background work during them, the API cost per change and the paths.
// It returns the snapshots taken around them.
func (k *kit) sampleChanges(ctx context.Context, e *env, p *reloaderProc, r *result, n int, first latencies) (before, after snapshot, err error) {
	if before, err = apiSnapshot(ctx, e, p); err != nil {
		return before, after, err
	}
	lt, err := measureLatency(ctx, e, n, k.cfg.growthInterval, k.cfg.timeout)
	if err != nil {
		return before, after, err
	}
	lt.missed += first.missed
	if err := sleep(ctx, drainWait); err != nil {
		return before, after, err
	}
	if after, err = apiSnapshot(ctx, e, p); err != nil {
		return before, after, err
	}
	r.add(lt.checks()...)
	r.detail("background_during_latency", background(before, after))
	apiCost(r, before, after, n)
	r.detail("latency_ms", lt.millis())
	k.addPaths(r, p, lt)
	return before, after, nil
}

// background tells whether the start-up work was over when the latency samples began: the
// queue's depth then, and the keys queued and state writes made during the samples, which
// the samples alone account for a few of each.
func background(before, after snapshot) map[string]float64 {
	return map[string]float64{
		"queue_depth_at_start": before.metrics.get("reloader_workqueue_depth"),
		"pending_at_start":     before.metrics.get("reloader_pending_reloads"),
		"queue_adds_during":    after.metrics.get("reloader_workqueue_adds_total") - before.metrics.get("reloader_workqueue_adds_total"),
		"state_writes_during":  after.metrics.sum("reloader_state_writes_total", nil) - before.metrics.sum("reloader_state_writes_total", nil),
		"state_writes_before":  before.metrics.sum("reloader_state_writes_total", nil),
	}
}

// growthPerConfig adds, between each two growth sizes that ran and from the first to the last,
// the settled RSS per extra config; between two neighbours it gets the target.
func growthPerConfig(results []*result, r *result) error {
	rows, err := growthRows(results)
	if err != nil {
		return err
	}
	const rss = "RSS settled"
	perConfig := func(a, b growthRow) float64 {
		return (b.values[rss] - a.values[rss]) * 1024 / float64(b.configs-a.configs) // MiB → KiB
	}
	for i := 1; i < len(rows); i++ {
		a, b := rows[i-1], rows[i]
		r.add(atMost(fmt.Sprintf("RSS settled per extra config, %d → %d", a.configs, b.configs), perConfig(a, b), targetGrowthKiB, unitPerCfg))
	}
	if len(rows) > 2 {
		a, b := rows[0], rows[len(rows)-1]
		r.add(info(fmt.Sprintf("RSS settled per extra config, %d → %d", a.configs, b.configs), perConfig(a, b), unitPerCfg))
	}
	if len(rows) < 2 {
		return fmt.Errorf("%d growth sizes ran; the growth per config needs two", len(rows))
	}
	return nil
}
