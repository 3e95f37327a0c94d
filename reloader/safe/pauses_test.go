package safe

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/workload"
)

// Outside the selection, a pause is ended only when the state and the Deployment both name it:
// a forged paused-at, a forged or stale entry, or a pause someone else ended starts nothing and
// resumes nothing; the entry that no longer names a pause of ours is forgotten. Its resume
// restarts pods, so its gate holds it as in the selection: a closed window, a minimum interval,
// a schedule that does not parse, and content its pods read that does not validate; a resume
// under a minimum interval records its time.
func TestOnlyAPauseTheStateAndTheDeploymentBothNameIsEndedOutsideTheSelection(t *testing.T) {
	const start = "2026-11-26T11:59:00.5Z"
	started, _ := time.Parse(time.RFC3339Nano, start)
	ours := encodePause(started.Add(time.Minute), started, "u1")
	for _, c := range []struct {
		name            string
		entry           string // "" for none
		pausedAt        string
		paused          bool
		gate            map[string]string // more annotations
		advance         time.Duration
		invalid         bool // the pods read content that does not validate
		ends, kept      bool
		heldUntilItsEnd bool // or until its gate opens
	}{
		{name: "ours, at its end", entry: ours, pausedAt: start, paused: true, advance: time.Minute, ends: true},
		{name: "ours, before its end", entry: ours, pausedAt: start, paused: true, kept: true, heldUntilItsEnd: true},
		{name: "a paused-at with no entry", pausedAt: start, paused: true, advance: time.Hour},
		{name: "an entry of another object", entry: encodePause(started.Add(time.Minute), started, "u2"), pausedAt: start, paused: true, advance: time.Hour},
		{name: "an entry of another pause", entry: encodePause(started.Add(time.Minute), started.Add(-time.Hour), "u1"), pausedAt: start, paused: true, advance: time.Hour},
		{name: "an entry without the annotation", entry: ours, paused: true, advance: time.Hour},
		{name: "ours, resumed by someone else", entry: ours, pausedAt: start, advance: time.Hour},
		{name: "ours, at its end, outside its window", entry: ours, pausedAt: start, paused: true, advance: time.Minute,
			gate: map[string]string{policy.WindowAnnotation: "Sat 02:00-04:00 Europe/Berlin"}, kept: true, heldUntilItsEnd: true},
		{name: "ours, at its end, inside its window", entry: ours, pausedAt: start, paused: true, advance: time.Minute,
			gate: map[string]string{policy.WindowAnnotation: "00:00-24:00"}, ends: true},
		{name: "ours, at its end, within its minimum interval", entry: ours, pausedAt: start, paused: true, advance: time.Minute,
			gate: map[string]string{policy.MinIntervalAnnotation: "1h", policy.LastReloadAnnotation: start}, kept: true, heldUntilItsEnd: true},
		{name: "ours, at its end, past its minimum interval", entry: ours, pausedAt: start, paused: true, advance: time.Hour,
			gate: map[string]string{policy.MinIntervalAnnotation: "1m", policy.LastReloadAnnotation: start}, ends: true},
		{name: "ours, at its end, under a minimum interval that does not parse", entry: ours, pausedAt: start, paused: true, advance: time.Hour,
			gate: map[string]string{policy.MinIntervalAnnotation: "-5s"}, kept: true, heldUntilItsEnd: true},
		{name: "ours, at its end, its pods reading content that does not validate", entry: ours, pausedAt: start, paused: true, advance: time.Hour,
			invalid: true, kept: true, heldUntilItsEnd: true},
		{name: "ours, resumed by someone else, its pods reading content that does not validate", entry: ours, pausedAt: start, advance: time.Hour,
			invalid: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newGatesFixture(newStore())
			ann := map[string]string{"deployment.reloader.stakater.com/pause-period": "1m"}
			maps.Copy(ann, c.gate)
			if c.pausedAt != "" {
				ann[f.g.annotations.PausedAt] = c.pausedAt
			}
			w := gatedView(ann)
			w.Obj.(*appsv1.Deployment).Spec.Paused = c.paused
			var sent []string
			w.Kind.WriteMeta = func(_ context.Context, _, _ string, body []byte) (any, error) {
				sent = append(sent, string(body))
				return w.Obj, nil
			}
			if c.entry != "" {
				f.store.Kind(entrykeys.PausePrefix).SetValue(f.g.names.Pause(w.Key), c.entry)
			}
			f.clock.Advance(c.advance)
			holdsInvalid := func(w workload.View) bool { // as Validation.HoldsInvalid
				if c.invalid {
					f.g.holdInvalid(w)
				}
				return c.invalid
			}
			if err := f.g.EndRememberedPause(context.Background(), w, func(workload.View) []policy.JSONOp { return nil }, holdsInvalid); err != nil {
				t.Fatal(err)
			}
			if ended := len(sent) == 1 && strings.Contains(sent[0], `"path":"/spec/paused","value":false`); ended != c.ends || len(sent) > 1 {
				t.Errorf("patches %q; want the pause ended: %t", sent, c.ends)
			}
			if _, interval := c.gate[policy.MinIntervalAnnotation]; c.ends && interval && !strings.Contains(sent[0], "last-reload") {
				t.Errorf("the resume %q does not record its time under a minimum interval", sent[0])
			}
			if _, kept := f.store.Kind(entrykeys.PausePrefix).Value(f.g.names.Pause(w.Key)); kept != c.kept {
				t.Errorf("entry kept %t, want %t", kept, c.kept)
			}
			if held := f.g.deferrals.isHeld(w.Key); held != c.heldUntilItsEnd {
				t.Errorf("timer armed %t, want %t", held, c.heldUntilItsEnd)
			}
		})
	}
}
