package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var electionFlags = []string{"--coalesce-period", "0", "--leader-elect",
	"--leader-election-lease", "4s", "--leader-election-renew-deadline", "3s", "--leader-election-retry-period", "500ms"}

func holder(t *testing.T, ns string) string {
	t.Helper()
	lease, err := cluster.Client().CoordinationV1().Leases(ns).Get(context.Background(), "reloader", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

func successes(t *testing.T, p *proc) int {
	t.Helper()
	for _, line := range strings.Split(p.metrics(t), "\n") {
		if strings.HasPrefix(line, `reloader_reloads_total{kind="Deployment",result="success"}`) {
			var n int
			_, _ = fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &n)
			return n
		}
	}
	return 0
}

func TestLeaderElectionOneActsThenHandsOver(t *testing.T) {
	ns := setup(t)
	a, b := start(t, ns, electionFlags...), start(t, ns, electionFlags...)
	waitFor(t, 15*time.Second, "a leader", func() (bool, error) { return holder(t, ns) != "", nil })
	leader, standby := a, b
	if !strings.Contains(b.stderr.String(), "became leader") {
		waitFor(t, 10*time.Second, "a to log leadership", func() (bool, error) { return strings.Contains(a.stderr.String(), "became leader"), nil })
	} else {
		leader, standby = b, a
	}
	waitFor(t, 10*time.Second, "first hashes recorded", func() (bool, error) { return stateRecorded(t, ns), nil })
	before := deployment(t, ns).Generation

	waitReloaded(t, ns, update(t, ns, "1"))
	if n := successes(t, standby); n != 0 {
		t.Fatalf("the standby patched %d workloads", n)
	}
	if strings.Contains(standby.stderr.String(), "became leader") {
		t.Fatal("both replicas claim leadership")
	}

	oldHolder := holder(t, ns)
	leader.kill()
	killed := time.Now()
	waitFor(t, 20*time.Second, "the standby to take over", func() (bool, error) {
		return strings.Contains(standby.stderr.String(), "became leader") && holder(t, ns) != oldHolder, nil
	})
	t.Logf("failover took %s (lease 4s)", time.Since(killed).Round(100*time.Millisecond))
	if took := time.Since(killed); took > 4*time.Second+2*time.Second {
		t.Errorf("failover took %s, more than the lease duration plus a retry margin", took)
	}
	waitReloaded(t, ns, update(t, ns, "2"))
	time.Sleep(2 * time.Second)
	if got := deployment(t, ns).Generation - before; got != 2 {
		t.Fatalf("%d template changes for 2 config changes across a failover, want 2", got)
	}
	if err := standby.terminate(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if h := holder(t, ns); h != "" {
		t.Fatalf("the Lease is still held by %q after a graceful stop; it should be released", h)
	}
}
