package policy_test

import (
	"encoding/json"
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
	if want := `[{"op":"add","path":"/metadata/annotations","value":{"deployment.reloader.stakater.com/paused-at":"2026-11-23T12:00:00Z"}}]`; string(got) != want {
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
