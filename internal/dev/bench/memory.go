package main

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Targets from issue 27; they are reported, not enforced.
const (
	targetSettledMiB = 34
	targetPeakMiB    = 40
	targetLargePct   = 10 // growth allowed when ConfigMaps are 10x larger
	targetP99Ms      = 20
	targetPerChange  = 2
	targetGrowthKiB  = 1 // RSS settled per extra config, between two growth sizes
)

// memoryScenario measures the reloader's memory on a population; it keeps the run on the
// base population for a run with larger ConfigMaps to compare with.
type memoryScenario struct {
	*kit
	baseline *memoryNumbers
}

// memoryNumbers is the base memory run that memory-large compares with, in MiB.
type memoryNumbers struct {
	settled, startupPeak, updatePeak float64
}

// run measures the reloader's RSS after its caches sync and settle, and its peak while
// ConfigMaps are updated. The run on the base population sets the absolute targets; a run with
// larger ConfigMaps is compared with it.
func (mem *memoryScenario) run(ctx context.Context, e *env, r *result) error {
	name := memoryName(e.pop)
	p, err := mem.procs.start(e, name, 0)
	if err != nil {
		return err
	}
	defer p.stop()
	settled, err := mem.measureSettled(ctx, p, r, name)
	if err != nil {
		return err
	}
	peak, err := mem.measureUpdatePeak(ctx, e, p, r)
	if err != nil {
		return err
	}
	mem.targets(e.pop, r, memoryNumbers{settled: mib(settled.RSS), startupPeak: mib(settled.HWM), updatePeak: mib(peak)})
	r.detail("setup_seconds", round1(e.setup.Seconds()))
	return stopGracefully(p, r)
}

// measureSettled waits for /readyz and the settle time, then records memory, CPU time, Go
// runtime statistics and a heap profile; with -startup-profile also the profile of the start-up
// peak.
func (k *kit) measureSettled(ctx context.Context, p *reloaderProc, r *result, name string) (memStatus, error) {
	var w *startupWatch
	if k.cfg.startupProfile {
		w = watchStartup(ctx, p)
		defer w.halt()
	}
	ready, err := k.procs.ready(ctx, p)
	if err != nil {
		return memStatus{}, err
	}
	cpu, err := p.cpu()
	if err != nil {
		return memStatus{}, err
	}
	k.logf("%s ready after %s (%.1f s CPU); settling for %s", name, ready.Round(time.Millisecond), cpu, k.cfg.settle)
	r.add(info("time to /readyz", ready.Seconds(), unitSeconds), info("CPU to /readyz", cpu, unitSeconds))
	if err := sleep(ctx, k.cfg.settle); err != nil {
		return memStatus{}, err
	}
	if w != nil {
		if err := w.finish(ctx, k.prof, r, name); err != nil {
			return memStatus{}, err
		}
	}
	m, err := p.memory()
	if err != nil {
		return memStatus{}, err
	}
	// VmHWM counts the executable's file pages, which the start maps by the megabyte (the
	// kernel maps 64 KiB around each fault) and the reloader hands back once started. A memory
	// limit must hold the anonymous peak and the pages in use: the limit scenario measures it.
	// Sampled since the start, every 100 ms.
	anon, file := p.rss.split()
	r.add(info("RssAnon start-up peak (sampled)", mib(anon), unitMiB), info("RssFile start-up peak (sampled)", mib(file), unitMiB))
	if m.Anon > 0 {
		r.add(info("RssAnon start-up peak / settled", math.Round(100*float64(anon)/float64(m.Anon))/100, unitCount))
	}
	met, err := p.metrics(ctx)
	if err != nil {
		return memStatus{}, err
	}
	r.add(info("RssAnon settled", mib(m.Anon), unitMiB), info("RssFile settled", mib(m.File), unitMiB),
		info("heap in use settled", mib(int64(met.get("go_memstats_heap_inuse_bytes"))), unitMiB))
	r.detail("settled", m)
	r.detail("go_runtime_settled", runtimeStats(met))
	r.detail("state_entries", met.sum("reloader_state_entries", nil))
	r.detail("state_bytes", met.byLabels("reloader_state_bytes", "configmap"))
	path, top, err := k.prof.heapProfile(ctx, p, name+"-heap-settled.pb.gz")
	if err != nil {
		return memStatus{}, err
	}
	r.detail("heap_profile", path)
	r.detail("heap_top", top)
	return m, nil
}

// runtimeStats picks the Go runtime's memory statistics from a scrape.
func runtimeStats(m metricSet) map[string]float64 {
	out := map[string]float64{}
	for _, name := range []string{
		"go_memstats_heap_alloc_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_heap_idle_bytes",
		"go_memstats_heap_released_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_sys_bytes",
		"go_memstats_next_gc_bytes", "go_goroutines", "process_resident_memory_bytes",
		// Outside the heap: span structures, the collector's metadata, the runtime's other.
		"go_memstats_mspan_inuse_bytes", "go_memstats_gc_sys_bytes", "go_memstats_other_sys_bytes",
	} {
		out[name] = m.get(name)
	}
	return out
}

// measureUpdatePeak updates ConfigMaps that have dependents, spread over the update window,
// waits for their reloads, and returns the peak RSS in that phase: the larger of the 100 ms
// samples and VmHWM, which is reset first.
func (mem *memoryScenario) measureUpdatePeak(ctx context.Context, e *env, p *reloaderProc, r *result) (int64, error) {
	if err := resetPeak(p.pid()); err != nil {
		r.detail("reset_peak_error", err.Error()+"; the update peak includes the startup peak")
	}
	p.rss.reset()
	cpu0, err := p.cpu()
	if err != nil {
		return 0, err
	}
	mem.logf("updating %d ConfigMaps over %s", mem.cfg.updates, mem.cfg.updateWindow)
	reloads, err := spreadUpdates(ctx, e, mem.cfg.updates, mem.cfg.updateWindow)
	if err != nil {
		return 0, err
	}
	lat := awaitReloads(ctx, e, reloads, mem.cfg.timeout)
	m, err := p.memory()
	if err != nil {
		return 0, err
	}
	cpu1, err := p.cpu()
	if err != nil {
		return 0, err
	}
	sampled, n := p.rss.peak()
	r.detail("update_phase", map[string]any{"rss_samples": n, "sampled_peak": sampled, "hwm": m.HWM, "after": m})
	r.add(exactly("reloads missed during updates", float64(lat.missed), 0, unitCount),
		info("latency p99 during updates", ms(lat.percentile(99)), unitMs),
		info("CPU per update", 1000*(cpu1-cpu0)/float64(len(reloads)), unitMs),
		info("RSS after updates", mib(m.RSS), unitMiB))
	return max(sampled, m.HWM), nil
}

// targets adds the memory checks: absolute targets for the base population, growth
// relative to the base run for larger ConfigMaps.
func (mem *memoryScenario) targets(pop population, r *result, got memoryNumbers) {
	if pop.ConfigMapKiB == mem.cfg.pop.ConfigMapKiB {
		r.add(atMost("RSS settled", got.settled, targetSettledMiB, unitMiB),
			atMost("VmHWM at settle (startup peak)", got.startupPeak, targetPeakMiB, unitMiB),
			atMost(fmt.Sprintf("peak RSS during %d updates", mem.cfg.updates), got.updatePeak, targetPeakMiB, unitMiB))
		mem.baseline = &got
		return
	}
	r.add(info("RSS settled", got.settled, unitMiB), info("VmHWM at settle (startup peak)", got.startupPeak, unitMiB),
		info(fmt.Sprintf("peak RSS during %d updates", mem.cfg.updates), got.updatePeak, unitMiB))
	base := mem.baseline
	if base == nil {
		r.detail("note", "no base memory run in this invocation to compare with")
		return
	}
	r.add(atMost("RSS settled vs base run", growthPct(got.settled, base.settled), targetLargePct, unitPercent),
		atMost("startup peak vs base run", growthPct(got.startupPeak, base.startupPeak), targetLargePct, unitPercent),
		atMost("update peak vs base run", growthPct(got.updatePeak, base.updatePeak), targetLargePct, unitPercent))
}

func growthPct(v, base float64) float64 { return 100 * (v/base - 1) }

// spreadUpdates updates n ConfigMaps with dependents, evenly over window.
func spreadUpdates(ctx context.Context, e *env, n int, window time.Duration) ([]reload, error) {
	begin := time.Now()
	out := make([]reload, 0, n)
	for i := range n {
		if err := sleep(ctx, time.Until(begin.Add(window*time.Duration(i)/time.Duration(n)))); err != nil {
			return out, err
		}
		rl, err := e.updateConfigMap(ctx, e.pickConfigMap())
		if err != nil {
			return out, err
		}
		out = append(out, rl)
	}
	return out, nil
}
