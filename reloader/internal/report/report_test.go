package report

import (
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// A Warning is said once per workload, reason and message; a new message, or the same one after
// Clear or Forget, is said again.
func TestAWarningIsSaidOnceUntilItChangesOrIsCleared(t *testing.T) {
	events := record.NewFakeRecorder(10)
	r := New(events, slog.New(slog.DiscardHandler))
	obj := &corev1.Pod{}
	for i, step := range []struct {
		do   func() bool
		said bool
	}{
		{func() bool { return r.Warn(obj, "u1", "Held", "a") }, true},
		{func() bool { return r.Warn(obj, "u1", "Held", "a") }, false},
		{func() bool { return r.Warn(obj, "u2", "Held", "a") }, true},
		{func() bool { return r.Warn(obj, "u1", "Held", "b") }, true},
		{func() bool { r.Clear("u1", "Held"); return r.Warn(obj, "u1", "Held", "b") }, true},
		{func() bool { r.Forget("u2"); return r.Warn(obj, "u2", "Held", "a") }, true},
	} {
		if got := step.do(); got != step.said {
			t.Fatalf("step %d: said %v, want %v", i, got, step.said)
		}
	}
	if n := len(events.Events); n != 5 {
		t.Errorf("%d Events recorded, want 5", n)
	}
}
