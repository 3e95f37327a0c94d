package main

import "testing"

// The container's limit reaches the runtime as a soft limit that leaves room for the code a
// reload runs; an explicit GOMEMLIMIT, or no usable limit, leaves the runtime's own default (no
// limit).
func TestMemoryLimitLeavesRoomForTheCodeUnlessGOMEMLIMITIsSet(t *testing.T) {
	for _, tt := range []struct {
		name      string
		env       map[string]string
		want      int64
		wantLimit bool
	}{
		{"256Mi: 10% is more than the code's room", map[string]string{memoryLimitEnv: "268435456"}, 268435456 - 26843545, true},
		{"128Mi: 10% is just more", map[string]string{memoryLimitEnv: "134217728"}, 134217728 - 13421772, true},
		{"64Mi: the code's 12 MiB, not 6.4", map[string]string{memoryLimitEnv: "67108864"}, 52 << 20, true},
		{"32Mi", map[string]string{memoryLimitEnv: "33554432"}, 20 << 20, true},
		{"16Mi: never below half", map[string]string{memoryLimitEnv: "16777216"}, 8 << 20, true},
		{"GOMEMLIMIT wins", map[string]string{memoryLimitEnv: "134217728", "GOMEMLIMIT": "100MiB"}, 0, false},
		{"no limit given", map[string]string{}, 0, false},
		{"zero", map[string]string{memoryLimitEnv: "0"}, 0, false},
		{"not a number of bytes", map[string]string{memoryLimitEnv: "128Mi"}, 0, false},
		{"negative", map[string]string{memoryLimitEnv: "-1"}, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := memoryLimit(func(k string) string { return tt.env[k] })
			if got != tt.want || ok != tt.wantLimit {
				t.Fatalf("memoryLimit = %d, %t; want %d, %t", got, ok, tt.want, tt.wantLimit)
			}
		})
	}
}
