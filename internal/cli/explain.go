package cli

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/reloader/reloader/policy"
)

// ExplainCommand is the subcommand that explains a workload (reloader explain); any other first
// argument, or none, runs the controller with the flags as they are.
const ExplainCommand = "explain"

// IsExplain reports whether a command line (without the program's name) asks for explain: its
// first argument is the word, which no flag of the controller's takes as a value there.
func IsExplain(args []string) bool { return len(args) > 0 && args[0] == ExplainCommand }

// PluginName is the executable's name as a kubectl plugin: kubectl reloader ... runs it.
const PluginName = "kubectl-reloader"

// IsPlugin reports whether the executable runs as the kubectl plugin (its name, argv0, is
// PluginName): then explain is the only command, and the controller never starts from it.
func IsPlugin(argv0 string) bool {
	return strings.TrimSuffix(filepath.Base(argv0), ".exe") == PluginName
}

// Explain is reloader explain's command line: the workload, where to find the running reloader,
// and the controller's own flags, which judge when no running reloader is found.
type Explain struct {
	Workload          string `arg:"" help:"KIND/NAME of the workload: deployment/web, deploy/web, sts/db, ds/agent, cronjob/report, job/once, rollout/canary, dc/legacy (any case)."`
	Config            string `arg:"" optional:"" help:"KIND/NAME of one config (configmap/app-config, cm/app-config, secret/db) to explain alone, also when the workload neither reads nor names it."`
	WorkloadNamespace string `name:"namespace-of-workload" short:"n" help:"Namespace of the workload. Default: the kubeconfig context's."`
	Output            string `short:"o" default:"text" enum:"text,json" help:"Output format: text or json."`
	Context           string `help:"The kubeconfig context to use. Default: the current one."`
	ReloaderNamespace string `default:"reloader" help:"Namespace of the running reloader's Lease and pods; the context's namespace and the workload's are tried after it."`

	Flags `embed:""`
}

// ExplainParserOptions are explain's parser options; version is what --version prints.
func ExplainParserOptions(version string) []kong.Option {
	return append(ParserOptions(version),
		kong.Name("reloader explain"),
		kong.Description("Explains why the reloader reloads, holds or leaves a workload, config by config, with the running reloader's flags. Reads only."))
}

// ParseExplain parses explain's arguments (after the word explain).
func ParseExplain(args []string, version string, opts ...kong.Option) (*Explain, *kong.Kong, error) {
	var x Explain
	p, err := kong.New(&x, append(ExplainParserOptions(version), opts...)...)
	if err != nil {
		return nil, nil, err
	}
	_, err = p.Parse(args)
	return &x, p, err
}

// workloadKinds maps each spelling of a workload kind, lower case, to the kind.
var workloadKinds = map[string]string{
	"deployment": "Deployment", "deployments": "Deployment", "deploy": "Deployment",
	"statefulset": "StatefulSet", "statefulsets": "StatefulSet", "sts": "StatefulSet",
	"daemonset": "DaemonSet", "daemonsets": "DaemonSet", "ds": "DaemonSet",
	"cronjob": "CronJob", "cronjobs": "CronJob", "cj": "CronJob",
	"job": "Job", "jobs": "Job",
	"rollout": "Rollout", "rollouts": "Rollout", "ro": "Rollout",
	"deploymentconfig": "DeploymentConfig", "deploymentconfigs": "DeploymentConfig", "dc": "DeploymentConfig",
}

// configKinds maps each spelling of a config kind, lower case, to the kind.
var configKinds = map[string]string{
	"configmap": policy.KindConfigMap, "configmaps": policy.KindConfigMap, "cm": policy.KindConfigMap,
	"secret": policy.KindSecret, "secrets": policy.KindSecret,
}

// ParseObject reads KIND/NAME against kinds (a kind's spellings, lower case), as kubectl does:
// the kind in any case, optionally with its API group (deployments.apps/web).
func parseObject(s string, kinds map[string]string, what string) (kind, name string, err error) {
	k, n, ok := strings.Cut(s, "/")
	k, _, _ = strings.Cut(strings.ToLower(k), ".")
	kind = kinds[k]
	if !ok || n == "" || kind == "" {
		return "", "", fmt.Errorf("%q: want KIND/NAME of a %s, e.g. %s", s, what, map[string]string{"workload": "deployment/web", "config": "configmap/app-config"}[what])
	}
	return kind, n, nil
}

// WorkloadOf is the workload explain is asked about: its kind and name.
func (x *Explain) WorkloadOf() (kind, name string, err error) {
	return parseObject(x.Workload, workloadKinds, "workload")
}

// ConfigOf is the config explain is asked about alone, if any.
func (x *Explain) ConfigOf() (*policy.ConfigRef, error) {
	if x.Config == "" {
		return nil, nil
	}
	kind, name, err := parseObject(x.Config, configKinds, "config")
	if err != nil {
		return nil, err
	}
	return &policy.ConfigRef{Kind: kind, Name: name}, nil
}

// ScopeOf is Scope for a reloader that runs elsewhere: getenv reads its environment, podNS is
// its namespace (where its ServiceAccount's would be). It changes c as Scope does.
func (c *Flags) ScopeOf(getenv func(string) string, podNS string) (namespaces, stateNSs []string) {
	namespaces, stakaterScoped := c.scope(getenv)
	if stakaterScoped {
		c.NamespaceSelector, c.NamespacesToIgnore = "", nil
	}
	stateNSs = make([]string, len(namespaces))
	for i, ns := range namespaces {
		stateNSs[i] = firstOf(c.StateNamespace, ns, podNS)
	}
	return namespaces, stateNSs
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// envRef is a $(VAR) reference in a container's args, which the kubelet expands.
var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)`)

// ParseRunning parses a running reloader's container args, $(VAR) expanded from getenv as the
// kubelet does, with the controller's own parser.
func ParseRunning(args []string, getenv func(string) (string, bool)) (*Flags, error) {
	expanded := make([]string, len(args))
	for i, a := range args {
		expanded[i] = envRef.ReplaceAllStringFunc(a, func(m string) string {
			if v, ok := getenv(m[2 : len(m)-1]); ok {
				return v
			}
			return m
		})
	}
	var f Flags
	p, err := kong.New(&f, ParserOptions("running")...)
	if err != nil {
		return nil, err
	}
	if _, err := p.Parse(expanded); err != nil {
		return nil, fmt.Errorf("parse its args %q: %w", strings.Join(args, " "), err)
	}
	return &f, nil
}
