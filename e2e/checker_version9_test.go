package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"testing"
)

// Versions 7 and 8 are recorded results: version 9 must leave their sequences exactly as they
// were. The digests are of seeds 1 to 18 of each, taken before version 9 existed.
func TestGenerators7And8KeepTheirSequences(t *testing.T) {
	t.Parallel()
	for gen, want := range map[int]string{
		7: "2ad7400c765b3315b7e5b1d33d330986056c543bc4caaceda2726b0c67c177e6",
		8: "09a3d00259ae20c65add7e679c7268924be8357043d25fdbb3dbcad68debf112",
	} {
		sum := sha256.New()
		for seed := uint64(1); seed <= 18; seed++ {
			fmt.Fprint(sum, generate(seed, gen, 40, true))
		}
		if got := hex.EncodeToString(sum.Sum(nil)); got != want {
			t.Errorf("version %d's sequences changed (digest %s, want %s)", gen, got, want)
		}
	}
}

// Version 9 adds only what its tenth stream draws: each of its sequences, without those actions
// and the folded config, is version 8's. And it draws each of them often enough to matter.
func TestVersion9AddsItsTenthStreamAndChangesNothingElse(t *testing.T) {
	t.Parallel()
	drawn := map[string]int{}
	for seed := range uint64(60) {
		seq := generate(seed, 9, 40, true)
		var kept []action
		for _, a := range seq.Actions {
			if !a.Tenth {
				kept = append(kept, a)
				continue
			}
			switch {
			case a.Op == "forge":
				drawn["forge "+a.Value]++
			case a.Target == foldedWorkloadName || a.Target == foldedName:
				drawn[a.Op+" "+a.Target]++
			default:
				drawn[a.Op]++
			}
		}
		seq.Actions, seq.Gen, seq.Fold = kept, 8, false
		if want := generate(seed, 8, 40, true); !reflect.DeepEqual(seq, want) {
			t.Fatalf("seed %d: version 9 without its tenth stream is not version 8's sequence:\n%s\nwant\n%s", seed, seq, want)
		}
	}
	for what, least := range map[string]int{
		"forge " + forgeUnsigned: 10, "forge " + forgeOtherKey: 10, "forge " + forgeOutside: 5, "forge " + forgeEntry: 20,
		"forge " + forgeTombstone: 10, "forge " + forgeStrip: 15, "forge " + forgeHold: 15,
		"state-delete": 15, "down": 20, "owner-pause": 40,
		"create-workload " + foldedWorkloadName: 5, "update " + foldedName: 10,
	} {
		if drawn[what] < least {
			t.Errorf("60 seeds of version 9 draw %d of %q, want at least %d (drawn: %v)", drawn[what], what, least, drawn)
		}
	}
}
