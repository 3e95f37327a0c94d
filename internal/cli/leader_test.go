package cli

import (
	"strings"
	"testing"
	"time"
)

func TestLeaderElectionFlagsNeedASafetyMargin(t *testing.T) {
	for _, tt := range []struct {
		lease, renew, retry time.Duration
		bad                 string // the flag the error must name first; empty if accepted
	}{
		{15 * time.Second, 10 * time.Second, 2 * time.Second, ""},                                            // the defaults
		{4 * time.Second, 3 * time.Second, 500 * time.Millisecond, ""},                                       // the e2e tests'
		{137 * time.Second, 107 * time.Second, 26 * time.Second, ""},                                         // OpenShift's recommended values
		{4 * time.Second, 3 * time.Second, time.Second, ""},                                                  // R = 3 × retry exactly
		{1500 * time.Millisecond, 300 * time.Millisecond, 100 * time.Millisecond, "--leader-election-lease"}, // stored as 1s
		{0, 0, 0, "--leader-election-lease"},
		{4 * time.Second, 3 * time.Second, 0, "--leader-election-retry-period"},
		{15 * time.Second, 10 * time.Second, 4 * time.Second, "--leader-election-renew-deadline"},     // one renew attempt
		{4 * time.Second, 3500 * time.Millisecond, 500 * time.Millisecond, "--leader-election-lease"}, // 500ms margin
		{4 * time.Second, 4 * time.Second, 500 * time.Millisecond, "--leader-election-lease"},
		{4 * time.Second, 5 * time.Second, 500 * time.Millisecond, "--leader-election-lease"},
	} {
		cli := Flags{Port: 9090, KubeAPIQPS: 50, KubeAPIBurst: 100, HashKeySecret: "reloader-hash-key", LeaderElect: true,
			LeaderElectionLease: tt.lease, LeaderElectionRenewDeadline: tt.renew, LeaderElectionRetryPeriod: tt.retry}
		err := cli.Validate()
		name := tt.lease.String() + "/" + tt.renew.String() + "/" + tt.retry.String()
		switch {
		case tt.bad == "" && err != nil:
			t.Errorf("%s rejected: %v", name, err)
		case tt.bad != "" && err == nil:
			t.Errorf("%s accepted, want an error naming %s", name, tt.bad)
		case tt.bad != "" && !strings.HasPrefix(err.Error(), tt.bad):
			t.Errorf("%s: %v; want it to start with %s", name, err, tt.bad)
		}
	}
	// Without --leader-elect the timings are unused, and not checked.
	if err := (&Flags{Port: 9090, KubeAPIQPS: 50, KubeAPIBurst: 100, HashKeySecret: "reloader-hash-key", LeaderElectionLease: 1500 * time.Millisecond}).Validate(); err != nil {
		t.Errorf("leader election off: %v", err)
	}
}
