package workload

import "testing"

// TestShortAbbreviatesTheSum: logs and Events abbreviate a keyed value to
// its HMAC's first digits.
func TestShortAbbreviatesTheSum(t *testing.T) {
	for v, want := range map[string]string{
		"3f7a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a":               "3f7a2b1c",
		"hmac-2b39b88d-d6977694a4bafa99d117193180cd6c0ddaa384ae": "d6977694",
		"": "",
	} {
		if got := Short(v); got != want {
			t.Errorf("Short(%q) = %q, want %q", v, got, want)
		}
	}
}
