package main

import (
	"context"
	"fmt"
)

// growthPoint measures settled memory and reload latency at one population size.
func (l *lab) growthPoint(ctx context.Context, e *env, r *result) error {
	name := fmt.Sprintf("%s-%d", scGrowth, e.pop.ConfigMaps)
	p, err := l.startReloader(e, name, 0)
	if err != nil {
		return err
	}
	defer p.stop()
	settled, err := l.measureSettled(ctx, p, r, name)
	if err != nil {
		return err
	}
	r.add(info("RSS settled", mib(settled.RSS), unitMiB), info("VmHWM at settle", mib(settled.HWM), unitMiB))
	l.logf("%s: %d updates, %s apart", name, l.cfg.growthSamples, l.cfg.growthInterval)
	cpu0, err := p.cpu()
	if err != nil {
		return err
	}
	lt, err := measureLatency(ctx, e, l.cfg.growthSamples, l.cfg.growthInterval, l.cfg.timeout)
	if err != nil {
		return err
	}
	cpu1, err := p.cpu()
	if err != nil {
		return err
	}
	r.add(lt.checks()...)
	r.add(info("reloader CPU time / changes", 1000*(cpu1-cpu0)/float64(l.cfg.growthSamples), unitMs))
	r.detail("latency_ms", lt.millis())
	r.detail("setup_seconds", round1(e.setup.Seconds()))
	return l.stopGracefully(p, r)
}
