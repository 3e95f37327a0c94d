package main

import "testing"

// The container's limit reaches the runtime as a soft limit with headroom; an explicit
// GOMEMLIMIT, or no usable limit, leaves the runtime's own default (no limit).
func TestMemoryLimitIsNinetyPercentOfTheContainersUnlessGOMEMLIMITIsSet(t *testing.T) {
	for _, tt := range []struct {
		name      string
		env       map[string]string
		want      int64
		wantLimit bool
	}{
		{"128Mi from the downward API", map[string]string{memoryLimitEnv: "134217728"}, 120795948, true},
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
