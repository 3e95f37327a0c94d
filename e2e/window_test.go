package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pendingEntry is the state's record of the held reload of Deployment web.
func pendingEntry(t *testing.T, ns string) string {
	t.Helper()
	cm, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data["pending.Deployment_web"]
}

// A reload due outside the window is held, survives a kill -9, and happens once when the window
// opens, with the content current then.
func TestReloadOutsideTheWindowHappensOnceWhenItOpensAcrossAKillNine(t *testing.T) {
	t.Parallel()
	ns := setup(t)
	opens := time.Now().UTC().Add(15 * time.Second).Truncate(time.Second)
	window := fmt.Sprintf("%s-%s UTC", opens.Format("15:04:05"), opens.Add(time.Hour).Format("15:04:05"))
	args := []string{"--coalesce-period", "100ms", "--reload-window", window}
	first := start(t, ns, args...)
	waitFor(t, 10*time.Second, "first hashes recorded", func() (bool, error) { return stateRecorded(t, ns), nil })
	before := deployment(t, ns).Generation

	update(t, ns, "1")
	waitFor(t, 10*time.Second, "the pending entry", func() (bool, error) { return strings.HasPrefix(pendingEntry(t, ns), "pending@"), nil })
	if m := first.metrics(t); !strings.Contains(m, `reloader_reloads_deferred{reason="window"} 1`) {
		t.Errorf("the held reload is not in reloader_reloads_deferred:\n%s", grepLines(m, "reloader_reloads_deferred"))
	}
	first.kill()

	hash := update(t, ns, "2")
	start(t, ns, args...)
	waitFor(t, 40*time.Second, "the reload", func() (bool, error) { return envVar(deployment(t, ns)) == hash, nil })
	if now := time.Now(); now.Before(opens) {
		t.Fatalf("reloaded at %s, before the window opened at %s", now.Format(time.RFC3339Nano), opens)
	}
	waitFor(t, 5*time.Second, "the pending entry removed", func() (bool, error) { return pendingEntry(t, ns) == "", nil })
	time.Sleep(2 * time.Second)
	if got := deployment(t, ns).Generation - before; got != 1 {
		t.Fatalf("%d template changes, want exactly 1", got)
	}
}

func TestInvalidReloadWindowFlagFailsWithOneLine(t *testing.T) {
	t.Parallel()
	p := launch(t, "default", cluster.Kubeconfig, "--reload-window", "Sat 02:00-04:00 Mars/Olympus")
	err, exited := p.wait(10 * time.Second)
	if !exited || err == nil {
		t.Fatalf("the reloader did not fail (exited %v, %v)", exited, err)
	}
	out := strings.TrimSpace(p.stderr.String())
	if !strings.Contains(out, "--reload-window") || !strings.Contains(out, "unknown time zone") || strings.Count(out, "\n") > 0 {
		t.Fatalf("want one line naming the flag and the problem, got:\n%s", out)
	}
}
