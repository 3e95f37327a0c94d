package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/reloader/reloader/internal/dev/testcluster"
)

// populationNamespace holds the population; the reloader watches only it.
const populationNamespace = "bench"

// lab runs the scenarios and keeps their results.
type lab struct {
	cfg       config
	begin     time.Time
	dir       string // logs and profiles of this run
	jsonlPath string
	jsonl     *os.File
	results   []*result
	// baseline is the memory scenario's outcome, which memory-large compares with.
	baseline *memoryNumbers
	// version is the reloader's, from reloader_build_info.
	version string
}

func newLab(cfg config) (*lab, error) {
	stamp := time.Now().UTC().Format("20060102T150405Z")
	l := &lab{cfg: cfg, begin: time.Now(), dir: filepath.Join(cfg.out, stamp), jsonlPath: filepath.Join(cfg.out, stamp+".jsonl")}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create results directory: %w", err)
	}
	f, err := os.Create(l.jsonlPath)
	if err != nil {
		return nil, fmt.Errorf("create results file: %w", err)
	}
	l.jsonl = f
	return l, nil
}

func (l *lab) close() {
	if err := l.jsonl.Close(); err != nil {
		l.logf("close %s: %v", l.jsonlPath, err)
	}
}

func (l *lab) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench %6.1fs: %s\n", time.Since(l.begin).Seconds(), fmt.Sprintf(format, args...))
}

// runAll runs the selected scenarios: those on the default population share one control plane,
// the 100 KiB population and each growth size get a fresh one.
func (l *lab) runAll(ctx context.Context) {
	if l.cfg.wants(scMemory, scLatency, scRestarts, scBurst) {
		l.runShared(ctx)
	}
	if l.cfg.wants(scMemoryLarge) {
		pop := l.cfg.pop
		pop.ConfigMapKiB = l.cfg.largeKiB
		l.withPopulation(ctx, pop, []string{memoryName(pop)}, func(e *env) {
			l.scenario(ctx, memoryName(pop), pop, func(ctx context.Context, r *result) error { return l.memory(ctx, e, r) })
		})
	}
	if l.cfg.wants(scTracking) {
		pop := l.trackingPop()
		l.withPopulation(ctx, pop, []string{scTracking}, func(e *env) {
			l.scenario(ctx, scTracking, pop, func(ctx context.Context, r *result) error { return l.tracking(ctx, e, r) })
		})
	}
	if l.cfg.wants(scGrowth) {
		for _, n := range l.cfg.growth {
			pop := l.cfg.pop.clusterWide(n, l.cfg.growthNamespaces)
			name := fmt.Sprintf("%s-%d", scGrowth, n)
			l.withPopulation(ctx, pop, []string{name}, func(e *env) {
				l.scenario(ctx, name, pop, func(ctx context.Context, r *result) error { return l.growthPoint(ctx, e, r) })
			})
		}
		if len(l.cfg.growth) > 1 {
			l.scenario(ctx, scGrowth, nil, func(_ context.Context, r *result) error { return growthPerConfig(l.results, r) })
		}
	}
}

// runShared runs memory, latency, restarts and burst on one control plane.
func (l *lab) runShared(ctx context.Context) {
	var names []string
	for _, n := range []string{scMemory, scLatency, scRestarts} {
		if l.cfg.wants(n) {
			names = append(names, l.resultName(n))
		}
	}
	c, err := l.startCluster(ctx)
	if err != nil {
		if l.cfg.wants(scBurst) {
			names = append(names, scBurst)
		}
		l.failAll(err, names...)
		return
	}
	defer l.stopCluster(c)
	if len(names) > 0 {
		l.inNamespace(ctx, c, l.cfg.pop, names, l.runOnPopulation(ctx))
	}
	if l.cfg.wants(scBurst) {
		l.scenario(ctx, scBurst, l.burstParams(), func(ctx context.Context, r *result) error { return l.burst(ctx, c, r) })
	}
}

func (l *lab) runOnPopulation(ctx context.Context) func(e *env) {
	return func(e *env) {
		if l.cfg.wants(scMemory) {
			l.scenario(ctx, memoryName(e.pop), e.pop, func(ctx context.Context, r *result) error { return l.memory(ctx, e, r) })
		}
		if l.cfg.wants(scLatency) {
			l.scenario(ctx, scLatency, l.latencyParams(e), func(ctx context.Context, r *result) error { return l.latency(ctx, e, r) })
		}
		if l.cfg.wants(scRestarts) {
			l.scenario(ctx, scRestarts, l.restartParams(e), func(ctx context.Context, r *result) error { return l.restarts(ctx, e, r) })
		}
	}
}

func (l *lab) resultName(scenario string) string {
	if scenario == scMemory {
		return memoryName(l.cfg.pop)
	}
	return scenario
}

func memoryName(p population) string { return fmt.Sprintf("%s-%dKiB", scMemory, p.ConfigMapKiB) }

// withPopulation runs fn on a fresh control plane holding pop; names are the results to mark
// failed if that cannot be set up.
func (l *lab) withPopulation(ctx context.Context, pop population, names []string, fn func(*env)) {
	c, err := l.startCluster(ctx)
	if err != nil {
		l.failAll(err, names...)
		return
	}
	defer l.stopCluster(c)
	l.inNamespace(ctx, c, pop, names, fn)
}

// inNamespace creates pop in the population namespace of c and runs fn on it.
func (l *lab) inNamespace(ctx context.Context, c *testcluster.Cluster, pop population, names []string, fn func(*env)) {
	l.logf("creating %s", pop)
	e, err := newEnv(ctx, c, populationNamespace, pop, l.cfg.workers)
	if err != nil {
		l.failAll(err, names...)
		return
	}
	defer e.close()
	objects := pop.ConfigMaps + pop.Secrets + pop.Deployments
	l.logf("created %d objects in %s (%.0f/s)", objects, e.setup.Round(100*time.Millisecond), float64(objects)/e.setup.Seconds())
	fn(e)
}

func (l *lab) startCluster(ctx context.Context) (*testcluster.Cluster, error) {
	c, err := testcluster.Start(ctx, testcluster.Options{Log: os.Stderr})
	if err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	return c, nil
}

func (l *lab) stopCluster(c *testcluster.Cluster) {
	if err := c.Stop(); err != nil {
		l.logf("stop control plane: %v", err)
	}
}

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
	r.Version = l.version
	l.results = append(l.results, r)
	l.writeJSON(r)
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

// startReloader runs the reloader on env's namespace; names of its log and profiles start
// with name.
// startSettled starts a reloader, waits until it is ready and then for the settle period, so
// that its start-up work is over before a scenario measures; on an error it is stopped.
func (l *lab) startSettled(ctx context.Context, e *env, name string, coalesce time.Duration, extra ...string) (*reloaderProc, error) {
	p, err := l.startReloader(e, name, coalesce, extra...)
	if err != nil {
		return nil, err
	}
	if _, err := l.ready(ctx, p); err != nil {
		p.stop()
		return nil, err
	}
	if err := sleep(ctx, l.cfg.settle); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// withGODEBUG adds setting to environ's GODEBUG, keeping the settings given with -reloader-env.
func withGODEBUG(environ []string, setting string) []string {
	for i, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			environ[i] = "GODEBUG=" + v + "," + setting
			return environ
		}
	}
	return append(environ, "GODEBUG="+setting)
}

func (l *lab) startReloader(e *env, name string, coalesce time.Duration, extra ...string) (*reloaderProc, error) {
	environ := slices.Clone(l.cfg.environ)
	if l.cfg.startupProfile {
		environ = withGODEBUG(environ, "gctrace=1") // read back by readGCTrace
	}
	if l.cfg.logLevel != "" {
		extra = append(extra, "--log-level", l.cfg.logLevel) // the last one given counts
	}
	p, err := startReloader(l.cfg.reloader, l.dir, name, e.cluster.Kubeconfig, e.pop.watched(e.ns), coalesce, environ, extra...)
	if err != nil {
		return nil, err
	}
	l.logf("started reloader %s (pid %d, %s, --coalesce-period %s)", name, p.pid(), p.base, coalesce)
	return p, nil
}

// ready waits for the reloader's /readyz and notes its version from the build info metric.
func (l *lab) ready(ctx context.Context, p *reloaderProc) (time.Duration, error) {
	d, err := p.waitReady(ctx)
	if err != nil || l.version != "" {
		return d, err
	}
	m, err := p.metrics(ctx)
	if err != nil {
		return d, err
	}
	for _, s := range m {
		if s.name == "reloader_build_info" {
			l.version = s.labels["version"]
		}
	}
	return d, nil
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
