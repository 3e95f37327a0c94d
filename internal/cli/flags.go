// Package cli owns the command line: the flags, their validation, and what stakater
// Reloader's flags and values mean here. It turns them into reloader.Options and starts
// nothing (internal/app runs what they describe).
package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// Flags is the whole command-line configuration.
type Flags struct {
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
	DryRun                      bool          `help:"Judge and report, but change nothing: each due reload is a WouldReload Event, a log line and reloader_reloads_total{result=\"dry-run\"}; no workload, Job, state, Secret or Lease is written (docs/migrating.md)."`

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
	IgnoreSecretTypes     []string `default:"helm.sh/release.v1,kubernetes.io/service-account-token" help:"Secret types never listed, watched nor tracked (a field selector on type). Empty: every type."`
	ReloadOnCreate        bool     `help:"Reload dependents when a config they reference is created."`
	ReloadOnDelete        bool     `help:"Reload every dependent that ran a config when it is deleted (its marker says deleted)."`

	// Safe reloads (docs/safe-reloads.md, "Safe reloads"); the reloader/* workload annotations override these.
	TrackRollouts  bool          `help:"Follow every reload to the end of its rollout: outcome in reloader/history, an Event, the log and reloader_rollouts_total."`
	Rollback       bool          `help:"Undo a reload whose rollout fails or times out, and hold that config content for the workload until it changes (implies --track-rollouts)."`
	RolloutTimeout time.Duration `default:"15m" help:"How long a followed rollout may run before it counts as timed out (0: the default)."`
	// Safe reloads: when a due reload may happen (docs/safe-reloads.md, "Windows, flap protection,
	// validation, pause").
	ReloadWindow                  string        `help:"Maintenance windows of every workload, e.g. 'Sat 02:00-04:00 Europe/Berlin' (grammar in docs/values.md); the reloader/window annotation overrides it. Empty: any time."`
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
	// stakater's --webhook-url (internal/app/alerts.go).
	WebhookURL string `name:"webhook-url" help:"Instead of reloading workloads, POST {\"webhook\":\"update successful\"} to this URL on each config change, as stakater Reloader does."`
}

// ParserOptions are the parser's options, shared with the test that holds docs/flags.md to
// --help; version is what --version prints.
func ParserOptions(version string) []kong.Option {
	return []kong.Option{
		kong.Name("reloader"),
		kong.Description("Restarts workloads when the ConfigMaps and Secrets they use change."),
		kong.Vars{"version": version},
		kong.KindMapper(reflect.Bool, boolFlag{}),
	}
}

var workloadTypes = []string{reloader.TypeDeployments, reloader.TypeStatefulSets, reloader.TypeDaemonSets,
	reloader.TypeRollouts, reloader.TypeDeploymentConfigs, reloader.TypeJobs, reloader.TypeCronJobs}

// Validate rejects values kong's types cannot: each message names its flag.
func (c *Flags) Validate() error {
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
	if c.DryRun && c.WebhookURL != "" {
		return errors.New("--dry-run: not supported with --webhook-url, which reloads nothing to rehearse; drop one of them")
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
	for _, t := range c.IgnoreSecretTypes {
		if t == "" || strings.TrimSpace(t) != t {
			return fmt.Errorf("--ignore-secret-types: empty type or spaces around one in %q; an empty value caches every type", strings.Join(c.IgnoreSecretTypes, ","))
		}
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

func (c *Flags) annotations() policy.Annotations {
	a := policy.DefaultAnnotations()
	a.Auto, a.ConfigMapAuto, a.SecretAuto = c.AutoAnnotation, c.ConfigmapAutoAnnotation, c.SecretAutoAnnotation
	a.Search, a.Match, a.Ignore = c.AutoSearchAnnotation, c.SearchMatchAnnotation, c.IgnoreAnnotation
	a.ConfigMap, a.Secret = c.ConfigmapAnnotation, c.SecretAnnotation
	a.AlternativeConfigMap, a.AlternativeSecret = c.AlternativeConfigmapAnnotation, c.AlternativeSecretAnnotation
	a.PausePeriod, a.PausedAt = c.PauseDeploymentAnnotation, c.PauseDeploymentTimeAnnotation
	a.ReloadAll = c.AutoReloadAll
	return a
}

// Options turns the flags into controller options; Validate has checked every value.
func (c *Flags) Options(ns, stateNS string, log *slog.Logger, m *metrics.Metrics) reloader.Options {
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
		IgnoreConfigMaps:      ignore == "configmaps", IgnoreSecrets: ignore == "secrets", IgnoreSecretTypes: c.IgnoreSecretTypes,
		StateNamespace: stateNS, StateName: c.Configmap, HashKey: reloader.HashKey{Secret: c.HashKeySecret},
		CoalescePeriod: period, CoalesceMaxWait: maxWait, ShutdownGrace: c.ShutdownGrace,
		Strategy: strategy, ReloadOnCreate: c.ReloadOnCreate, ReloadOnDelete: c.ReloadOnDelete,
		ArgoRollouts: c.IsArgoRollouts || argo, OpenShift: c.IsOpenshift, IgnoredWorkloadTypes: c.IgnoredWorkloadTypes,
		Annotations: c.annotations(), Log: log, Metrics: m, DryRun: c.DryRun,
		Follow: policy.Follow{Track: c.TrackRollouts || c.Rollback, Rollback: c.Rollback, Timeout: c.RolloutTimeout},
		Gate:   policy.GateDefaults{Window: c.ReloadWindow, MinInterval: c.MinReloadInterval},
	}
}

// Logger logs to stderr at --log-level, in --log-format.
func (c *Flags) Logger() *slog.Logger {
	lvl, _ := parseLogLevel(c.LogLevel) // Validate has checked it
	opts := &slog.HandlerOptions{Level: lvl}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}
