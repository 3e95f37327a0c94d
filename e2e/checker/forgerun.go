package checker

import (
	"time"
)

// Generator version 10: a forged CronJob run. The reloader names the Job a CronJob's reload is
// to run in the CronJob's reloader/pending-job annotation, "<job> <mac>", signed under the hash
// key for that CronJob's UID (reloader/cronjobrun.go). Whoever may patch a CronJob may write
// that annotation: one without a MAC, or signed under the real key for another CronJob, must
// start no Job (the forged Job never exists: `forged:`; and a CronJob runs one Job per reload
// of its template: `runs:`).

// forgeRunEvery: how often, after a main action, the eleventh stream forges a run.
const forgeRunEvery = 8

// Forged runs.
const (
	forgeRunUnsigned = "run-unsigned" // a Job name with no MAC
	ForgeRunOther    = "run-other"    // signed under the reloader's key, for another CronJob's UID
)

// forgeRun draws a forged run of a live CronJob. Nil when none lives.
func (g *laterDraws) forgeRun() []Action {
	var live []string
	for _, w := range workloadNames {
		if g.workloads[w] && g.kinds[w] == KindCronJob {
			live = append(live, w)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return []Action{{Op: "forge-run", Target: pick(g.eleventh, live), Value: pick(g.eleventh, []string{forgeRunUnsigned, ForgeRunOther}),
		Pause: time.Duration(g.eleventh.IntN(400)) * time.Millisecond}}
}
