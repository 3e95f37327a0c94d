package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// populationNamespace holds the population; the reloader watches only it.
const populationNamespace = "bench"

// lab runs the selected scenarios, each on the test bed it needs, and hands their results to
// the report.
type lab struct {
	cfg    config
	begin  time.Time
	bed    *testbed
	kit    *kit
	report *report

	memory   *memoryScenario // kept across runs: memory-large compares with the memory run
	limit    limitScenario
	latency  latencyScenario
	restarts restartsScenario
	burst    burstScenario
	tracking trackingScenario
	growth   growthScenario
	mix      mixScenario
}

// kit is what the scenarios share: the command line, the reloader under test, its profiler and
// the bench's log.
type kit struct {
	cfg   config
	procs *launcher
	prof  *profiler
	logf  func(format string, args ...any)
}

func newLab(cfg config) (*lab, error) {
	l := &lab{cfg: cfg, begin: time.Now()}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	rep, err := newReport(filepath.Join(cfg.out, stamp), filepath.Join(cfg.out, stamp+".jsonl"), cfg.growthSamples, l.begin, l.logf)
	if err != nil {
		return nil, err
	}
	l.report = rep
	l.bed = &testbed{workers: cfg.workers, mixQuota: cfg.mixEtcdQuota, logf: l.logf, fail: l.failAll}
	l.kit = &kit{
		cfg:   cfg,
		procs: &launcher{cfg: cfg, dir: rep.dir, logf: l.logf},
		prof:  &profiler{dir: rep.dir, goTool: cfg.goTool, cpuFor: cfg.cpuProfile, logf: l.logf},
		logf:  l.logf,
	}
	l.memory = &memoryScenario{kit: l.kit}
	l.limit = limitScenario{l.kit}
	l.latency = latencyScenario{l.kit}
	l.restarts = restartsScenario{l.kit}
	l.burst = burstScenario{l.kit}
	l.tracking = trackingScenario{l.kit}
	l.growth = growthScenario{l.kit}
	l.mix = mixScenario{l.kit}
	return l, nil
}

func (l *lab) close() { l.report.close() }

func (l *lab) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench %6.1fs: %s\n", time.Since(l.begin).Seconds(), fmt.Sprintf(format, args...))
}

// runAll runs the selected scenarios: those on the default population share one control plane,
// the 100 KiB population and each growth size get a fresh one.
func (l *lab) runAll(ctx context.Context) {
	if l.cfg.wants(scMemory, scLimit, scLatency, scRestarts, scBurst) {
		l.runShared(ctx)
	}
	if l.cfg.wants(scMemoryLarge) {
		pop := l.cfg.pop
		pop.ConfigMapKiB = l.cfg.largeKiB
		l.bed.withPopulation(ctx, pop, []string{memoryName(pop)}, func(e *env) {
			l.scenario(ctx, memoryName(pop), pop, func(ctx context.Context, r *result) error { return l.memory.run(ctx, e, r) })
		})
	}
	if l.cfg.wants(scTracking) {
		pop := l.tracking.pop()
		l.bed.withPopulation(ctx, pop, []string{scTracking}, func(e *env) {
			l.scenario(ctx, scTracking, pop, func(ctx context.Context, r *result) error { return l.tracking.run(ctx, e, r) })
		})
	}
	if l.cfg.wants(scGrowth) {
		for _, n := range l.cfg.growth {
			pop := l.cfg.pop.clusterWide(n, l.cfg.growthNamespaces)
			name := fmt.Sprintf("%s-%d", scGrowth, n)
			l.bed.withPopulation(ctx, pop, []string{name}, func(e *env) {
				l.scenario(ctx, name, pop, func(ctx context.Context, r *result) error { return l.growth.run(ctx, e, r) })
			})
		}
		if len(l.cfg.growth) > 1 {
			l.scenario(ctx, scGrowth, nil, func(_ context.Context, r *result) error { return growthPerConfig(l.report.results, r) })
		}
	}
	if l.cfg.wants(scMix) { // and limit, if selected, on each size
		for _, n := range l.cfg.mix {
			pop := l.cfg.pop.mix(n, l.cfg.mixNamespaces)
			name, limitName := mixName(pop.configs()), scLimit+"-"+mixName(pop.configs())
			names := []string{name}
			if l.cfg.wants(scLimit) {
				names = append(names, limitName)
			}
			l.bed.withPopulation(ctx, pop, names, func(e *env) {
				l.scenario(ctx, name, pop, func(ctx context.Context, r *result) error { return l.mix.run(ctx, e, r) })
				if l.cfg.wants(scLimit) { // after the mix run, which wrote the state
					l.scenario(ctx, limitName, l.limit.params(e), func(ctx context.Context, r *result) error { return l.limit.run(ctx, e, r, limitName) })
				}
			})
		}
	}
}

// runShared runs memory, latency, restarts and burst on one control plane.
func (l *lab) runShared(ctx context.Context) {
	var names []string
	for _, n := range []string{scMemory, scLimit, scLatency, scRestarts} {
		if l.cfg.wants(n) {
			names = append(names, l.cfg.resultName(n))
		}
	}
	c, err := l.bed.startCluster(ctx, 0)
	if err != nil {
		if l.cfg.wants(scBurst) {
			names = append(names, scBurst)
		}
		l.failAll(err, names...)
		return
	}
	defer l.bed.stopCluster(c)
	if len(names) > 0 {
		l.bed.inNamespace(ctx, c, l.cfg.pop, names, l.runOnPopulation(ctx))
	}
	if l.cfg.wants(scBurst) {
		l.scenario(ctx, scBurst, l.burst.params(), func(ctx context.Context, r *result) error { return l.burst.run(ctx, c, r) })
	}
}

func (l *lab) runOnPopulation(ctx context.Context) func(e *env) {
	return func(e *env) {
		if l.cfg.wants(scMemory) {
			l.scenario(ctx, memoryName(e.pop), e.pop, func(ctx context.Context, r *result) error { return l.memory.run(ctx, e, r) })
		}
		if l.cfg.wants(scLimit) {
			l.scenario(ctx, scLimit, l.limit.params(e), func(ctx context.Context, r *result) error { return l.limit.run(ctx, e, r, scLimit) })
		}
		if l.cfg.wants(scLatency) {
			l.scenario(ctx, scLatency, l.latency.params(e), func(ctx context.Context, r *result) error { return l.latency.run(ctx, e, r) })
		}
		if l.cfg.wants(scRestarts) {
			l.scenario(ctx, scRestarts, l.restarts.params(e), func(ctx context.Context, r *result) error { return l.restarts.run(ctx, e, r) })
		}
	}
}

// resultName is the name of the result of a scenario on the default population.
func (c config) resultName(scenario string) string {
	if scenario == scMemory {
		return memoryName(c.pop)
	}
	return scenario
}

func memoryName(p population) string { return fmt.Sprintf("%s-%dKiB", scMemory, p.ConfigMapKiB) }

// scenario runs fn as the scenario name, then records and prints its result.
func (l *lab) scenario(ctx context.Context, name string, params any, fn func(context.Context, *result) error) {
	r := &result{Scenario: name, Started: time.Now().UTC(), Params: params, Details: map[string]any{}}
	r.LoadAvg[0] = loadAvg()
	l.logf("=== %s (load average %s)", name, r.LoadAvg[0])
	if err := fn(ctx, r); err != nil {
		r.Error = err.Error()
	}
	r.Seconds = round1(time.Since(r.Started).Seconds())
	r.LoadAvg[1] = loadAvg()
	l.finish(r)
}

func (l *lab) finish(r *result) {
	r.Version = l.kit.procs.version
	l.report.add(r)
	for _, c := range r.Checks {
		l.logf("%s: %s = %s %s %s", r.Scenario, c.Name, format(c.Measured, c.Unit), c.Target, c.Verdict)
	}
	if r.Error != "" {
		l.logf("%s: ERROR: %s", r.Scenario, r.Error)
	}
}

// failAll records scenarios that could not run because of err.
func (l *lab) failAll(err error, names ...string) {
	for _, name := range names {
		l.finish(&result{Scenario: name, Started: time.Now().UTC(), Error: err.Error()})
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
