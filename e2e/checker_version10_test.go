package e2e

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
		fmt.Fprint(sum, generate(seed, 9, 40, true))
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
		seq := generate(seed, 10, 40, true)
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
		var kept []action
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
		if want := generate(seed, 9, 40, true); !reflect.DeepEqual(seq, want) {
			t.Fatalf("seed %d: version 10 without its eleventh stream is not version 9's sequence:\n%s\nwant\n%s", seed, seq, want)
		}
	}
	for what, least := range map[string]int{
		"rollouts": 8, "rollouts with rollback": 4, "broken": 8,
		"forge-run " + forgeRunUnsigned: 5, "forge-run " + forgeRunOther: 5,
		"webhook": 3, "webhook-invalid ": 5, "argo": 2, "create-workload ": 4,
	} {
		if drawn[what] < least {
			t.Errorf("60 seeds of version 10 draw %d of %q, want at least %d (drawn: %v)", drawn[what], what, least, drawn)
		}
	}
}
