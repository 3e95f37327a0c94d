package cli

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
)

// The seed corpora are in testdata/fuzz/<FuzzName>/; `go test` runs each of them as a test.

// FuzzParsePeriod: any input gives an error or a non-negative period, and a bare integer is
// exactly that many milliseconds: never a product that wrapped around.
func FuzzParsePeriod(f *testing.F) {
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

// FuzzCoalesceWindowFlags: whatever --coalesce-period and --coalesce-max-wait parse to, the
// controller gets that period, and a max wait that is the flag's, or for 0 five times the period,
// or the longest duration when five times would overflow: never a wrapped product.
func FuzzCoalesceWindowFlags(f *testing.F) {
	f.Fuzz(func(t *testing.T, period, maxWait string) {
		p, err := parsePeriod(period)
		if err != nil {
			return
		}
		m, err := parsePeriod(maxWait)
		if err != nil {
			return
		}
		o := (&Flags{CoalescePeriod: Period(p), CoalesceMaxWait: Period(m)}).Options("ns", "ns", nil, nil)
		want := m
		switch {
		case m != 0:
		case p > math.MaxInt64/5:
			want = math.MaxInt64
		default:
			want = 5 * p
		}
		if o.CoalescePeriod != p || o.CoalesceMaxWait != want {
			t.Fatalf("--coalesce-period=%q --coalesce-max-wait=%q: period %v, max wait %v; want %v, %v",
				period, maxWait, o.CoalescePeriod, o.CoalesceMaxWait, p, want)
		}
	})
}

// parseFlags parses args as the binary does, Validate included.
func parseFlags(args ...string) (Flags, error) {
	var cli Flags
	parser, err := kong.New(&cli, ParserOptions("test")...)
	if err != nil {
		return cli, err
	}
	_, err = parser.Parse(args)
	return cli, err
}

// TestNumberFlagsOutOfRangeAreRefused: a number or duration flag out of its range is an error
// naming the problem, never a value that wrapped, a NaN, or a silently different value.
func TestNumberFlagsOutOfRangeAreRefused(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		wantErr string // "" when the flags must be accepted
	}{
		{nil, ""},
		{[]string{"--coalesce-period=9223372036854"}, ""}, // the longest in milliseconds
		{[]string{"--coalesce-period=9223372036855"}, "longer than a duration can be"},
		{[]string{"--coalesce-period=99999999999999999999"}, "neither milliseconds"},
		{[]string{"--coalesce-period=-1"}, "must not be negative"},
		{[]string{"--coalesce-max-wait=-1s"}, "must not be negative"},
		{[]string{"--coalesce-period=2562047h"}, ""},
		{[]string{"--coalesce-period=2562048h"}, "neither milliseconds"},
		{[]string{"--shutdown-grace=-1s"}, "--shutdown-grace"},
		{[]string{"--shutdown-grace=2562048h"}, "expected duration"},
		{[]string{"--port=65536"}, "--port"},
		{[]string{"--port=-1"}, "--port"},
		{[]string{"--port=18446744073709551616"}, "expected a valid 64 bit int"},
		{[]string{"--kube-api-qps=0"}, "--kube-api-qps"},
		{[]string{"--kube-api-qps=-1"}, "--kube-api-qps"},
		{[]string{"--kube-api-qps=NaN"}, "--kube-api-qps"},
		{[]string{"--kube-api-qps=1e39"}, "expected a float"}, // past float32
		{[]string{"--kube-api-qps=+Inf"}, ""},                 // no client-side limit
		{[]string{"--kube-api-burst=0"}, "--kube-api-burst"},
		{[]string{"--kube-api-burst=9223372036854775808"}, "expected a valid 64 bit int"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := parseFlags(tt.args...)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("accepted, want an error containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
