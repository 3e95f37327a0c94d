package policy

import (
	"testing"
	"time"
)

func TestUnseenOnEntryTellsWhetherADependentMayRunAContentTheStateNeverSaw(t *testing.T) {
	left := time.Date(2026, 12, 2, 1, 35, 40, 500_000_000, time.UTC)
	sec := left.Add(-LeaveMargin).Truncate(time.Second)
	tests := []struct {
		name    string
		left    time.Time
		created []time.Time
		want    bool
	}{
		{"the leave not seen: unknown", time.Time{}, []time.Time{sec.Add(-time.Hour)}, true},
		{"no dependent: the recorded content stands", left, nil, false},
		{"every dependent older than the leave: it ran the recorded content", left, []time.Time{sec.Add(-time.Second)}, false},
		{"one created after the leave (seed 4928@9)", left, []time.Time{sec.Add(-time.Hour), sec.Add(10 * time.Second)}, true},
		{"one created in the second LeaveMargin before the leave was seen: it may be after", left, []time.Time{sec}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UnseenOnEntry(tt.left, tt.created); got != tt.want {
				t.Fatalf("UnseenOnEntry = %t, want %t", got, tt.want)
			}
		})
	}
}
