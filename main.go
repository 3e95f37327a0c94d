// Command reloader restarts Deployments, StatefulSets and DaemonSets when the ConfigMaps and
// Secrets they use change. See README.md and docs/.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kong"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/klog/v2"

	"github.com/reloader/reloader/internal/kube"
	"github.com/reloader/reloader/internal/leader"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// version is stamped by the linker (-ldflags "-X main.version=...").
var version = "dev"

// CLI is the whole command-line configuration.
type CLI struct {
	Namespace                   string        `help:"Namespace to watch. Empty: $KUBERNETES_NAMESPACE, else all namespaces (needs the ClusterRole of deploy/cluster)."`
	Configmap                   string        `default:"reloader-state" help:"Name of the state ConfigMap. Further shards are named <name>-1, <name>-2, ..."`
	StateNamespace              string        `help:"Namespace of the state ConfigMap. Default: --namespace, else the reloader's own namespace."`
	HashKeySecret               string        `default:"reloader-hash-key" help:"Secret, in the state namespace, holding the key of the hashes of Secret content; created with a random key when missing."`
	Port                        int           `default:"8080" help:"Port for /metrics, /healthz and /readyz (0 picks a free port)."`
	CoalescePeriod              Period        `default:"5s" help:"Debounce window: changes this close together cause one restart per workload. A bare integer is milliseconds (10000), or a Go duration (10s). 0 acts at once."`
	CoalesceMaxWait             Period        `default:"0" help:"Longest a window may stay open while changes keep coming. 0 means 5 x --coalesce-period."`
	ShutdownGrace               time.Duration `default:"10s" help:"On SIGTERM, how long to spend flushing pending reloads before exiting."`
	Kubeconfig                  string        `help:"Path of a kubeconfig file. Default: $KUBECONFIG, else the in-cluster ServiceAccount."`
	ReloadStrategy              string        `default:"env-vars" enum:"env-vars,annotations,default" help:"How a workload is restarted: env-vars (or stakater's default) sets _RELOADER_-<kind>-<name> in the pod template; annotations sets the pod-template annotation reloader.stakater.com/last-reloaded-from."`
	LogFormat                   string        `default:"text" help:"Log format: text (or empty) or json."`
	LogLevel                    string        `default:"info" help:"Least severe level logged: trace, debug, info, warn (or warning), error, fatal or panic."`
	KubeAPIQPS                  float32       `name:"kube-api-qps" default:"50" help:"Sustained requests per second to the API server (client-go defaults to 5)."`
	KubeAPIBurst                int           `name:"kube-api-burst" default:"100" help:"Request burst allowed above --kube-api-qps."`
	LeaderElect                 bool          `help:"Run as one of several replicas: only the holder of a coordination.k8s.io Lease acts."`
	LeaderElectionID            string        `default:"reloader" help:"Name of the leader election Lease."`
	LeaderElectionNamespace     string        `help:"Namespace of the Lease. Default: the state namespace."`
	LeaderElectionLease         time.Duration `default:"15s" help:"How long a Lease lasts without renewal (whole seconds); standbys take over this long after the last renewal they saw."`
	LeaderElectionRenewDeadline time.Duration `default:"10s" help:"The leader acts only this long after the start of its last successful renewal; at least 1s less than --leader-election-lease."`
	LeaderElectionRetryPeriod   time.Duration `default:"2s" help:"How often candidates try to acquire and the leader renews; at most a third of --leader-election-renew-deadline."`
	MetricsByNamespace          bool          `help:"Add a namespace label to the reload metrics (more series: opt-in)."`
	EnablePprof                 bool          `help:"Serve Go profiles at /debug/pprof/ on --port. Off by default: profiles expose internals."`

	AlternativeConfigmapAnnotation []string `help:"Extra workload annotation keys listing ConfigMaps to reload on, like configmap.reloader.stakater.com/reload."`
	AlternativeSecretAnnotation    []string `help:"Extra workload annotation keys listing Secrets to reload on, like secret.reloader.stakater.com/reload."`

	AutoAnnotation          string `default:"reloader.stakater.com/auto" help:"Workload annotation: reload on any ConfigMap or Secret the pod spec references."`
	ConfigmapAutoAnnotation string `default:"configmap.reloader.stakater.com/auto" help:"Workload annotation: reload on any referenced ConfigMap."`
	SecretAutoAnnotation    string `default:"secret.reloader.stakater.com/auto" help:"Workload annotation: reload on any referenced Secret."`
	AutoSearchAnnotation    string `default:"reloader.stakater.com/search" help:"Workload annotation: reload on referenced configs that carry --search-match-annotation."`
	SearchMatchAnnotation   string `default:"reloader.stakater.com/match" help:"Config annotation that search-mode workloads reload on."`
	ConfigmapAnnotation     string `default:"configmap.reloader.stakater.com/reload" help:"Workload annotation listing the ConfigMaps to reload on."`
	SecretAnnotation        string `default:"secret.reloader.stakater.com/reload" help:"Workload annotation listing the Secrets to reload on."`

	IsArgoRollouts        bool     `help:"Also reload Argo Rollouts (argoproj.io/v1alpha1)."`
	IsOpenshift           bool     `help:"Also reload OpenShift DeploymentConfigs (apps.openshift.io/v1)."`
	IgnoredWorkloadTypes  []string `help:"Workload types to leave alone: deployments, statefulsets, daemonsets, cronjobs, jobs, rollouts, deploymentconfigs."`
	NamespacesToIgnore    []string `help:"Namespaces whose configs and workloads are ignored."`
	NamespaceSelector     Selector `help:"Label selector: only namespaces matching it are watched (all-namespaces mode; needs list/watch on namespaces). stakater's key:value and key:* forms are accepted; the flag may repeat."`
	ResourceLabelSelector Selector `help:"Label selector pushed into the list/watch of ConfigMaps and Secrets: others are never cached nor tracked. stakater's key:value and key:* forms are accepted; the flag may repeat."`
	ResourcesToIgnore     string   `help:"configmaps or secrets: do not watch that kind of config."`
	ReloadOnCreate        bool     `help:"Reload dependents when a config they reference is created."`
	ReloadOnDelete        bool     `help:"Reload dependents when a config they reference is deleted (env-vars: the variable is removed)."`

	// Safe reloads (docs/safe-reloads.md, "Safe reloads"); the reloader/* workload annotations override these.
	TrackRollouts  bool          `help:"Follow every reload to the end of its rollout: outcome in reloader/history, an Event, the log and reloader_rollouts_total."`
	Rollback       bool          `help:"Undo a reload whose rollout fails or times out, and hold that config content for the workload until it changes (implies --track-rollouts)."`
	RolloutTimeout time.Duration `default:"15m" help:"How long a followed rollout may run before it counts as timed out (0: the default)."`
	// Safe reloads: when a due reload may happen (docs/safe-reloads.md, "Windows, flap protection,
	// validation, pause").
	ReloadWindow                  string        `help:"Maintenance windows of every workload, e.g. 'Sat 02:00-04:00 Europe/Berlin' (grammar in docs/safe-reloads.md); the reloader/window annotation overrides it. Empty: any time."`
	MinReloadInterval             time.Duration `help:"Least time between two reloads of a workload; the reloader/min-interval annotation overrides it. 0: none."`
	PauseDeploymentAnnotation     string        `default:"deployment.reloader.stakater.com/pause-period" help:"Workload annotation: after a change, hold reloads for this long (a Go duration), then roll out once (stakater's pause period)."`
	PauseDeploymentTimeAnnotation string        `default:"deployment.reloader.stakater.com/paused-at" help:"Workload annotation the reloader writes with the start of a pause period (RFC 3339)."`
	// stakater Reloader's own flags, with its meaning (stakater.go).
	AutoReloadAll          bool             `help:"Every workload reloads on every config it references, unless it opts out with --auto-annotation (or the typed one) set to false."`
	IgnoreAnnotation       string           `default:"reloader.stakater.com/ignore" help:"Config annotation: \"true\" means its changes reload nothing."`
	Namespaces             []string         `help:"Watch exactly these namespaces (comma-separated), each keeping its own state as --namespace does; a Role in each is enough."`
	EnableHA               bool             `name:"enable-ha" help:"stakater's name for --leader-elect."`
	IsArgoRolloutsStakater string           `name:"is-Argo-Rollouts" help:"stakater's spelling of --is-argo-rollouts: true or false."`
	SyncAfterRestart       bool             `help:"Accepted for stakater compatibility; always on here: every start compares each workload with its configs' current content."`
	PprofAddr              string           `help:"With --enable-pprof, serve /debug/pprof/ on this address (stakater's :6060, say) instead of on --port."`
	EnableCSIIntegration   bool             `name:"enable-csi-integration" help:"Not supported: the reloader stops with a message saying why."`
	Version                kong.VersionFlag `help:"Print the version and exit."`
	// stakater's --webhook-url (alerts.go).
	WebhookURL string `name:"webhook-url" help:"Instead of reloading workloads, POST {\"webhook\":\"update successful\"} to this URL on each config change, as stakater Reloader does."`
}

// validateGate checks the defaults of the reload gate.
func (c *CLI) validateGate() error {
	if c.ReloadWindow != "" {
		if _, err := policy.ParseWindows(c.ReloadWindow); err != nil {
			return fmt.Errorf("--reload-window: %w", err)
		}
	}
	if c.MinReloadInterval < 0 {
		return fmt.Errorf("--min-reload-interval: must not be negative, got %s", c.MinReloadInterval)
	}
	return nil
}

var workloadTypes = []string{reloader.TypeDeployments, reloader.TypeStatefulSets, reloader.TypeDaemonSets,
	reloader.TypeRollouts, reloader.TypeDeploymentConfigs, reloader.TypeJobs, reloader.TypeCronJobs}

// Validate rejects values kong's types cannot: each message names its flag.
func (c *CLI) Validate() error {
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("--port: must be between 0 and 65535, got %d", c.Port)
	}
	if !(c.KubeAPIQPS > 0) || c.KubeAPIBurst <= 0 { // not "<= 0": NaN is not positive either
		return fmt.Errorf("--kube-api-qps and --kube-api-burst: must be positive, got %v and %d", c.KubeAPIQPS, c.KubeAPIBurst)
	}
	if c.RolloutTimeout < 0 {
		return fmt.Errorf("--rollout-timeout: must not be negative, got %s", c.RolloutTimeout)
	}
	if c.EnableCSIIntegration {
		return errCSI
	}
	if err := c.validateStakater(); err != nil {
		return err
	}
	if c.ShutdownGrace < 0 {
		return fmt.Errorf("--shutdown-grace: must not be negative, got %s", c.ShutdownGrace)
	}
	if c.LeaderElect || c.EnableHA {
		if err := c.validateLeaderElection(); err != nil {
			return err
		}
	}
	for _, t := range c.IgnoredWorkloadTypes {
		if !slices.Contains(workloadTypes, t) {
			return fmt.Errorf("--ignored-workload-types: unknown type %q; known: %s", t, strings.Join(workloadTypes, ", "))
		}
	}
	if r := strings.ToLower(c.ResourcesToIgnore); r != "" && r != "configmaps" && r != "secrets" {
		return fmt.Errorf("--resources-to-ignore: must be configmaps or secrets, got %q", c.ResourcesToIgnore)
	}
	for flag, sel := range map[string]Selector{"--namespace-selector": c.NamespaceSelector, "--resource-label-selector": c.ResourceLabelSelector} {
		if _, err := labels.Parse(string(sel)); err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
	}
	if errs := validation.IsDNS1123Subdomain(c.HashKeySecret); len(errs) > 0 {
		return fmt.Errorf("--hash-key-secret: %q is not a Secret name: %s", c.HashKeySecret, strings.Join(errs, "; "))
	}
	if c.NamespaceSelector != "" && c.Namespace != "" {
		return errors.New("--namespace-selector: only applies when --namespace is empty (all-namespaces mode)")
	}
	return c.validateGate()
}

// validateStakater checks the flags and values that come from stakater Reloader.
func (c *CLI) validateStakater() error {
	if _, err := parseLogLevel(c.LogLevel); err != nil {
		return err
	}
	if f := c.LogFormat; f != "" && f != "text" && f != "json" {
		return fmt.Errorf("--log-format: must be text (or empty) or json, got %q", f)
	}
	if _, err := stakaterBool("is-Argo-Rollouts", c.IsArgoRolloutsStakater); err != nil {
		return err
	}
	if c.Namespace != "" && len(c.Namespaces) > 0 {
		return errors.New("--namespace and --namespaces: give one or the other")
	}
	for i, ns := range c.Namespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("--namespaces: %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
		if slices.Contains(c.Namespaces[:i], ns) {
			// Two controllers on one namespace would each reload its workloads.
			return fmt.Errorf("--namespaces: %q is listed twice", ns)
		}
	}
	if len(c.Namespaces) > 1 && c.StateNamespace != "" {
		return errors.New("--state-namespace: not with several --namespaces: each namespace keeps its own state")
	}
	return nil
}

func (c *CLI) annotations() policy.Annotations {
	a := policy.DefaultAnnotations()
	a.Auto, a.ConfigMapAuto, a.SecretAuto = c.AutoAnnotation, c.ConfigmapAutoAnnotation, c.SecretAutoAnnotation
	a.Search, a.Match, a.Ignore = c.AutoSearchAnnotation, c.SearchMatchAnnotation, c.IgnoreAnnotation
	a.ConfigMap, a.Secret = c.ConfigmapAnnotation, c.SecretAnnotation
	a.AlternativeConfigMap, a.AlternativeSecret = c.AlternativeConfigmapAnnotation, c.AlternativeSecretAnnotation
	a.PausePeriod, a.PausedAt = c.PauseDeploymentAnnotation, c.PauseDeploymentTimeAnnotation
	a.ReloadAll = c.AutoReloadAll
	return a
}

// validateLeaderElection rejects timings that leave no safety margin (see leader.Election for
// the argument): the leader acts until the renew deadline R after the start of its last renew,
// and a standby takes over no sooner than the Lease duration D after it.
func (c *CLI) validateLeaderElection() error {
	lease, renew, retry := c.LeaderElectionLease, c.LeaderElectionRenewDeadline, c.LeaderElectionRetryPeriod
	// The Lease stores D as whole seconds (an int32): 1500ms would be declared as 1s, and
	// standbys, which judge by the declared duration, would take over 500ms early.
	if lease < time.Second || lease%time.Second != 0 || lease/time.Second > math.MaxInt32 {
		return fmt.Errorf("--leader-election-lease: must be a whole number of seconds, at least 1s (the Lease stores it as leaseDurationSeconds), got %s", lease)
	}
	if retry <= 0 {
		return fmt.Errorf("--leader-election-retry-period: must be positive, got %s", retry)
	}
	// A renew may take up to the retry period before it times out, and the next starts a retry
	// period after the last success: R >= 3 × retry leaves two full attempts, so one slow or
	// lost request does not end the leadership.
	if renew < 3*retry {
		return fmt.Errorf("--leader-election-renew-deadline (%s) must be at least 3 × --leader-election-retry-period (%s), so the leader gets two full renew attempts before it gives up",
			renew, retry)
	}
	if lease-renew < leader.MinMargin {
		return fmt.Errorf("--leader-election-lease (%s) must exceed --leader-election-renew-deadline (%s) by at least %s: a leader stops at its renew deadline, and standbys may take over at the Lease duration; the margin covers a write still in flight and clock rates",
			lease, renew, leader.MinMargin)
	}
	return nil
}

// options turns the flags into controller options; Validate has checked every value.
func (c *CLI) options(ns, stateNS string, log *slog.Logger, m *metrics.Metrics) reloader.Options {
	period, maxWait := time.Duration(c.CoalescePeriod), time.Duration(c.CoalesceMaxWait)
	if maxWait == 0 {
		maxWait = math.MaxInt64 // five times a period past 58 years would wrap around
		if period <= maxWait/5 {
			maxWait = 5 * period
		}
	}
	var nsSelector labels.Selector
	if c.NamespaceSelector != "" {
		nsSelector, _ = labels.Parse(string(c.NamespaceSelector))
	}
	ignore := strings.ToLower(c.ResourcesToIgnore)
	strategy := c.ReloadStrategy
	if strategy == "default" { // stakater's chart value for env-vars
		strategy = policy.StrategyEnvVars
	}
	argo, _ := stakaterBool("is-Argo-Rollouts", c.IsArgoRolloutsStakater) // Validate has checked it
	return reloader.Options{
		Namespace: ns, NamespaceSelector: nsSelector, NamespacesToIgnore: c.NamespacesToIgnore,
		ResourceLabelSelector: string(c.ResourceLabelSelector),
		IgnoreConfigMaps:      ignore == "configmaps", IgnoreSecrets: ignore == "secrets",
		StateNamespace: stateNS, StateName: c.Configmap, HashKey: reloader.HashKey{Secret: c.HashKeySecret},
		CoalescePeriod: period, CoalesceMaxWait: maxWait, ShutdownGrace: c.ShutdownGrace,
		Strategy: strategy, ReloadOnCreate: c.ReloadOnCreate, ReloadOnDelete: c.ReloadOnDelete,
		ArgoRollouts: c.IsArgoRollouts || argo, OpenShift: c.IsOpenshift, IgnoredWorkloadTypes: c.IgnoredWorkloadTypes,
		Annotations: c.annotations(), Log: log, Metrics: m,
		Follow: policy.Follow{Track: c.TrackRollouts || c.Rollback, Rollback: c.Rollback, Timeout: c.RolloutTimeout},
		Gate:   policy.GateDefaults{Window: c.ReloadWindow, MinInterval: c.MinReloadInterval},
	}
}

// Period is a duration that also accepts a bare integer as milliseconds, as Collaborne's
// --coalesce-period=10000 does.
type Period time.Duration

// Decode parses a flag value for kong.
func (p *Period) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("period", &s); err != nil {
		return err
	}
	d, err := parsePeriod(s)
	if err != nil {
		return err
	}
	*p = Period(d)
	return nil
}

func parsePeriod(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if ms, errInt := strconv.ParseInt(s, 10, 64); errInt == nil {
		// Checked before multiplying: a product past int64 would wrap into a tiny or negative period.
		if ms > math.MaxInt64/int64(time.Millisecond) || ms < math.MinInt64/int64(time.Millisecond) {
			return 0, fmt.Errorf("%s milliseconds is longer than a duration can be (about 292 years)", s)
		}
		d, err = time.Duration(ms)*time.Millisecond, nil
	}
	if err != nil {
		return 0, fmt.Errorf("%q is neither milliseconds (10000) nor a duration (10s)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("must not be negative, got %s", s)
	}
	return d, nil
}

// defaultGCPercent halves the garbage collector's headroom: measured in BENCHMARKS.md, it cuts
// peak memory by about 10 MiB for about 0.6 ms more CPU per config change. GOGC still overrides it.
const defaultGCPercent = 50

// cliOptions are the parser's options, shared with the test that holds docs/flags.md to --help.
func cliOptions() []kong.Option {
	return []kong.Option{
		kong.Name("reloader"),
		kong.Description("Restarts workloads when the ConfigMaps and Secrets they use change."),
		kong.Vars{"version": version},
	}
}

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	var cli CLI
	kong.Parse(&cli, cliOptions()...)
	if err := run(cli); err != nil {
		fmt.Fprintln(os.Stderr, "reloader: error:", err)
		os.Exit(1)
	}
}

func run(cli CLI) error {
	log := newLogger(cli.LogFormat, cli.LogLevel)
	klog.SetSlogLogger(log) // client-go's own lines follow --log-format too
	cfg, err := restConfig(cli.Kubeconfig)
	if err != nil {
		return err
	}
	namespaces, stateNSs, err := cli.resolveScope(log)
	if err != nil {
		return err
	}
	var opts []metrics.Option
	// stakater's switch for its by-namespace counter (metrics/stakater.go) means the same here.
	if cli.MetricsByNamespace || os.Getenv("METRICS_COUNT_BY_NAMESPACE") == "enabled" {
		opts = append(opts, metrics.ByNamespace())
	}
	m := metrics.New(version, opts...)
	clientmetrics.Register(m.ClientGo())
	cfg.QPS, cfg.Burst = cli.KubeAPIQPS, cli.KubeAPIBurst
	cfg.Wrap(m.InstrumentTransport)
	link := &kube.Link{Log: log}
	cfg.Wrap(link.Wrap)
	var e *leader.Election
	leaseNS := cli.leaseNamespace(stateNSs)
	if cli.LeaderElect || cli.EnableHA {
		if leaseNS == "" {
			return errors.New("--leader-election-namespace: required with several --namespaces outside a cluster ($POD_NAMESPACE unset)")
		}
		e = &leader.Election{Name: cli.LeaderElectionID, ID: leader.NewIdentity(), Lease: cli.LeaderElectionLease,
			Renew: cli.LeaderElectionRenewDeadline, Retry: cli.LeaderElectionRetryPeriod, Log: log.With("lease_namespace", leaseNS), Metrics: m}
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
	ctrls, err := cli.newFleet(clients, namespaces, stateNSs, writer, log, m)
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
	stopServing, err := cli.serveHTTP(m, ready, log)
	if err != nil {
		return err
	}
	defer stopServing()
	if cli.SyncAfterRestart {
		log.Info("--sync-after-restart is always on here: each start compares every workload with its configs' current content and reloads, once, those that differ")
	}
	log.Info("starting", "version", version, "namespaces", strings.Join(namespaces, ","), "state", strings.Join(stateNSs, ",")+"/"+cli.Configmap)
	if e != nil {
		return e.Run(ctx, ctrls.Run)
	}
	m.Leader.Set(1)
	return ctrls.Run(ctx)
}

// resolveScope returns the namespaces to watch and, for each, the namespace of its state.
func (c *CLI) resolveScope(log *slog.Logger) (namespaces, stateNSs []string, err error) {
	namespaces, stakaterScoped := c.scope(os.Getenv)
	if stakaterScoped {
		c.dropAllNamespacesFlags(log)
	}
	stateNSs = make([]string, len(namespaces))
	for i, ns := range namespaces {
		if stateNSs[i], err = stateNamespace(*c, ns); err != nil {
			return nil, nil, err
		}
	}
	return namespaces, stateNSs, nil
}

// newFleet builds one controller per namespace; writer, if set, fences their state writes.
func (c *CLI) newFleet(clients *kube.Clients, namespaces, stateNSs []string, writer string, log *slog.Logger, m *metrics.Metrics) (fleet, error) {
	var shared reloader.Options // one alert queue and webhook for every namespace
	if err := notify(*c, &shared, log, m); err != nil {
		return nil, err
	}
	f := make(fleet, len(namespaces))
	for i, ns := range namespaces {
		o := c.options(ns, stateNSs[i], log, m)
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

// serveHTTP serves metrics and health on --port, and profiles there or on --pprof-addr; the
// function returned stops both.
func (c *CLI) serveHTTP(m *metrics.Metrics, ready func() error, log *slog.Logger) (stop func(), err error) {
	srv, err := serve(c.Port, c.EnablePprof && c.PprofAddr == "", m, ready, log)
	if err != nil {
		return nil, err
	}
	if !c.EnablePprof || c.PprofAddr == "" {
		return func() { srv.Close() }, nil
	}
	profiles, err := servePprof(c.PprofAddr, log)
	if err != nil {
		srv.Close()
		return nil, err
	}
	return func() { srv.Close(); profiles.Close() }, nil
}

// dropAllNamespacesFlags does what stakater does when --namespaces or $KUBERNETES_NAMESPACE
// scope it: the flags that narrow all-namespaces mode are ignored, and that is said.
func (c *CLI) dropAllNamespacesFlags(log *slog.Logger) {
	if c.NamespaceSelector != "" || len(c.NamespacesToIgnore) > 0 {
		log.Warn("--namespace-selector and --namespaces-to-ignore only apply to all namespaces; --namespaces or $KUBERNETES_NAMESPACE scope the reloader, so they are ignored")
	}
	c.NamespaceSelector, c.NamespacesToIgnore = "", nil
}

// leaseNamespace: --leader-election-namespace, else the state's namespace, else (several
// namespaces, several states) the reloader's own.
func (c *CLI) leaseNamespace(stateNSs []string) string {
	switch {
	case c.LeaderElectionNamespace != "":
		return c.LeaderElectionNamespace
	case len(stateNSs) == 1:
		return stateNSs[0]
	}
	return podNamespace()
}

func newLogger(format, level string) *slog.Logger {
	lvl, _ := parseLogLevel(level) // Validate has checked it
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
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

const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func stateNamespace(cli CLI, ns string) (string, error) {
	if cli.StateNamespace != "" {
		return cli.StateNamespace, nil
	}
	if ns != "" {
		return ns, nil
	}
	b, err := os.ReadFile(serviceAccountNamespace)
	if ns := strings.TrimSpace(string(b)); err == nil && ns != "" {
		return ns, nil
	}
	return "", errors.New("--state-namespace: required when --namespace is empty and the reloader runs outside a cluster")
}

func serve(port int, pprof bool, m *metrics.Metrics, ready func() error, log *slog.Logger) (*http.Server, error) {
	mux := http.NewServeMux()
	if pprof {
		profiles(mux)
	}
	mux.Handle("/metrics", m.Handler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/live", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }) // stakater's probe path
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	srv, err := listen(fmt.Sprintf(":%d", port), mux, log)
	if err != nil {
		return nil, fmt.Errorf("--port: %w", err)
	}
	log.Info("serving metrics and health", "addr", srv.Addr)
	return srv, nil
}

// servePprof serves the profiles alone on --pprof-addr, as stakater does.
func servePprof(addr string, log *slog.Logger) (*http.Server, error) {
	mux := http.NewServeMux()
	profiles(mux)
	srv, err := listen(addr, mux, log)
	if err != nil {
		return nil, fmt.Errorf("--pprof-addr: %w", err)
	}
	log.Info("serving profiles", "addr", srv.Addr)
	return srv, nil
}

func profiles(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", httppprof.Index)
	mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
}

// listen serves h on addr in the background; the server's Addr is the address bound.
func listen(addr string, h http.Handler, log *slog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Addr: ln.Addr().String(), Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", "addr", srv.Addr, "err", err)
		}
	}()
	return srv, nil
}
