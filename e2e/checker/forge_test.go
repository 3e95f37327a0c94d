package checker

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/policy"
)

// A tombstone of cm-1 forged while no reloader runs, dated before w-1's creation, then cm-1's
// deletion: the next leader judges the deletion by the forgery, and w-1, without a marker of
// cm-1, was created after it by that date, so it is not restarted (SECURITY.md allows a
// tombstone to keep it from a change; seed 1796182876957345446@10). Not excused: the deletion
// without the forgery (the positive control), a workload created before the forged date, one
// carrying a marker of cm-1, and a leader that ran through the forgery and the deletion.
func TestATombstoneForgedBeforeADeletionMayHideItFromAWorkloadCreatedSinceItsDate(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	marked := PodTemplate(KindCronJob, "w-1", nil)
	marked.Spec.Containers[0].Env = append(marked.Spec.Containers[0].Env,
		corev1.EnvVar{Name: policy.EnvVarName(configRef("cm-1")), Value: "0123abcd"})
	for _, tc := range []struct {
		name                       string
		forged, marked, runThrough bool
		createdAt, since           int // w-1's creation, the forged tombstone's date
		lost                       bool
	}{
		{name: "forged", forged: true, createdAt: 3, since: 0},
		{name: "not forged", createdAt: 3, since: 0, lost: true},
		{name: "created before the forged date", forged: true, createdAt: 3, since: 4, lost: true},
		{name: "marked", forged: true, marked: true, createdAt: 3, since: 0, lost: true},
		{name: "a leader ran through", forged: true, runThrough: true, createdAt: 3, since: 0, lost: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRecorder(Sequence{OnDelete: true})
			r.configs["cm-1"] = []configEvent{
				{rv: 2, at: at(1), exists: true, data: Content{"a": "0"}},
				{rv: 20, at: at(20), exists: false},
			}
			w := &WorkloadLife{Kind: KindCronJob, name: "w-1", createdRV: 3, createdAt: at(tc.createdAt),
				refs: []Ref{{Config: "cm-1", Optional: true}}, modes: []modeEvent{{mode: ModeAuto}}, marks0: map[string]string{}}
			if tc.marked {
				w.tmpl = marked
			}
			r.workloads[types.UID("w-1")] = w
			if tc.forged {
				r.forgeries = []Forgery{{Kind: ForgeTombstone, Config: "cm-1", At: at(15), RV: 15, Since: at(tc.since)}}
			}
			r.starts = []time.Time{at(0), at(25)}
			if !tc.runThrough {
				r.blind = [][2]time.Time{{at(12), at(25)}}
			}
			if got := len(r.Oracle.Lost()) > 0; got != tc.lost {
				t.Errorf("lost %v, want some %t", r.Oracle.Lost(), tc.lost)
			}
		})
	}
}
