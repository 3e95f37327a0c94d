package policy

import "time"

// UnrecordedContent is a tombstone's content for a config that, before its deletion, may have
// had a content no reloader recorded, which a dependent without a marker may run: a
// well-formed hash that no content has, so that its recreation reloads such a dependent
// (reload: UnrecordedTombstone).
const UnrecordedContent = "0000000000000000000000000000000000000000"

// UnseenOnEntry decides, for a config found deleted when its namespace entered
// --namespace-selector, whether its tombstone says UnrecordedContent rather than the content
// recorded before the namespace left at left (zero: not seen leaving, before this process).
// While out, the config may have changed and been read by a dependent created then, and no
// reloader saw either: so when a dependent was created at or after the leave (created: each
// dependent's creation, to the second; left is when the reloader saw the leave, up to
// LeaveMargin after it was made), or the leave's time is unknown. A dependent created
// before it ran the recorded content, or carries a marker that decides: keeping that content
// restarts none of them for a recreation with it. Where both kinds exist, the older ones are
// restarted once by such a recreation: one restart rather than a lost change.
func UnseenOnEntry(left time.Time, created []time.Time) bool {
	if left.IsZero() {
		return true
	}
	since := left.Add(-LeaveMargin).Truncate(time.Second)
	for _, c := range created {
		if !c.Before(since) {
			return true
		}
	}
	return false
}

// LeaveMargin is how long before the reloader saw a namespace leave the selection a creation
// may have come after the leave: the namespace's and the workloads' watches are not ordered.
const LeaveMargin = 2 * time.Second
