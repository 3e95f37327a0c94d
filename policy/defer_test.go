package policy_test

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/reloader/reloader/policy"
)

func TestGateDecide(t *testing.T) {
	a := policy.DefaultAnnotations()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) // a Monday
	rfc := func(t time.Time) string { return t.Format(time.RFC3339Nano) }
	pausedAt := a.PausedAt
	for _, tc := range []struct {
		name   string
		meta   map[string]string
		def    policy.GateDefaults
		want   policy.Action
		until  time.Time
		reason string
	}{
		{"no gate", nil, policy.GateDefaults{}, policy.ReloadNow, time.Time{}, ""},
		{"inside the window", map[string]string{policy.WindowAnnotation: "Mon 11:00-13:00"}, policy.GateDefaults{}, policy.ReloadNow, time.Time{}, ""},
		{"outside the window", map[string]string{policy.WindowAnnotation: "Mon 13:00-14:00"}, policy.GateDefaults{},
			policy.Hold, now.Add(time.Hour), policy.ReasonWindow},
		{"window from the flag", nil, policy.GateDefaults{Window: "Tue 00:00-01:00"},
			policy.Hold, now.Add(12 * time.Hour), policy.ReasonWindow},
		{"the annotation overrides the flag", map[string]string{policy.WindowAnnotation: "00:00-24:00"}, policy.GateDefaults{Window: "Tue 00:00-01:00"},
			policy.ReloadNow, time.Time{}, ""},
		{"invalid window: held until fixed", map[string]string{policy.WindowAnnotation: "Moonday 01:00-02:00"}, policy.GateDefaults{},
			policy.Hold, time.Time{}, policy.ReasonInvalid},
		{"first reload under a minimum interval", map[string]string{policy.MinIntervalAnnotation: "10s"}, policy.GateDefaults{},
			policy.ReloadNow, time.Time{}, ""},
		{"too soon after the last reload", map[string]string{policy.MinIntervalAnnotation: "10s", policy.LastReloadAnnotation: rfc(now.Add(-4 * time.Second))},
			policy.GateDefaults{}, policy.Hold, now.Add(6 * time.Second), policy.ReasonMinInterval},
		{"interval from the flag", map[string]string{policy.LastReloadAnnotation: rfc(now.Add(-4 * time.Second))},
			policy.GateDefaults{MinInterval: 10 * time.Second}, policy.Hold, now.Add(6 * time.Second), policy.ReasonMinInterval},
		{"interval over", map[string]string{policy.MinIntervalAnnotation: "10s", policy.LastReloadAnnotation: rfc(now.Add(-10 * time.Second))},
			policy.GateDefaults{}, policy.ReloadNow, time.Time{}, ""},
		{"interval over, then the window", map[string]string{policy.MinIntervalAnnotation: "2h", policy.LastReloadAnnotation: rfc(now.Add(-1 * time.Hour)),
			policy.WindowAnnotation: "Mon 12:00-12:30"}, policy.GateDefaults{}, policy.Hold, now.Add(7 * 24 * time.Hour), policy.ReasonWindow},
		{"invalid interval", map[string]string{policy.MinIntervalAnnotation: "ten seconds"}, policy.GateDefaults{},
			policy.Hold, time.Time{}, policy.ReasonInvalid},
		{"pause starts", map[string]string{a.PausePeriod: "30s"}, policy.GateDefaults{},
			policy.StartPause, now.Add(30 * time.Second), policy.ReasonPause},
		{"pause running", map[string]string{a.PausePeriod: "30s", pausedAt: now.Add(-10 * time.Second).Format(time.RFC3339)}, policy.GateDefaults{},
			policy.Hold, now.Add(20 * time.Second), policy.ReasonPause},
		{"pause over", map[string]string{a.PausePeriod: "30s", pausedAt: now.Add(-30 * time.Second).Format(time.RFC3339)}, policy.GateDefaults{},
			policy.ReloadNow, time.Time{}, ""},
		{"pause over, window closed", map[string]string{a.PausePeriod: "30s", pausedAt: now.Add(-time.Minute).Format(time.RFC3339),
			policy.WindowAnnotation: "13:00-14:00"}, policy.GateDefaults{}, policy.Hold, now.Add(time.Hour), policy.ReasonWindow},
		{"paused-at that does not parse restarts the pause", map[string]string{a.PausePeriod: "30s", pausedAt: "yesterday"}, policy.GateDefaults{},
			policy.StartPause, now.Add(30 * time.Second), policy.ReasonPause},
	} {
		v := a.GateOf(tc.meta, nil, tc.def).Decide(now)
		if v.Action != tc.want || !v.Until.Equal(tc.until) || v.Reason != tc.reason {
			t.Errorf("%s: got %+v, want action %d until %s reason %q", tc.name, v, tc.want, tc.until, tc.reason)
		}
	}
}

func TestGateOps(t *testing.T) {
	a := policy.DefaultAnnotations()
	now := time.Date(2026, 11, 23, 12, 0, 0, 5, time.UTC)
	for _, tc := range []struct {
		name string
		meta map[string]string
		def  policy.GateDefaults
		want string
	}{
		{"nothing to record", map[string]string{"x": "y"}, policy.GateDefaults{}, `null`},
		{"last reload, no annotations yet", nil, policy.GateDefaults{MinInterval: time.Second},
			`[{"op":"add","path":"/metadata/annotations","value":{"reloader/last-reload":"2026-11-23T12:00:00.000000005Z"}}]`},
		{"last reload", map[string]string{policy.MinIntervalAnnotation: "1s"}, policy.GateDefaults{},
			`[{"op":"add","path":"/metadata/annotations/reloader~1last-reload","value":"2026-11-23T12:00:00.000000005Z"}]`},
		{"end of a pause", map[string]string{a.PausedAt: "2026-11-23T11:00:00Z"}, policy.GateDefaults{},
			`[{"op":"remove","path":"/metadata/annotations/deployment.reloader.stakater.com~1paused-at"}]`},
	} {
		ops := a.GateOps(tc.meta, a.GateOf(tc.meta, nil, tc.def), now)
		got, _ := json.Marshal(ops)
		if string(got) != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
	got, _ := json.Marshal(a.StartPauseOps(nil, now))
	if want := `[{"op":"add","path":"/metadata/annotations","value":{"deployment.reloader.stakater.com/paused-at":"2026-11-23T12:00:00.000000005Z"}}]`; string(got) != want {
		t.Errorf("start pause: got %s, want %s", got, want)
	}
}

func TestGateReadsTheScheduleFromThePodTemplateToo(t *testing.T) {
	a := policy.DefaultAnnotations()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tmpl := map[string]string{policy.WindowAnnotation: "13:00-14:00", policy.MinIntervalAnnotation: "1h"}
	if v := a.GateOf(nil, tmpl, policy.GateDefaults{}).Decide(now); v.Reason != policy.ReasonWindow {
		t.Errorf("template window ignored: %+v", v)
	}
	meta := map[string]string{policy.WindowAnnotation: "00:00-24:00"}
	if g := a.GateOf(meta, tmpl, policy.GateDefaults{}); g.Decide(now).Action != policy.ReloadNow || g.MinInterval != time.Hour {
		t.Errorf("metadata must win over the template, and the rest still apply: %+v", g)
	}
	// What the reloader writes is read from the metadata only.
	tmpl[policy.LastReloadAnnotation] = now.Format(time.RFC3339Nano)
	if g := a.GateOf(nil, tmpl, policy.GateDefaults{}); !g.LastReload.IsZero() {
		t.Errorf("last-reload read from the template: %+v", g)
	}
}

// Every schedule annotation value is either understood or held with a problem that names it: an
// empty or blank value is malformed, never "none", wherever it is. 0 is how a duration says none.
func TestGateScheduleValues(t *testing.T) {
	a := policy.DefaultAnnotations()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) // a Monday
	last := map[string]string{policy.LastReloadAnnotation: now.Add(-time.Second).Format(time.RFC3339Nano)}
	flagWindow := policy.GateDefaults{Window: "Tue 00:00-01:00"}
	flagInterval := policy.GateDefaults{MinInterval: time.Minute}
	win, iv, pause := policy.WindowAnnotation, policy.MinIntervalAnnotation, a.PausePeriod
	m := func(kv ...string) map[string]string {
		out := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		meta, tmpl map[string]string
		def        policy.GateDefaults
		problem    string // "" for none; else a part of the only problem
		reason     string // of the verdict, "" for ReloadNow
	}{
		{"no annotation: the flag's window", nil, nil, flagWindow, "", policy.ReasonWindow},
		{"empty window does not lift the flag's", m(win, ""), nil, flagWindow, "annotation reloader/window is empty", policy.ReasonInvalid},
		{"empty window without a flag", m(win, ""), nil, policy.GateDefaults{}, "annotation reloader/window is empty", policy.ReasonInvalid},
		{"blank window", m(win, " \t "), nil, flagWindow, "annotation reloader/window is empty", policy.ReasonInvalid},
		{"empty window on the template", nil, m(win, ""), flagWindow, "annotation reloader/window on the pod template is empty", policy.ReasonInvalid},
		{"empty window on the metadata hides the template's", m(win, ""), m(win, "00:00-24:00"), flagWindow, "annotation reloader/window is empty", policy.ReasonInvalid},
		{"the metadata's window hides an empty one on the template", m(win, "00:00-24:00"), m(win, ""), flagWindow, "", ""},
		{"window without times", m(win, "Mon"), nil, policy.GateDefaults{}, "want [days] HH:MM-HH:MM [zone]", policy.ReasonInvalid},
		{"window with an empty part", m(win, "00:00-24:00;;"), nil, policy.GateDefaults{}, `window 2 "": empty`, policy.ReasonInvalid},
		{"window with a trailing separator", m(win, "00:00-24:00;"), nil, flagWindow, "", ""},
		{"malformed window on the template", nil, m(win, "Mon"), policy.GateDefaults{}, "annotation reloader/window on the pod template: window 1", policy.ReasonInvalid},
		{"window padded with blanks", m(win, " 00:00-24:00 "), nil, flagWindow, "", ""},
		{"malformed flag window", nil, nil, policy.GateDefaults{Window: "Mon"}, "flag --reload-window: window 1", policy.ReasonInvalid},

		{"no annotation: the flag's interval", last, nil, flagInterval, "", policy.ReasonMinInterval},
		{"empty interval does not lift the flag's", withKV(last, iv, ""), nil, flagInterval, "annotation reloader/min-interval is empty", policy.ReasonInvalid},
		{"blank interval", withKV(last, iv, "  "), nil, flagInterval, "annotation reloader/min-interval is empty", policy.ReasonInvalid},
		{"empty interval on the template", last, m(iv, ""), flagInterval, "annotation reloader/min-interval on the pod template is empty", policy.ReasonInvalid},
		{"negative interval", withKV(last, iv, "-5s"), nil, flagInterval, `annotation reloader/min-interval="-5s" is negative`, policy.ReasonInvalid},
		{"interval without a unit", withKV(last, iv, "5"), nil, flagInterval, `annotation reloader/min-interval="5" is not a duration`, policy.ReasonInvalid},
		{"interval 0 means none, over the flag's", withKV(last, iv, "0"), nil, flagInterval, "", ""},
		{"interval padded with blanks", withKV(last, iv, " 1h "), nil, policy.GateDefaults{}, "", policy.ReasonMinInterval},

		{"empty pause period", m(pause, ""), nil, policy.GateDefaults{}, "annotation deployment.reloader.stakater.com/pause-period is empty", policy.ReasonInvalid},
		{"blank pause period", m(pause, " "), nil, policy.GateDefaults{}, "annotation deployment.reloader.stakater.com/pause-period is empty", policy.ReasonInvalid},
		{"empty pause period on the template", nil, m(pause, ""), policy.GateDefaults{}, "pause-period on the pod template is empty", policy.ReasonInvalid},
		{"pause period that is no duration", m(pause, "abc"), nil, policy.GateDefaults{}, `pause-period="abc" is not a duration`, policy.ReasonInvalid},
		{"negative pause period", m(pause, "-1m"), nil, policy.GateDefaults{}, `pause-period="-1m" is negative`, policy.ReasonInvalid},
		{"pause period 0 means none", m(pause, "0s"), nil, policy.GateDefaults{}, "", ""},
		{"pause period on the template", nil, m(pause, "30s"), policy.GateDefaults{}, "", policy.ReasonPause},
	} {
		g := a.GateOf(tc.meta, tc.tmpl, tc.def)
		switch {
		case tc.problem == "" && len(g.Problems) > 0:
			t.Errorf("%s: unexpected problems %q", tc.name, g.Problems)
		case tc.problem != "" && (len(g.Problems) != 1 || !strings.Contains(g.Problems[0], tc.problem)):
			t.Errorf("%s: problems %q, want one containing %q", tc.name, g.Problems, tc.problem)
		}
		if v := g.Decide(now); v.Reason != tc.reason {
			t.Errorf("%s: verdict %+v, want reason %q", tc.name, v, tc.reason)
		}
	}
}

func withKV(base map[string]string, k, v string) map[string]string {
	out := maps.Clone(base)
	out[k] = v
	return out
}

// A pause recorded by the reloader lasts its whole period after the moment it began, read back
// from the annotation it wrote: kept to the second, a 1 s pause begun at .974 ended 26 ms later.
func TestAPauseReadBackFromItsAnnotationLastsItsWholePeriod(t *testing.T) {
	a := policy.DefaultAnnotations()
	start := time.Date(2026, 11, 25, 23, 29, 20, 974_000_000, time.UTC)
	meta := map[string]string{a.PausePeriod: "1s"}
	for _, op := range a.StartPauseOps(meta, start) {
		meta[a.PausedAt] = op.Value.(string)
	}
	g := a.GateOf(meta, nil, policy.GateDefaults{})
	if v := g.Decide(start.Add(time.Second - time.Millisecond)); v.Action != policy.Hold {
		t.Errorf("1 ms before the end of a 1 s pause begun at %s: %+v, want it held", start.Format(time.StampMilli), v)
	}
	if !g.PauseExpired(start.Add(time.Second)) {
		t.Errorf("the pause has not ended %s after it began", time.Second)
	}
}

// A kind that pauses its rollouts (a Deployment) runs stakater's pause: the first reload pauses
// it and is patched in at once, later ones join it, and the resume at the end is the rollout,
// which the window and the interval gate. A workload paused by someone else, or a pause an
// earlier version started without pausing the workload, keep their own meaning.
func TestAPausableWorkloadIsReloadedIntoItsPauseAndRollsOutAtItsEnd(t *testing.T) {
	a := policy.DefaultAnnotations()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) // a Monday
	since := func(d time.Duration) string { return now.Add(-d).Format(time.RFC3339Nano) }
	for _, tc := range []struct {
		name   string
		meta   map[string]string
		paused bool
		want   policy.Action
		until  time.Time
		reason string
	}{
		{"the first reload pauses it", map[string]string{a.PausePeriod: "30s"}, false,
			policy.PauseAndReload, now.Add(30 * time.Second), policy.ReasonPause},
		{"a reload within the pause joins it", map[string]string{a.PausePeriod: "30s", a.PausedAt: since(10 * time.Second)}, true,
			policy.ReloadPaused, now.Add(20 * time.Second), policy.ReasonPause},
		{"a closed window does not hold a reload that restarts nothing", map[string]string{a.PausePeriod: "30s", policy.WindowAnnotation: "13:00-14:00"}, false,
			policy.PauseAndReload, now.Add(30 * time.Second), policy.ReasonPause},
		{"paused by someone else: reloaded into it, no pause of ours", map[string]string{a.PausePeriod: "30s"}, true,
			policy.ReloadNow, time.Time{}, ""},
		{"the pause over: the reload and the resume are one rollout", map[string]string{a.PausePeriod: "30s", a.PausedAt: since(30 * time.Second)}, true,
			policy.ReloadNow, time.Time{}, ""},
		{"the pause over, the window closed: the rollout waits for it", map[string]string{a.PausePeriod: "30s", a.PausedAt: since(time.Minute),
			policy.WindowAnnotation: "13:00-14:00"}, true, policy.Hold, now.Add(time.Hour), policy.ReasonWindow},
		{"a pause an earlier version started without pausing it holds", map[string]string{a.PausePeriod: "30s", a.PausedAt: since(10 * time.Second)}, false,
			policy.Hold, now.Add(20 * time.Second), policy.ReasonPause},
		{"an invalid period holds", map[string]string{a.PausePeriod: "soon"}, false,
			policy.Hold, time.Time{}, policy.ReasonInvalid},
		{"no period: as any reload", map[string]string{policy.WindowAnnotation: "13:00-14:00"}, false,
			policy.Hold, now.Add(time.Hour), policy.ReasonWindow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := a.GateOf(tc.meta, nil, policy.GateDefaults{})
			g.Pausable, g.Paused = true, tc.paused
			v := g.Decide(now)
			if v.Action != tc.want || !v.Until.Equal(tc.until) || v.Reason != tc.reason {
				t.Errorf("got %+v, want action %d until %s reason %q", v, tc.want, tc.until, tc.reason)
			}
		})
	}
}

func TestPauseOpsPauseTheRolloutsAndRecordTheStart(t *testing.T) {
	a := policy.DefaultAnnotations()
	now := time.Date(2026, 11, 23, 12, 0, 0, 5, time.UTC)
	got, _ := json.Marshal(a.PauseOps(map[string]string{"x": "y"}, now))
	want := `[{"op":"add","path":"/metadata/annotations/deployment.reloader.stakater.com~1paused-at","value":"2026-11-23T12:00:00.000000005Z"},{"op":"add","path":"/spec/paused","value":true}]`
	if string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// A reload let through into a pause of ours rolls out only at a resume: its rollout's clock
// starts then, not at its patch.
func TestAVerdictHoldsTheRolloutOnlyOfAReloadPatchedIntoAPause(t *testing.T) {
	for _, tc := range []struct {
		action policy.Action
		want   bool
	}{
		{policy.ReloadNow, false},
		{policy.Hold, false},
		{policy.StartPause, false},
		{policy.PauseAndReload, true},
		{policy.ReloadPaused, true},
	} {
		if got := (policy.Verdict{Action: tc.action}).HoldsRollout(); got != tc.want {
			t.Errorf("action %d: HoldsRollout %t, want %t", tc.action, got, tc.want)
		}
	}
}

// The resume of a pause that is over restarts pods: the window, the minimum interval and a
// schedule that does not parse gate it as any restart, and the pause period has no say, whether
// the annotation says the pause is over (inside the selection) or the state's remembered end
// does (outside it, where the annotation may say it still runs).
func TestTheResumeOfAPauseThatIsOverIsGatedAsARestart(t *testing.T) {
	a := policy.DefaultAnnotations()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) // a Monday
	since := func(d time.Duration) string { return now.Add(-d).Format(time.RFC3339Nano) }
	over := map[string]string{a.PausePeriod: "30s", a.PausedAt: since(time.Minute)}
	for _, tc := range []struct {
		name   string
		meta   map[string]string
		def    policy.GateDefaults
		want   policy.Action
		until  time.Time
		reason string
	}{
		{"no gate", over, policy.GateDefaults{}, policy.ReloadNow, time.Time{}, ""},
		{"the annotation's period still running: the caller knows better", map[string]string{a.PausePeriod: "1h", a.PausedAt: since(time.Minute)},
			policy.GateDefaults{}, policy.ReloadNow, time.Time{}, ""},
		{"a paused-at that does not parse", map[string]string{a.PausePeriod: "30s", a.PausedAt: "yesterday"},
			policy.GateDefaults{}, policy.ReloadNow, time.Time{}, ""},
		{"inside the window", withKV(over, policy.WindowAnnotation, "Mon 11:00-13:00"), policy.GateDefaults{}, policy.ReloadNow, time.Time{}, ""},
		{"outside the window", withKV(over, policy.WindowAnnotation, "13:00-14:00"), policy.GateDefaults{},
			policy.Hold, now.Add(time.Hour), policy.ReasonWindow},
		{"outside the flag's window", over, policy.GateDefaults{Window: "Tue 00:00-01:00"},
			policy.Hold, now.Add(12 * time.Hour), policy.ReasonWindow},
		{"too soon after the last reload", withKV(withKV(over, policy.MinIntervalAnnotation, "10s"), policy.LastReloadAnnotation, since(4*time.Second)),
			policy.GateDefaults{}, policy.Hold, now.Add(6 * time.Second), policy.ReasonMinInterval},
		{"interval over, then the window", withKV(withKV(withKV(over, policy.MinIntervalAnnotation, "2h"), policy.LastReloadAnnotation, since(time.Hour)),
			policy.WindowAnnotation, "Mon 12:00-12:30"), policy.GateDefaults{}, policy.Hold, now.Add(7 * 24 * time.Hour), policy.ReasonWindow},
		{"interval over", withKV(withKV(over, policy.MinIntervalAnnotation, "10s"), policy.LastReloadAnnotation, since(10*time.Second)),
			policy.GateDefaults{}, policy.ReloadNow, time.Time{}, ""},
		{"a window that does not parse", withKV(over, policy.WindowAnnotation, "Moonday 01:00-02:00"), policy.GateDefaults{},
			policy.Hold, time.Time{}, policy.ReasonInvalid},
		{"an interval that does not parse", withKV(over, policy.MinIntervalAnnotation, "ten seconds"), policy.GateDefaults{},
			policy.Hold, time.Time{}, policy.ReasonInvalid},
		{"a pause period that does not parse", map[string]string{a.PausePeriod: "soon", a.PausedAt: since(time.Minute)}, policy.GateDefaults{},
			policy.Hold, time.Time{}, policy.ReasonInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := a.GateOf(tc.meta, nil, tc.def)
			g.Pausable, g.Paused = true, true // a Deployment still paused by us
			v := g.DecideResume(now)
			if v.Action != tc.want || !v.Until.Equal(tc.until) || v.Reason != tc.reason {
				t.Errorf("got %+v, want action %d until %s reason %q", v, tc.want, tc.until, tc.reason)
			}
		})
	}
}
