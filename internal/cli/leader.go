package cli

import (
	"fmt"
	"math"
	"time"

	"github.com/reloader/reloader/internal/leader"
)

// validateLeaderElection rejects timings that leave no safety margin (see leader.Election for
// the argument): the leader acts until the renew deadline R after the start of its last renew,
// and a standby takes over no sooner than the Lease duration D after it.
func (c *Flags) validateLeaderElection() error {
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

// LeaseNamespace: --leader-election-namespace, else the state's namespace, else (several
// namespaces, several states) the reloader's own.
func (c *Flags) LeaseNamespace(stateNSs []string) string {
	switch {
	case c.LeaderElectionNamespace != "":
		return c.LeaderElectionNamespace
	case len(stateNSs) == 1:
		return stateNSs[0]
	}
	return podNamespace()
}
