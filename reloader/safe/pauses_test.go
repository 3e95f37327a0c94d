package safe

import (
	"context"
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
// resumes nothing; the entry that no longer names a pause of ours is forgotten.
func TestOnlyAPauseTheStateAndTheDeploymentBothNameIsEndedOutsideTheSelection(t *testing.T) {
	const start = "2026-11-26T11:59:00.5Z"
	started, _ := time.Parse(time.RFC3339Nano, start)
	ours := encodePause(started.Add(time.Minute), started, "u1")
	for _, c := range []struct {
		name            string
		entry           string // "" for none
		pausedAt        string
		paused          bool
		advance         time.Duration
		ends, kept      bool
		heldUntilItsEnd bool
	}{
		{name: "ours, at its end", entry: ours, pausedAt: start, paused: true, advance: time.Minute, ends: true},
		{name: "ours, before its end", entry: ours, pausedAt: start, paused: true, kept: true, heldUntilItsEnd: true},
		{name: "a paused-at with no entry", pausedAt: start, paused: true, advance: time.Hour},
		{name: "an entry of another object", entry: encodePause(started.Add(time.Minute), started, "u2"), pausedAt: start, paused: true, advance: time.Hour},
		{name: "an entry of another pause", entry: encodePause(started.Add(time.Minute), started.Add(-time.Hour), "u1"), pausedAt: start, paused: true, advance: time.Hour},
		{name: "an entry without the annotation", entry: ours, paused: true, advance: time.Hour},
		{name: "ours, resumed by someone else", entry: ours, pausedAt: start, advance: time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newGatesFixture(newStore())
			ann := map[string]string{"deployment.reloader.stakater.com/pause-period": "1m"}
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
			if err := f.g.EndRememberedPause(context.Background(), w, func(workload.View) []policy.JSONOp { return nil }); err != nil {
				t.Fatal(err)
			}
			if ended := len(sent) == 1 && strings.Contains(sent[0], `"path":"/spec/paused","value":false`); ended != c.ends || len(sent) > 1 {
				t.Errorf("patches %q; want the pause ended: %t", sent, c.ends)
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
