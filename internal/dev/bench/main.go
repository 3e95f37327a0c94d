// Command bench measures the reloader binary on a local control plane: memory at scale, reload
// latency, coalescing of a burst, restarts and crashes, API requests per change, and growth with
// the number of configs. `make bench` runs it with the defaults; BENCHMARKS.md holds results.
//
// Every scenario runs bin/reloader as a separate process, so the RSS and CPU time it reports
// are the reloader's own, and observes reloads through a watch on Deployments. The results are
// printed as a table of measured value, target and PASS/MISS, and written as one JSON object per
// scenario to <out>/<timestamp>.jsonl. Reloader logs and pprof profiles go to <out>/<timestamp>/.
// Targets are reported, not enforced: the exit status is non-zero only when a scenario could not
// run.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Scenario names accepted by -scenarios, in the order they run.
const (
	scMemory      = "memory"
	scMemoryLarge = "memory-large"
	scLimit       = "limit"
	scLatency     = "latency"
	scRestarts    = "restarts"
	scBurst       = "burst"
	scGrowth      = "growth"
	scTracking    = "tracking"
	scMix         = "mix"
)

var allScenarios = []string{scMemory, scLimit, scLatency, scRestarts, scBurst, scMemoryLarge, scGrowth, scTracking, scMix}

// defaultScenarios are what runs without -scenarios: all but mix, whose populations take
// minutes to create and gigabytes of etcd.
var defaultScenarios = allScenarios[:len(allScenarios)-1]

// config is the command line.
type config struct {
	reloader  string
	out       string
	goTool    string
	scenarios []string
	pop       population
	largeKiB  int
	workers   int
	settle    time.Duration
	// startupProfile follows each start to its RSS peak with heap profiles and a GC trace.
	startupProfile bool
	// logLevel, if set, is the reloader's --log-level in place of info.
	logLevel string
	// environ is added to the reloader's environment (-reloader-env).
	environ []string

	updates      int
	updateWindow time.Duration
	limitMiB     []int

	samples    int
	interval   time.Duration
	timeout    time.Duration
	cpuProfile time.Duration

	burstConfigMaps int
	burstSecrets    int
	burstPeriod     time.Duration

	killTrials   int
	maxKillDelay time.Duration

	growth           []int
	growthNamespaces int
	// plotFrom, when set, only draws the growth plot of these .jsonl files into plotOut.
	plotFrom       []string
	plotOut        string
	growthSamples  int
	growthInterval time.Duration

	mix           []int
	mixNamespaces int
	mixSamples    int
	mixEtcdQuota  int64 // bytes
}

func parseFlags() (config, error) {
	var c config
	var scenarios, growth, mix, plotFrom, limits string
	var mixQuotaGiB int
	flag.StringVar(&c.reloader, "reloader", "bin/reloader", "reloader binary to measure")
	flag.StringVar(&c.out, "out", "bench-results", "directory for the .jsonl results, logs and profiles")
	flag.StringVar(&c.goTool, "go", "go", "go command, for `go tool pprof` summaries")
	flag.StringVar(&scenarios, "scenarios", strings.Join(defaultScenarios, ","), "comma-separated scenarios to run: "+strings.Join(allScenarios, ", ")+" (the API cost is part of latency)")
	flag.IntVar(&c.pop.ConfigMaps, "configmaps", 5000, "ConfigMaps in the population")
	flag.IntVar(&c.pop.Secrets, "secrets", 2000, "Secrets in the population")
	flag.IntVar(&c.pop.Deployments, "deployments", 1000, "Deployments in the population, each using 2 ConfigMaps and 1 Secret")
	flag.IntVar(&c.pop.ConfigMapKiB, "configmap-kib", 10, "size of each ConfigMap in KiB")
	flag.IntVar(&c.pop.SecretKiB, "secret-kib", 2, "size of each Secret in KiB")
	flag.IntVar(&c.largeKiB, "large-configmap-kib", 100, "size of each ConfigMap in KiB in the memory-large scenario")
	flag.IntVar(&c.workers, "workers", 24, "concurrent requests while creating the population")
	flag.DurationVar(&c.settle, "settle", 10*time.Second, "wait after /readyz before measuring settled memory")
	flag.BoolVar(&c.startupProfile, "startup-profile", false, "in memory and growth, keep the heap profile taken at the start-up's RSS peak and run the reloader with GODEBUG=gctrace=1")
	flag.Func("reloader-env", "NAME=value added to the reloader's environment; repeatable (e.g. GODEBUG=memprofilerate=1 for an exact heap profile)", func(v string) error {
		if !strings.Contains(v, "=") {
			return fmt.Errorf("want NAME=value, got %q", v)
		}
		c.environ = append(c.environ, v)
		return nil
	})
	flag.StringVar(&c.logLevel, "reloader-log-level", "", "the reloader's --log-level (default info, as shipped: the latency samples are split at its lines); debug logs, among others, when its start-up memory is handed back")
	flag.IntVar(&c.updates, "updates", 200, "ConfigMap updates during the memory peak measurement")
	flag.DurationVar(&c.updateWindow, "update-window", 20*time.Second, "time over which the memory scenario spreads its updates")
	flag.StringVar(&limits, "limit-mib", defaultLimitsMiB, "comma-separated memory limits in MiB of the cgroups the limit scenario runs the reloader in, one run each (needs root); with mix, also on each mix size")
	flag.IntVar(&c.samples, "latency-samples", 100, "ConfigMap updates in the latency scenario, one at a time")
	flag.DurationVar(&c.interval, "latency-interval", time.Second, "time between two latency updates")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Second, "a reload not seen this long after its update counts as missed")
	flag.DurationVar(&c.cpuProfile, "cpu-profile", 30*time.Second, "CPU profile length taken during the latency scenario (0: none)")
	flag.IntVar(&c.burstConfigMaps, "burst-configmaps", 10, "ConfigMaps the burst Deployment uses")
	flag.IntVar(&c.burstSecrets, "burst-secrets", 5, "Secrets the burst Deployment uses")
	flag.DurationVar(&c.burstPeriod, "burst-coalesce", 5*time.Second, "--coalesce-period of the reloader in the burst scenario")
	flag.IntVar(&c.killTrials, "kill-trials", 5, "kill -9 trials in the restarts scenario")
	flag.DurationVar(&c.maxKillDelay, "max-kill-delay", 200*time.Millisecond, "kill -9 lands at a random delay up to this after an update")
	flag.StringVar(&growth, "growth", "5000,20000,50000", "config counts of the growth scenario, cluster-wide: 4/5 ConfigMaps, 1/5 Secrets, and a Deployment per 5 configs")
	flag.IntVar(&c.growthNamespaces, "growth-namespaces", 50, "namespaces the growth population is spread over")
	flag.IntVar(&c.growthSamples, "growth-samples", 20, "latency samples per growth size")
	flag.DurationVar(&c.growthInterval, "growth-interval", 500*time.Millisecond, "time between two growth latency updates")
	flag.StringVar(&mix, "mix", "10000,50000", "config counts of the mix scenario, cluster-wide: 60% Helm release Secrets, 20% service-account token Secrets, 20% configs read by workloads as in growth")
	flag.IntVar(&c.mixNamespaces, "mix-namespaces", 100, "namespaces the mix population is spread over")
	flag.IntVar(&c.mixSamples, "mix-samples", 50, "latency samples per mix size, -growth-interval apart")
	flag.IntVar(&mixQuotaGiB, "mix-etcd-quota-gib", 8, "etcd's --quota-backend-bytes in GiB for the mix scenario's control plane (etcd's default is 2; 8 is its suggested maximum)")
	flag.StringVar(&plotFrom, "plot-from", "", "comma-separated .jsonl results: only draw their growth plot into -plot-out, run nothing")
	flag.StringVar(&c.plotOut, "plot-out", "growth.png", "PNG the -plot-from growth plot is written to")
	flag.Parse()
	if plotFrom != "" {
		c.plotFrom = strings.Split(plotFrom, ",")
	}
	var err error
	if c.scenarios, err = parseScenarios(scenarios); err != nil {
		return c, err
	}
	if c.growth, err = parseInts(growth); err != nil {
		return c, fmt.Errorf("-growth: %w", err)
	}
	if c.mix, err = parseInts(mix); err != nil {
		return c, fmt.Errorf("-mix: %w", err)
	}
	c.mixEtcdQuota = int64(mixQuotaGiB) << 30
	if c.limitMiB, err = parseInts(limits); err != nil {
		return c, fmt.Errorf("-limit-mib: %w", err)
	}
	return c, c.pop.validate()
}

func parseScenarios(s string) ([]string, error) {
	var out []string
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if name == "api" {
			name = scLatency
		}
		if !slices.Contains(allScenarios, name) {
			return nil, fmt.Errorf("-scenarios: unknown scenario %q (known: %s)", name, strings.Join(allScenarios, ", "))
		}
		out = append(out, name)
	}
	return out, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 5 {
			return nil, fmt.Errorf("%q is not a count of at least 5", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func (c config) wants(names ...string) bool {
	for _, n := range names {
		if slices.Contains(c.scenarios, n) {
			return true
		}
	}
	return false
}

func main() {
	cfg, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if len(cfg.plotFrom) > 0 {
		if err := plotFrom(cfg.plotFrom, cfg.plotOut); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	bin, cleanup, err := snapshotBinary(cfg.reloader)
	if err != nil {
		return err
	}
	defer cleanup()
	cfg.reloader = bin
	l, err := newLab(cfg)
	if err != nil {
		return err
	}
	defer l.close()
	l.logf("results go to %s, logs and profiles to %s", l.report.jsonlPath, l.report.dir)
	l.runAll(ctx)
	l.report.printReport(os.Stdout, l.kit.procs.version)
	l.report.plotGrowth()
	if n := l.report.failed(); n > 0 {
		return fmt.Errorf("%d scenario(s) could not run; see the errors above", n)
	}
	return nil
}

// plotFrom draws the growth plot of earlier results.
func plotFrom(paths []string, out string) error {
	results, err := readResults(paths)
	if err != nil {
		return err
	}
	rows, err := growthRows(results)
	if err != nil {
		return err
	}
	return writeGrowthPlot(rows, out)
}

// snapshotBinary copies the reloader binary to a temporary directory, so that a rebuild of
// bin/reloader during the run does not change what is measured. cleanup removes the copy.
func snapshotBinary(path string) (string, func(), error) {
	src, err := os.Open(path)
	if err != nil {
		return "", nil, fmt.Errorf("reloader binary (run `make build`): %w", err)
	}
	defer src.Close()
	dir, err := os.MkdirTemp("", "bench-reloader-")
	if err != nil {
		return "", nil, fmt.Errorf("copy reloader binary: %w", err)
	}
	cleanup := func() { os.RemoveAll(dir) }
	dst := filepath.Join(dir, "reloader")
	if err := copyFile(dst, src); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("copy reloader binary: %w", err)
	}
	return dst, cleanup, nil
}

func copyFile(dst string, src io.Reader) error {
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, src); err != nil {
		f.Close()
		return err
	}
	// Written back, as an installed binary is: the kernel cannot page out the dirty pages of a
	// fresh copy, so the reloader's page-outs of its executable would fail for the first
	// scenario's start.
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
