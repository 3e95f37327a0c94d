package gctune

import "testing"

func TestPercentGrowsWithTheLiveHeapBetweenItsBounds(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, SmallPercent},
		{14 << 20, SmallPercent}, // 5,000 configs
		{Small, SmallPercent},
		{64 << 20, (SmallPercent + LargePercent) / 2},
		{Large - 1, LargePercent - 1},
		{Large, LargePercent},
		{1 << 30, LargePercent},
	} {
		if got := Percent(c.live); got != c.want {
			t.Errorf("Percent(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}
