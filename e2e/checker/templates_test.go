package checker

import (
	"slices"
	"testing"
)

// A strip re-renders a workload's template from its checker/refs annotation: each ref must read
// back as written, an optional key above all (it decides whether the pods wait for the config).
func TestRefsReadBackAsTheyWereWritten(t *testing.T) {
	t.Parallel()
	refs := []Ref{{Config: "cm-0", Whole: true}, {Config: "cm-1"}, {Config: "sec-0", Optional: true}}
	if got := RefsOf(map[string]string{"checker/refs": RefsNote(refs)}); !slices.Equal(got, refs) {
		t.Fatalf("refs %v read back as %v", refs, got)
	}
}
