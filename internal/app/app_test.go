package app

import "testing"

// The start-up hook runs once every controller of the fleet has started up, and again when they
// all start up again (after a new election), never for one controller alone.
func TestAfterEveryCallsOnceEveryControllerHasCalled(t *testing.T) {
	calls := 0
	started := afterEvery(3, func() { calls++ })
	for i, want := range []int{0, 0, 1, 1, 1, 2} {
		started()
		if calls != want {
			t.Fatalf("after %d calls of 3 controllers: hook ran %d times, want %d", i+1, calls, want)
		}
	}
}
