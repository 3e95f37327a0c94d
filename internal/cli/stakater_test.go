package cli

import (
	"bufio"
	"bytes"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/reloader/reloader/policy"
)

// errExit stands for kong's exit after --version or --help.
var errExit = errors.New("exited")

// parseArgs runs the real flag parser (Validate included) on args.
func parseArgs(t *testing.T, args ...string) (Flags, string, error) {
	t.Helper()
	var cli Flags
	var out bytes.Buffer
	exited := false
	p, err := kong.New(&cli, kong.Name("reloader"), kong.Vars{"version": "v-test"}, kong.Writers(&out, &out),
		kong.Exit(func(int) { exited = true }))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Parse(args)
	if exited && err == nil {
		err = errExit
	}
	return cli, out.String(), err
}

// stakaterMeaning checks, per fixture line, that the flag has stakater's meaning here.
var stakaterMeaning = map[string]func(t *testing.T, c Flags, out string){
	"--auto-reload-all=true": func(t *testing.T, c Flags, _ string) { check(t, c.annotations().ReloadAll, true) },
	"--configmap-annotation=example.com/configmaps": func(t *testing.T, c Flags, _ string) {
		check(t, c.annotations().ConfigMap, "example.com/configmaps")
	},
	"--secret-annotation=example.com/secrets": func(t *testing.T, c Flags, _ string) { check(t, c.annotations().Secret, "example.com/secrets") },
	"--auto-annotation=example.com/auto":      func(t *testing.T, c Flags, _ string) { check(t, c.annotations().Auto, "example.com/auto") },
	"--ignore-annotation=example.com/ignore":  func(t *testing.T, c Flags, _ string) { check(t, c.annotations().Ignore, "example.com/ignore") },
	"--configmap-auto-annotation=example.com/configmap-auto": func(t *testing.T, c Flags, _ string) {
		check(t, c.annotations().ConfigMapAuto, "example.com/configmap-auto")
	},
	"--secret-auto-annotation=example.com/secret-auto": func(t *testing.T, c Flags, _ string) {
		check(t, c.annotations().SecretAuto, "example.com/secret-auto")
	},
	"--auto-search-annotation=example.com/search": func(t *testing.T, c Flags, _ string) { check(t, c.annotations().Search, "example.com/search") },
	"--search-match-annotation=example.com/match": func(t *testing.T, c Flags, _ string) { check(t, c.annotations().Match, "example.com/match") },
	"--log-format=json":                           func(t *testing.T, c Flags, _ string) { check(t, c.LogFormat, "json") },
	"--log-format=":                               func(t *testing.T, c Flags, _ string) { check(t, c.LogFormat, "") },
	"--log-level=trace":                           func(t *testing.T, c Flags, _ string) { checkLevel(t, c, slog.LevelDebug-4) },
	"--log-level=debug":                           func(t *testing.T, c Flags, _ string) { checkLevel(t, c, slog.LevelDebug) },
	"--log-level=info":                            func(t *testing.T, c Flags, _ string) { checkLevel(t, c, slog.LevelInfo) },
	"--log-level=warning":                         func(t *testing.T, c Flags, _ string) { checkLevel(t, c, slog.LevelWarn) },
	"--log-level=error":                           func(t *testing.T, c Flags, _ string) { checkLevel(t, c, slog.LevelError) },
	"--log-level=fatal":                           func(t *testing.T, c Flags, _ string) { checkLevel(t, c, slog.LevelError+4) },
	"--log-level=panic":                           func(t *testing.T, c Flags, _ string) { checkLevel(t, c, slog.LevelError+4) },
	"--resources-to-ignore=secrets": func(t *testing.T, c Flags, _ string) {
		check(t, c.Options("ns", "ns", nil, nil).IgnoreSecrets, true)
	},
	"--resources-to-ignore=configmaps": func(t *testing.T, c Flags, _ string) {
		check(t, c.Options("ns", "ns", nil, nil).IgnoreConfigMaps, true)
	},
	"--ignored-workload-types=jobs,cronjobs": func(t *testing.T, c Flags, _ string) {
		check(t, strings.Join(c.IgnoredWorkloadTypes, ","), "jobs,cronjobs")
	},
	"--namespaces=team-a,team-b": func(t *testing.T, c Flags, _ string) {
		ns, _ := c.scope(func(string) string { return "ignored" })
		check(t, strings.Join(ns, ","), "team-a,team-b")
	},
	"--namespaces-to-ignore=kube-system": func(t *testing.T, c Flags, _ string) {
		check(t, strings.Join(c.NamespacesToIgnore, ","), "kube-system")
	},
	"--namespace-selector=\"team:a,env=*\"":      func(t *testing.T, c Flags, _ string) { check(t, c.NamespaceSelector, "team=a,env") },
	"--resource-label-selector=reloader:enabled": func(t *testing.T, c Flags, _ string) { check(t, c.ResourceLabelSelector, "reloader=enabled") },
	"--is-Argo-Rollouts=true":                    func(t *testing.T, c Flags, _ string) { check(t, c.Options("ns", "ns", nil, nil).ArgoRollouts, true) },
	"--reload-strategy=default": func(t *testing.T, c Flags, _ string) {
		check(t, c.Options("ns", "ns", nil, nil).Strategy, policy.StrategyEnvVars)
	},
	"--reload-strategy=env-vars": func(t *testing.T, c Flags, _ string) {
		check(t, c.Options("ns", "ns", nil, nil).Strategy, policy.StrategyEnvVars)
	},
	"--reload-strategy=annotations": func(t *testing.T, c Flags, _ string) {
		check(t, c.Options("ns", "ns", nil, nil).Strategy, policy.StrategyAnnotations)
	},
	"--reload-on-create=true":   func(t *testing.T, c Flags, _ string) { check(t, c.Options("ns", "ns", nil, nil).ReloadOnCreate, true) },
	"--reload-on-delete=true":   func(t *testing.T, c Flags, _ string) { check(t, c.Options("ns", "ns", nil, nil).ReloadOnDelete, true) },
	"--enable-ha=true":          func(t *testing.T, c Flags, _ string) { check(t, c.EnableHA, true) },
	"--sync-after-restart=true": func(t *testing.T, c Flags, _ string) { check(t, c.SyncAfterRestart, true) },
	"--enable-pprof":            func(t *testing.T, c Flags, _ string) { check(t, c.EnablePprof, true) },
	"--pprof-addr=:6060":        func(t *testing.T, c Flags, _ string) { check(t, c.PprofAddr, ":6060") },
	"--webhook-url=https://hooks.example.com/reload": func(t *testing.T, c Flags, _ string) {
		check(t, c.WebhookURL, "https://hooks.example.com/reload")
	},
	"--pause-deployment-annotation=example.com/pause-period": func(t *testing.T, c Flags, _ string) {
		check(t, c.Options("ns", "ns", nil, nil).Annotations.PausePeriod, "example.com/pause-period")
	},
	"--pause-deployment-time-annotation=example.com/paused-at": func(t *testing.T, c Flags, _ string) {
		check(t, c.Options("ns", "ns", nil, nil).Annotations.PausedAt, "example.com/paused-at")
	},
	"--version": func(t *testing.T, _ Flags, out string) { check(t, strings.TrimSpace(out), "v-test") },
}

func check[T comparable](t *testing.T, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

func checkLevel(t *testing.T, c Flags, want slog.Level) {
	t.Helper()
	got, err := parseLogLevel(c.LogLevel)
	if err != nil || got != want {
		t.Errorf("level %v (%v), want %v", got, err, want)
	}
}

func TestStakaterFlagsAreAccepted(t *testing.T) {
	f, err := os.Open("../../testdata/stakater-flags.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	for s := bufio.NewScanner(f); s.Scan(); {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		lines++
		t.Run(line, func(t *testing.T) {
			c, out, err := parseArgs(t, line)
			switch {
			case line == "--enable-csi-integration=true":
				// Accepted as a flag, refused with a reason, not as unknown.
				if !errors.Is(err, errCSI) {
					t.Fatalf("err = %v, want the CSI explanation", err)
				}
				return
			case line == "--version":
				if !errors.Is(err, errExit) {
					t.Fatalf("err = %v, want an exit after printing the version", err)
				}
			case err != nil:
				t.Fatalf("refused: %v", err)
			}
			meaning, ok := stakaterMeaning[line]
			if !ok {
				t.Fatal("no meaning checked for this line")
			}
			meaning(t, c, out)
		})
	}
	if lines < 35 {
		t.Errorf("only %d flags in the fixture", lines)
	}
}

func TestStakaterSelectorFlagsRepeatAndKeepSetSyntax(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--namespace-selector=team:a"}, "team=a"},
		{[]string{"--namespace-selector=team:*"}, "team"},
		{[]string{"--namespace-selector=team=*"}, "team"},
		{[]string{"--namespace-selector=team!=a"}, "team!=a"},
		{[]string{"--namespace-selector=env in (a,b),team"}, "env in (a,b),team"},
		{[]string{"--namespace-selector=team:a", "--namespace-selector=env:prod"}, "team=a,env=prod"},
		{[]string{`--namespace-selector="team:a,env:*"`}, "team=a,env"},
	} {
		c, _, err := parseArgs(t, tt.args...)
		if err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		if string(c.NamespaceSelector) != tt.want {
			t.Errorf("%v: %q, want %q", tt.args, c.NamespaceSelector, tt.want)
		}
	}
}

func TestStakaterValuesRefusedWithTheFlagNamed(t *testing.T) {
	for _, tt := range []struct{ arg, flag string }{
		{"--log-level=verbose", "--log-level"},
		{"--log-format=xml", "--log-format"},
		{"--is-Argo-Rollouts=yes", "--is-Argo-Rollouts"},
		{"--namespaces=Not_A_Namespace", "--namespaces"},
		{"--namespaces=a,b,a", "--namespaces"},
	} {
		_, _, err := parseArgs(t, tt.arg)
		if err == nil || !strings.Contains(err.Error(), tt.flag) {
			t.Errorf("%s: %v, want an error naming %s", tt.arg, err, tt.flag)
		}
	}
	if _, _, err := parseArgs(t, "--namespace=a", "--namespaces=b"); err == nil {
		t.Error("--namespace with --namespaces accepted")
	}
}
