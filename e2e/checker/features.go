package checker

import (
	"fmt"
	"slices"
	"time"
)

// Generator version 3 (issue 24): the features beside the core engine, drawn from the fourth
// stream so that older versions keep their actions. Workloads of every kind the reloader
// restarts or runs, their annotations on the pod template as well as on metadata, gates
// (stakater's pause period, a minimum interval, maintenance windows, with empty and malformed
// values among them), the annotations strategy, and --reload-window.

// Workload kinds, as the executor makes them.
const (
	KindDeployment  = "Deployment"
	kindStatefulSet = "StatefulSet"
	kindDaemonSet   = "DaemonSet"
	KindCronJob     = "CronJob"
	KindJob         = "Job"
)

// gateDurations are the pause periods and minimum intervals drawn: short, so that a sequence
// waits for them in seconds.
var gateDurations = []string{"1s", "2s", "3s"}

// settings draws the reloader's flags of gen 3, and the configs that are validated.
func (g *featureDraws) settings() (strategy, window string, validated []string) {
	strategy = pick(g.fourth, []string{"env-vars", "env-vars", "annotations"})
	window = pick(g.fourth, []string{"", "", "", "", "", "", "open", "closed"})
	for _, c := range ConfigNames {
		if g.fourth.IntN(3) == 0 {
			validated = append(validated, c)
		}
	}
	return strategy, window, validated
}

// invalidJSON is a value of key a that a validated config refuses; validJSON one the final round
// writes (every value of values is a JSON number too).
const (
	InvalidJSON = "{"
	ValidJSON   = `"final"`
)

// invalidUpdate writes a content a validated config refuses: its key a does not parse.
func (g *featureDraws) invalidUpdate() Action {
	return Action{Op: "update", Target: pick(g.fourth, g.validated), Key: "a", Value: InvalidJSON,
		Pause: time.Duration(g.fourth.IntN(1500)) * time.Millisecond}
}

// features draws a new workload's kind, where its annotations sit, and its first gate.
func (g *featureDraws) features(a *Action) {
	a.Kind = pick(g.fourth, []string{KindDeployment, KindDeployment, kindStatefulSet, kindDaemonSet, KindCronJob, KindCronJob, KindJob, KindJob})
	a.OnTemplate = g.fourth.IntN(3) == 0
	if g.fourth.IntN(2) == 0 {
		a.Gate = g.gate()
	}
}

// gate draws a gate annotation: mostly valid, sometimes empty or malformed.
func (g *featureDraws) gate() GateSpec {
	kind := pick(g.fourth, []string{"pause", "pause", "min", "min", "window"})
	switch n := g.fourth.IntN(10); {
	case n <= 1:
		return GateSpec{Kind: kind, Value: ""}
	case n == 2:
		return GateSpec{Kind: kind, Value: map[string]string{"pause": "soon", "min": "-5s", "window": "Mon"}[kind]}
	case kind == "window":
		return GateSpec{Kind: kind, Value: pick(g.fourth, []string{"open", "open", "closed"})}
	default:
		return GateSpec{Kind: kind, Value: pick(g.fourth, gateDurations)}
	}
}

// gateAction sets a live workload's gate, or removes it.
func (g *featureDraws) gateAction() Action {
	w, ok := g.existing(g.workloads, workloadNames)
	if !ok {
		return g.createWorkload()
	}
	a := Action{Op: "gate", Target: w, Pause: time.Duration(g.fourth.IntN(400)) * time.Millisecond}
	if g.fourth.IntN(4) != 0 {
		a.Gate = g.gate()
	}
	return a
}

// hashKey deletes the key of Secret hashes, or replaces it with another, and half the time
// restarts a replica, which reads the key only at its start.
func (g *featureDraws) hashKey() []Action {
	out := []Action{{Op: "hashkey", Value: pick(g.fourth, []string{"delete", "replace"}), Pause: time.Duration(g.fourth.IntN(400)) * time.Millisecond}}
	if g.fourth.IntN(2) == 0 {
		out = append(out, Action{Op: pick(g.fourth, []string{"sigterm", "kill"}), Pause: time.Duration(g.fourth.IntN(400)) * time.Millisecond})
	}
	return out
}

// image is another actor's rollout: a new image for a workload's container (a Job's template
// cannot change, so it is refused and skipped there). During a followed reload's rollout, it
// supersedes that reload: what rolls out is theirs, and nothing may be rolled back.
func (g *featureDraws) image() Action {
	w, ok := g.existing(g.workloads, workloadNames)
	if !ok {
		return g.createWorkload()
	}
	g.fresh++
	return Action{Op: "image", Target: w, Value: fmt.Sprintf("fake-%d", g.fresh), Pause: time.Duration(g.fourth.IntN(1500)) * time.Millisecond}
}

// theirRollout changes a config, then, once the reload's rollout is under way and before it
// times out, changes the image of a dependent: another actor's rollout supersedes ours, and
// rolling it back would blame them for its failure.
func (g *featureDraws) theirRollout() []Action {
	names := slices.Clone(ConfigNames)
	g.fourth.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for _, c := range names {
		deps := g.dependents(c)
		if !g.configs[c] || g.ignored[c] || len(deps) == 0 {
			continue
		}
		g.fresh++
		settle := g.coalesce + time.Duration(700+g.fourth.IntN(800))*time.Millisecond
		return []Action{
			{Op: "update", Target: c, Key: "a", Value: fmt.Sprint(4 + g.fresh%5), Pause: settle},
			{Op: "image", Target: pick(g.fourth, deps), Value: fmt.Sprintf("fake-%d", g.fresh), Pause: RolloutTimeout},
		}
	}
	return nil
}

// RolloutTimeout is --rollout-timeout in sequences with rollback on.
const RolloutTimeout = 3 * time.Second

// Gate annotations, as the reloader reads them by default.
var gateAnnotations = map[string]string{
	"pause":  "deployment.reloader.stakater.com/pause-period",
	"min":    "reloader/min-interval",
	"window": "reloader/window",
}

// OpenWindow is open all day, every day.
const OpenWindow = "00:00-24:00"

// ClosedWindow is a one-minute window twelve hours from now, in UTC: closed for the whole of a
// sequence.
func ClosedWindow(now time.Time) string {
	t := now.UTC().Add(12 * time.Hour)
	return fmt.Sprintf("%02d:%02d-%02d:%02d", t.Hour(), t.Minute(), t.Add(time.Minute).Hour(), t.Add(time.Minute).Minute())
}

// annotationValue is what the executor writes for a gate.
func (g GateSpec) annotationValue(now time.Time) string {
	if g.Kind != "window" {
		return g.Value
	}
	switch g.Value {
	case "open":
		return OpenWindow
	case "closed":
		return ClosedWindow(now)
	}
	return g.Value
}

// holds reports whether the gate holds every reload for as long as it stays: a closed window,
// or a value that does not parse (an empty one included), which holds reloads until it is fixed.
// flagWindow is the sequence's --reload-window, which a workload without a window of its own
// follows.
func (g GateSpec) holds(flagWindow string) bool {
	switch {
	case g.Kind == "window":
		return g.Value != "open"
	case g.Kind == "":
		return flagWindow == "closed"
	case g.Value == "" || !isDuration(g.Value):
		return true
	}
	return flagWindow == "closed"
}

// minInterval is the minimum interval the gate sets between two reloads, or 0.
func (g GateSpec) minInterval() time.Duration { return g.period("min") }

// pausePeriod is a pause gate's period (0: another gate, or a value that is no period).
func (g GateSpec) pausePeriod() time.Duration { return g.period("pause") }

// period is the gate's duration if it is of kind, else 0 (also for a value that is none).
func (g GateSpec) period(kind string) time.Duration {
	d, err := time.ParseDuration(g.Value)
	if g.Kind != kind || err != nil || d < 0 {
		return 0
	}
	return d
}

func isDuration(s string) bool {
	d, err := time.ParseDuration(s)
	return err == nil && d >= 0
}
