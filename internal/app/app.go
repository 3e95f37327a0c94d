// Package app runs what a parsed command line describes: the Kubernetes clients, one
// controller per watched namespace, leader election, and the HTTP endpoints for metrics,
// health and profiles.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/klog/v2"

	"github.com/reloader/reloader/internal/cli"
	"github.com/reloader/reloader/internal/kube"
	"github.com/reloader/reloader/internal/leader"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/reloader"
)

// Hooks are called at points of every start, the first and each after a new election (main.go
// tunes the runtime and hands back memory there). Synced and StartedUp, if set, run once every
// namespace's controller has reached the point, and their errors are logged.
type Hooks struct {
	// Starting: a start begins, before the caches list.
	Starting func()
	// Synced: the caches hold the initial lists, and the start-up pass is about to begin.
	Synced func() error
	// StartedUp: the initial sync has been processed.
	StartedUp func() error
}

// Run runs the reloader that f describes until SIGTERM or SIGINT, or a failure it returns;
// version is what its logs and metrics report.
func Run(f cli.Flags, version string, hooks Hooks) error {
	log := f.Logger()
	klog.SetSlogLogger(log) // client-go's own lines follow --log-format too
	cfg, err := restConfig(f.Kubeconfig)
	if err != nil {
		return err
	}
	namespaces, stateNSs, err := f.Scope(log)
	if err != nil {
		return err
	}
	var opts []metrics.Option
	// stakater's switch for its by-namespace counter (metrics/stakater.go) means the same here.
	if f.MetricsByNamespace || os.Getenv("METRICS_COUNT_BY_NAMESPACE") == "enabled" {
		opts = append(opts, metrics.ByNamespace())
	}
	m := metrics.New(version, opts...)
	clientmetrics.Register(m.ClientGo())
	cfg.QPS, cfg.Burst = f.KubeAPIQPS, f.KubeAPIBurst
	cfg.Wrap(m.InstrumentTransport)
	link := &kube.Link{Log: log}
	cfg.Wrap(link.Wrap)
	var e *leader.Election
	leaseNS := f.LeaseNamespace(stateNSs)
	if f.DryRun {
		// Outermost: nothing the controller might still try is sent.
		cfg.Wrap(dryRunGuard)
		log.Info("dry run: reloads are reported as WouldReload Events and changed nothing; no state, Job, Secret or Lease is written")
	}
	if (f.LeaderElect || f.EnableHA) && f.DryRun {
		log.Info("dry run: leader election is off; this process takes no Lease, so it never stands in for or fences a real reloader")
	} else if f.LeaderElect || f.EnableHA {
		if leaseNS == "" {
			return errors.New("--leader-election-namespace: required with several --namespaces outside a cluster ($POD_NAMESPACE unset)")
		}
		e = &leader.Election{Name: f.LeaderElectionID, ID: leader.NewIdentity(), Lease: f.LeaderElectionLease,
			Renew: f.LeaderElectionRenewDeadline, Retry: f.LeaderElectionRetryPeriod, Log: log.With("lease_namespace", leaseNS), Metrics: m}
		// Outermost, so a write refused while this replica may not act is neither sent nor counted.
		cfg.Wrap(e.Guard)
	}
	clients, err := kube.New(cfg)
	if err != nil {
		return fmt.Errorf("build Kubernetes clients: %w", err)
	}
	clients.Link = link
	writer := "" // an unfenced state without leader election: no Guard would stop a retry
	if e != nil {
		writer = e.ID
	}
	ctrls, err := newFleet(&f, clients, namespaces, stateNSs, writer, hooks, log, m)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	synced := ctrls.Ready
	if e != nil {
		e.Leases = clients.Leases(leaseNS)
		// A standby is ready: it is healthy and waiting; a leader once its caches synced.
		synced = func() bool { return !e.Leading() || ctrls.Ready() }
	}
	ready := func() error {
		if !clients.Link.Up() {
			return errors.New("API server unreachable")
		}
		if !synced() {
			return errors.New("caches not synced")
		}
		return nil
	}
	stopServing, err := serveHTTP(&f, m, ready, log)
	if err != nil {
		return err
	}
	defer stopServing()
	if f.SyncAfterRestart {
		log.Info("--sync-after-restart is always on here: each start compares every workload with its configs' current content and reloads, once, those that differ")
	}
	log.Info("starting", "version", version, "namespaces", strings.Join(namespaces, ","), "state", strings.Join(stateNSs, ",")+"/"+f.Configmap)
	run := func(ctx context.Context) error {
		if hooks.Starting != nil {
			hooks.Starting()
		}
		return ctrls.Run(ctx)
	}
	if e != nil {
		return e.Run(ctx, run)
	}
	m.Leader.Set(1)
	return run(ctx)
}

// newFleet builds one controller per namespace; writer, if set, fences their state writes.
func newFleet(c *cli.Flags, clients *kube.Clients, namespaces, stateNSs []string, writer string, hooks Hooks, log *slog.Logger, m *metrics.Metrics) (fleet, error) {
	var shared reloader.Options // one alert queue and webhook for every namespace
	if err := notify(*c, &shared, log, m); err != nil {
		return nil, err
	}
	f := make(fleet, len(namespaces))
	allSynced := afterEvery(len(namespaces), logged(hooks.Synced, log, "the lists' memory"))
	allStarted := afterEvery(len(namespaces), logged(hooks.StartedUp, log, "start-up memory"))
	for i, ns := range namespaces {
		o := c.Options(ns, stateNSs[i], log, m)
		o.Synced, o.StartedUp = allSynced, allStarted
		o.Alerts, o.Webhook = shared.Alerts, shared.Webhook
		o.StateWriter = writer
		ctrl, err := reloader.New(clients, o)
		if err != nil {
			return nil, err
		}
		f[i] = ctrl
	}
	return f, nil
}

// logged calls hook, if set, and logs at debug level whether what it hands back was handed back.
func logged(hook func() error, log *slog.Logger, what string) func() {
	return func() {
		if hook == nil {
			return
		}
		if err := hook(); err != nil {
			log.Debug(what+" kept", "err", err)
		} else {
			log.Debug(what + " handed back")
		}
	}
}

// afterEvery returns a function that calls f at every n-th call of it: once every controller of
// a fleet has started up (again, after a new election).
func afterEvery(n int, f func()) func() {
	var calls atomic.Int64
	return func() {
		if calls.Add(1)%int64(n) == 0 {
			f()
		}
	}
}

// restConfig follows --kubeconfig, then $KUBECONFIG, then the in-cluster ServiceAccount.
func restConfig(path string) (*rest.Config, error) {
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	if path != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("load kubeconfig %s: %w", path, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to talk to: --kubeconfig and $KUBECONFIG are empty and the in-cluster config failed: %w", err)
	}
	return cfg, nil
}
