package main

import (
	"strconv"
	"testing"
	"time"
)

// FuzzParsePeriod: any input gives an error or a non-negative period, and a bare integer is
// exactly that many milliseconds: never a product that wrapped around.
func FuzzParsePeriod(f *testing.F) {
	for _, s := range []string{"0", "10000", "5s", "1m30s", "-1", "-5s", "9223372036854775807", "9223372036854776", "9223372036854", "1e3", "", "10ms", "2h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parsePeriod(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("parsePeriod(%q) = %v, negative", s, d)
		}
		if ms, errInt := strconv.ParseInt(s, 10, 64); errInt == nil && d/time.Millisecond != time.Duration(ms) {
			t.Fatalf("parsePeriod(%q) = %v, not %d ms", s, d, ms)
		}
	})
}
