package cli

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/alecthomas/kong"
)

// Period is a duration that also accepts a bare integer as milliseconds, as Collaborne's
// --coalesce-period=10000 does.
type Period time.Duration

// Decode parses a flag value for kong.
func (p *Period) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("period", &s); err != nil {
		return err
	}
	d, err := parsePeriod(s)
	if err != nil {
		return err
	}
	*p = Period(d)
	return nil
}

func parsePeriod(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if ms, errInt := strconv.ParseInt(s, 10, 64); errInt == nil {
		// Checked before multiplying: a product past int64 would wrap into a tiny or negative period.
		if ms > math.MaxInt64/int64(time.Millisecond) || ms < math.MinInt64/int64(time.Millisecond) {
			return 0, fmt.Errorf("%s milliseconds is longer than a duration can be (about 292 years)", s)
		}
		d, err = time.Duration(ms)*time.Millisecond, nil
	}
	if err != nil {
		return 0, fmt.Errorf("%q is neither milliseconds (10000) nor a duration (10s)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("must not be negative, got %s", s)
	}
	return d, nil
}
