package policy

import (
	"fmt"
	"strings"
	"time"
)

// Workload annotations that decide when a due reload may happen. Each is read from the
// workload's own metadata; the last one is written by the reloader.
const (
	// WindowAnnotation holds maintenance windows (ParseWindows): a reload waits for one to open.
	WindowAnnotation = "reloader/window"
	// MinIntervalAnnotation is the least time between two reloads (a Go duration, 10s).
	MinIntervalAnnotation = "reloader/min-interval"
	// LastReloadAnnotation is when the reloader last reloaded the workload (RFC 3339, nanoseconds),
	// written only while a minimum interval applies: it is what makes the interval survive a
	// restart.
	LastReloadAnnotation = "reloader/last-reload"
)

// GateDefaults are the cluster-wide values of the gate (flags); an annotation overrides each.
type GateDefaults struct {
	Window      string        // "" for none; checked by the caller at start
	MinInterval time.Duration // 0 for none
}

// Gate is what a workload's annotations say about when it may next be reloaded.
type Gate struct {
	Window      Windows // nil: always open
	WindowText  string
	MinInterval time.Duration
	LastReload  time.Time // zero: never, as far as the workload says
	PausePeriod time.Duration
	PausedAt    time.Time // zero: no pause running
	// Pausable: the workload's kind pauses its rollouts (a Deployment's spec.paused), so a pause
	// period is stakater's: the reload is patched in at once and rolls out when the pause ends.
	// Paused is its spec.paused.
	Pausable, Paused bool
	// Problems are annotation values that do not parse; while there are any, reloads are held.
	Problems []string
}

// GateOf reads the gate of a workload from its annotations: the schedule from its metadata,
// falling back to its pod template's, as every reload annotation; the times the reloader wrote
// from its metadata only.
func (a Annotations) GateOf(meta, tmpl map[string]string, d GateDefaults) Gate {
	g := Gate{WindowText: d.Window, MinInterval: d.MinInterval}
	from := "flag --reload-window"
	if v, named, ok := g.scheduled(meta, tmpl, WindowAnnotation); ok {
		g.WindowText, from = v, "annotation "+named
	}
	if g.WindowText != "" {
		ws, err := ParseWindows(g.WindowText)
		if err != nil {
			g.Problems = append(g.Problems, fmt.Sprintf("%s: %v", from, err))
		}
		g.Window = ws
	}
	g.MinInterval = g.duration(meta, tmpl, MinIntervalAnnotation, g.MinInterval)
	if a.PausePeriod != "" {
		g.PausePeriod = g.duration(meta, tmpl, a.PausePeriod, 0)
	}
	// A time that does not parse is no time: the interval or pause starts over from now, which
	// never reloads sooner than asked.
	if v := meta[LastReloadAnnotation]; v != "" && g.MinInterval > 0 {
		g.LastReload, _ = time.Parse(time.RFC3339Nano, v)
	}
	if v := meta[a.PausedAt]; v != "" && a.PausedAt != "" {
		g.PausedAt, _ = time.Parse(time.RFC3339, v)
	}
	return g
}

// scheduled returns the value of a schedule annotation, trimmed, from the metadata if it has the
// key, else from the pod template, and the key as a problem names it. A present but empty (or
// blank) value is a problem, not an absence: "" must not silently lift the flag's window or
// interval, and on the metadata it hides the template's value as any metadata value does.
func (g *Gate) scheduled(meta, tmpl map[string]string, key string) (v, named string, ok bool) {
	named = key
	if v, ok = meta[key]; !ok {
		if v, ok = tmpl[key]; !ok {
			return "", "", false
		}
		named = key + " on the pod template"
	}
	if v = strings.TrimSpace(v); v == "" {
		g.Problems = append(g.Problems, fmt.Sprintf("annotation %s is empty; give it a value, or remove it to use the default", named))
		return "", named, false
	}
	return v, named, true
}

// duration reads a schedule annotation holding a Go duration; 0 means none, a negative one is a
// problem.
func (g *Gate) duration(meta, tmpl map[string]string, key string, def time.Duration) time.Duration {
	v, named, ok := g.scheduled(meta, tmpl, key)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		g.Problems = append(g.Problems, fmt.Sprintf("annotation %s=%q is not a duration such as 30s or 5m", named, v))
	case d < 0:
		g.Problems = append(g.Problems, fmt.Sprintf("annotation %s=%q is negative; 0 means none", named, v))
	default:
		return d
	}
	return def
}

// Action is what to do with a due reload.
type Action int

const (
	// ReloadNow: the gate is open.
	ReloadNow Action = iota
	// Hold: wait until Verdict.Until (zero: until the annotations change).
	Hold
	// StartPause: record the start of the pause period on the workload and hold until Until.
	StartPause
	// PauseAndReload: pause the workload's rollouts (spec.paused and the pause's start) in the
	// reload's own patch; the rollout waits for the resume at Until.
	PauseAndReload
	// ReloadPaused: patch the reload into a workload the pause period keeps paused; the rollout
	// waits for the resume at Until.
	ReloadPaused
)

// Reasons a reload is held, as metric label values.
const (
	ReasonWindow      = "window"
	ReasonMinInterval = "min-interval"
	ReasonPause       = "pause-period"
	ReasonInvalid     = "invalid-schedule"
	// ReasonInvalidConfig: the pods read a config whose current content does not validate, so
	// a restart would load it (reloader package, validate.go). Not a gate's verdict.
	ReasonInvalidConfig = "invalid-config"
)

// Verdict is the gate's answer for a due reload at one instant.
type Verdict struct {
	Action Action
	Until  time.Time
	Reason string
}

// HoldsRollout reports a reload the verdict lets through into a pause of ours: patched into a
// workload that stays paused, it rolls out only at a resume, ours or another actor's.
func (v Verdict) HoldsRollout() bool {
	return v.Action == PauseAndReload || v.Action == ReloadPaused
}

// Decide says whether a reload due now may happen. A schedule that does not parse holds the
// reload until it is fixed: a window is a promise not to restart outside it, and a typo must not
// break it. The pause period runs first (stakater's semantics: changes during it are batched
// into one rollout at its end), then the minimum interval since the last reload, then the next
// open window.
func (g Gate) Decide(now time.Time) Verdict {
	if len(g.Problems) > 0 {
		return Verdict{Action: Hold, Reason: ReasonInvalid}
	}
	if g.PausePeriod > 0 && g.Pausable {
		if v, ok := g.decidePausable(now); ok {
			return v
		}
	}
	if g.PausePeriod > 0 && !g.Pausable {
		if g.PausedAt.IsZero() {
			return Verdict{Action: StartPause, Until: now.Add(g.PausePeriod), Reason: ReasonPause}
		}
		if end := g.PausedAt.Add(g.PausePeriod); now.Before(end) {
			return Verdict{Action: Hold, Until: end, Reason: ReasonPause}
		}
	}
	return g.restartAt(now)
}

// DecideResume says whether the resume of a pause period that is over may go now. The resume
// restarts pods, so it is gated as any restart: a schedule that does not parse holds it until
// fixed, then the minimum interval since the last reload, then the next open window. The pause
// period has no say: whoever asks knows the pause is over (by the annotation inside the
// selection, by the end the state remembers outside it).
func (g Gate) DecideResume(now time.Time) Verdict {
	if len(g.Problems) > 0 {
		return Verdict{Action: Hold, Reason: ReasonInvalid}
	}
	return g.restartAt(now)
}

// restartAt holds a restart for the minimum interval since the last reload, then for the next
// open window; the schedule parses.
func (g Gate) restartAt(now time.Time) Verdict {
	at, reason := now, ""
	if g.MinInterval > 0 && !g.LastReload.IsZero() {
		if next := g.LastReload.Add(g.MinInterval); next.After(at) {
			at, reason = next, ReasonMinInterval
		}
	}
	if g.Window != nil {
		if open := g.Window.NextOpen(at); open.After(at) {
			at, reason = open, ReasonWindow
		}
	}
	if at.After(now) {
		return Verdict{Action: Hold, Until: at, Reason: reason}
	}
	return Verdict{Action: ReloadNow}
}

// decidePausable is the pause period of a kind that pauses its rollouts, as stakater Reloader
// runs it on a Deployment: the first reload pauses the workload and is patched in at once, later
// ones join it, and the rollout of them all happens when the pause ends (the resume, which the
// window and the minimum interval gate as any restart). ok is false when the pause has no say:
// it is over, or the workload was paused by someone else (the reload is patched in, and stays
// paused, as in stakater). A pause started by an earlier version, which held reloads without
// pausing the workload, keeps holding them.
func (g Gate) decidePausable(now time.Time) (Verdict, bool) {
	end := g.PausedAt.Add(g.PausePeriod)
	switch {
	case g.PausedAt.IsZero() && g.Paused:
		return Verdict{}, false
	case g.PausedAt.IsZero():
		return Verdict{Action: PauseAndReload, Until: now.Add(g.PausePeriod), Reason: ReasonPause}, true
	case !now.Before(end):
		return Verdict{}, false
	case g.Paused:
		return Verdict{Action: ReloadPaused, Until: end, Reason: ReasonPause}, true
	}
	return Verdict{Action: Hold, Until: end, Reason: ReasonPause}, true
}

// PauseExpired reports a pause period that has run out (or whose length is gone): the
// reloader ends it, with a reload if one is due, else alone.
func (g Gate) PauseExpired(now time.Time) bool {
	return !g.PausedAt.IsZero() && !now.Before(g.PausedAt.Add(g.PausePeriod))
}

// Explain says, for an Event, why a reload waits.
func (v Verdict) Explain(g Gate) string {
	switch v.Reason {
	case ReasonWindow:
		return fmt.Sprintf("outside the maintenance window %q", g.WindowText)
	case ReasonMinInterval:
		return fmt.Sprintf("the minimum interval between reloads is %s", g.MinInterval)
	case ReasonPause:
		return fmt.Sprintf("the pause period is %s", g.PausePeriod)
	}
	return "the reload schedule is invalid"
}

// GateOps are the metadata ops that go with a reload: the time of this reload while a minimum
// interval applies, and the end of a pause period. They follow the ops of Target.Ops, whose
// first op tests the resourceVersion they were computed from.
func (a Annotations) GateOps(meta map[string]string, g Gate, now time.Time) []JSONOp {
	var ops []JSONOp
	if g.MinInterval > 0 {
		ops = append(ops, setAnnotations([]string{"metadata"}, meta, map[string]string{
			LastReloadAnnotation: now.UTC().Format(time.RFC3339Nano)})...)
		if meta == nil {
			meta = map[string]string{} // the op above created the map
		}
	}
	return append(ops, a.EndPauseOps(meta)...)
}

// EndPauseOps remove the pause-start annotation, if the workload carries it.
func (a Annotations) EndPauseOps(meta map[string]string) []JSONOp {
	if _, ok := meta[a.PausedAt]; !ok || a.PausedAt == "" {
		return nil
	}
	return []JSONOp{{Op: "remove", Path: pointer("metadata", "annotations", a.PausedAt)}}
}

// PauseOps pause a workload's rollouts for a pause period: spec.paused and the pause's start.
func (a Annotations) PauseOps(meta map[string]string, now time.Time) []JSONOp {
	return append(a.StartPauseOps(meta, now), JSONOp{Op: "add", Path: "/spec/paused", Value: true})
}

// StartPauseOps record the start of a pause period, as stakater writes it (RFC 3339).
func (a Annotations) StartPauseOps(meta map[string]string, now time.Time) []JSONOp {
	// To the nanosecond, as last-reload is: a time kept to the second ended a 1 s pause as soon
	// as it began (the checker saw it). stakater writes seconds; RFC 3339 parses both.
	return setAnnotations([]string{"metadata"}, meta, map[string]string{a.PausedAt: now.UTC().Format(time.RFC3339Nano)})
}

// GateAnnotations are the workload annotations whose change may change when a reload happens.
func (a Annotations) GateAnnotations() []string {
	return []string{WindowAnnotation, MinIntervalAnnotation, a.PausePeriod}
}
