package cli

import (
	"testing"

	"github.com/alecthomas/kong"
)

func TestExplainReadsKindNameAndItsOwnFlags(t *testing.T) {
	x, _, err := ParseExplain([]string{"-n", "apps", "DEPLOY/web", "cm/app-config", "-o", "json", "--namespace", "watched"}, "dev")
	if err != nil {
		t.Fatal(err)
	}
	kind, name, err := x.WorkloadOf()
	if err != nil || kind != "Deployment" || name != "web" {
		t.Fatalf("WorkloadOf = %q %q %v, want Deployment web", kind, name, err)
	}
	cfg, err := x.ConfigOf()
	if err != nil || cfg == nil || cfg.Kind != "ConfigMap" || cfg.Name != "app-config" {
		t.Fatalf("ConfigOf = %+v %v, want ConfigMap app-config", cfg, err)
	}
	if x.WorkloadNamespace != "apps" || x.Output != "json" || x.Namespace != "watched" {
		t.Errorf("namespace-of-workload %q, output %q, --namespace %q; want apps, json, watched", x.WorkloadNamespace, x.Output, x.Namespace)
	}
	if x.Configmap != "reloader-state" {
		t.Errorf("the controller's flags keep their defaults: --configmap = %q", x.Configmap)
	}
}

func TestExplainRefusesAKindItDoesNotKnow(t *testing.T) {
	for _, arg := range []string{"pod/web", "web", "deployment/"} {
		x, _, err := ParseExplain([]string{arg}, "dev")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := x.WorkloadOf(); err == nil {
			t.Errorf("%q: no error", arg)
		}
	}
}

// The controller's command line is not explain's: a reloader started with the controller's
// flags (stakater's drop-in: the manifests and the chart pass only flags) still runs.
func TestTheControllersCommandLineIsNotExplain(t *testing.T) {
	for _, args := range [][]string{nil, {"--namespace", "x"}, {"--namespace", "explain"}, {"--namespace=explain", "--dry-run"}} {
		if IsExplain(args) {
			t.Errorf("%q: read as explain", args)
		}
		var f Flags
		p, err := kong.New(&f, ParserOptions("dev")...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Parse(args); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
	if !IsExplain([]string{"explain", "deploy/web"}) {
		t.Error("explain deploy/web: not read as explain")
	}
}

func TestARunningReloadersArgsAreParsedWithItsEnvironment(t *testing.T) {
	env := map[string]string{"POD_NAMESPACE": "ops"}
	f, err := ParseRunning([]string{"--namespace=$(POD_NAMESPACE)", "--reload-window=Sat 02:00-04:00", "--min-reload-interval=1m"}, func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.Namespace != "ops" || f.ReloadWindow != "Sat 02:00-04:00" || f.MinReloadInterval.String() != "1m0s" {
		t.Errorf("parsed %q %q %s", f.Namespace, f.ReloadWindow, f.MinReloadInterval)
	}
	if _, err := ParseRunning([]string{"--no-such-flag"}, func(string) (string, bool) { return "", false }); err == nil {
		t.Error("an unknown flag parsed")
	}
}

func TestOnlyTheKubectlPluginsNameIsThePlugin(t *testing.T) {
	for argv0, want := range map[string]bool{"kubectl-reloader": true, "/usr/local/bin/kubectl-reloader": true,
		"reloader": false, "/bin/reloader": false} {
		if got := IsPlugin(argv0); got != want {
			t.Errorf("IsPlugin(%q) = %t, want %t", argv0, got, want)
		}
	}
}
