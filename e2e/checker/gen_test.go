package checker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"testing"
)

// Version 9 is a recorded result: version 10 must leave its sequences exactly as they were.
// The digest is of seeds 1 to 18, taken before version 10 existed.
func TestGenerator9KeepsItsSequences(t *testing.T) {
	t.Parallel()
	sum := sha256.New()
	for seed := uint64(1); seed <= 18; seed++ {
		fmt.Fprint(sum, Generate(seed, 9, 40, true))
	}
	const want = "c02d19cc2bf317042a2d93c238e2320ad037dd0d962f575b419a12abbacbabfe"
	if got := hex.EncodeToString(sum.Sum(nil)); got != want {
		t.Errorf("version 9's sequences changed (digest %s, want %s)", got, want)
	}
}

// Version 10 adds only what its eleventh stream draws: each of its sequences, without those
// actions, the cluster whose rollouts complete and the broken Deployments, is version 9's. And
// it draws each of them often enough to matter.
func TestVersion10AddsItsEleventhStreamAndChangesNothingElse(t *testing.T) {
	t.Parallel()
	drawn := map[string]int{}
	for seed := range uint64(60) {
		seq := Generate(seed, 10, 40, true)
		if seq.Argo {
			drawn["argo"]++
		}
		if seq.Webhook {
			drawn["webhook"]++
		}
		if seq.Rollouts {
			drawn["rollouts"]++
			if seq.Rollback {
				drawn["rollouts with rollback"]++
			}
		}
		var kept []Action
		for _, a := range seq.Actions {
			if a.Broken {
				drawn["broken"]++
			}
			if a.Eleventh {
				if a.Op == "webhook-invalid" {
					a.Value = ""
				}
				drawn[a.Op+" "+a.Value]++
				continue
			}
			a.Broken = false
			kept = append(kept, a)
		}
		seq.Actions, seq.Gen, seq.Rollouts, seq.Webhook, seq.Argo = kept, 9, false, false, false
		if want := Generate(seed, 9, 40, true); !reflect.DeepEqual(seq, want) {
			t.Fatalf("seed %d: version 10 without its eleventh stream is not version 9's sequence:\n%s\nwant\n%s", seed, seq, want)
		}
	}
	for what, least := range map[string]int{
		"rollouts": 8, "rollouts with rollback": 4, "broken": 8,
		"forge-run " + forgeRunUnsigned: 5, "forge-run " + ForgeRunOther: 5,
		"webhook": 3, "webhook-invalid ": 5, "argo": 2, "create-workload ": 4,
	} {
		if drawn[what] < least {
			t.Errorf("60 seeds of version 10 draw %d of %q, want at least %d (drawn: %v)", drawn[what], what, least, drawn)
		}
	}
}

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
			fmt.Fprint(sum, Generate(seed, gen, 40, true))
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
		seq := Generate(seed, 9, 40, true)
		var kept []Action
		for _, a := range seq.Actions {
			if !a.Tenth {
				kept = append(kept, a)
				continue
			}
			switch {
			case a.Op == "forge":
				drawn["forge "+a.Value]++
			case a.Target == foldedWorkloadName || a.Target == FoldedName:
				drawn[a.Op+" "+a.Target]++
			default:
				drawn[a.Op]++
			}
		}
		seq.Actions, seq.Gen, seq.Fold = kept, 8, false
		if want := Generate(seed, 8, 40, true); !reflect.DeepEqual(seq, want) {
			t.Fatalf("seed %d: version 9 without its tenth stream is not version 8's sequence:\n%s\nwant\n%s", seed, seq, want)
		}
	}
	for what, least := range map[string]int{
		"forge " + ForgeUnsigned: 10, "forge " + ForgeOtherKey: 10, "forge " + ForgeOutside: 5, "forge " + ForgeEntry: 20,
		"forge " + ForgeTombstone: 10, "forge " + ForgeStrip: 15, "forge " + ForgeHold: 15,
		"state-delete": 15, "down": 20, "owner-pause": 40,
		"create-workload " + foldedWorkloadName: 5, "update " + FoldedName: 10,
	} {
		if drawn[what] < least {
			t.Errorf("60 seeds of version 9 draw %d of %q, want at least %d (drawn: %v)", drawn[what], what, least, drawn)
		}
	}
}
