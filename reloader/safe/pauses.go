package safe

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// A pause period of ours (spec.paused with the paused-at annotation) must end even once the
// reloader stops watching the Deployment: its namespace leaves --namespace-selector, or enters
// --namespaces-to-ignore, while it runs. The workload informers still see every namespace, but
// the syncs judge nothing outside the selection, and the paused-at annotation alone proves
// nothing there (anyone who may edit the Deployment may write it). So the state remembers each
// pause of ours while it runs: the object's UID, the pause's start and its end. Outside the
// selection, only a pause both the state and the Deployment name, the same start on the same
// object, still paused, is ended, at the end remembered; any other is forgotten. A forged entry
// without that annotation ends nothing, and who may write both may unpause the Deployment anyway.

// rememberPause keeps in the state the running pause of ours on Deployment w, from pausedAt to
// end.
func (g *Gates) rememberPause(w workload.View, pausedAt, end time.Time) {
	v := encodePause(end, pausedAt, string(w.Meta.GetUID()))
	if old, ok := g.store.Value(g.names.Pause(w.Key)); !ok || old != v {
		g.store.SetValue(g.names.Pause(w.Key), v)
	}
}

// forgetPause forgets the pause remembered for workload k, if any.
func (g *Gates) forgetPause(k workload.Key) {
	if _, ok := g.store.Value(g.names.Pause(k)); ok {
		g.store.Delete(g.names.Pause(k))
	}
}

// EndRememberedPause is the sync of a workload outside the selection: a pause of ours that the
// state remembers and the Deployment still carries ends at its remembered end once its pods
// read no content that does not validate (holdsInvalid, Validation.HoldsInvalid, which holds
// it) and its gate lets the resume through, with its resume and rolloutStarts' ops, as the sync
// in the selection ends it (the planner's stepInvalid, then Settle); until then its timer
// waits. It ends nothing else, and starts nothing.
func (g *Gates) EndRememberedPause(ctx context.Context, w workload.View, rolloutStarts func(workload.View) []policy.JSONOp,
	holdsInvalid func(workload.View) bool) error {
	pk := g.names.Pause(w.Key)
	v, ok := g.store.Value(pk)
	if !ok {
		return nil
	}
	end, pausedAt, uid, err := decodePause(v)
	gate := g.Of(w)
	if err != nil || uid != string(w.Meta.GetUID()) || !gate.PausedAt.Equal(pausedAt) || len(g.resumeStakater(w)) == 0 {
		g.store.Delete(pk) // ended, or replaced, by someone else: no longer ours to end
		if g.deferrals.release(w.Key) {
			g.report()
		}
		return nil
	}
	now := g.clock.Now()
	if now.Before(end) {
		g.deferrals.Hold(w.Key, end, policy.ReasonPause)
		g.report()
		return nil
	}
	// The resume restarts pods on the configs as they are.
	if holdsInvalid(w) {
		return nil
	}
	// The entry's end, not the annotation's period, said that the pause is over; the resume is
	// gated as in the selection (Settle).
	if v := gate.DecideResume(now); v.Action == policy.Hold {
		g.deferrals.Hold(w.Key, v.Until, v.Reason)
		g.report()
		return nil
	}
	ops := append([]policy.JSONOp{rvGuard(w)}, g.annotations.GateOps(w.Meta.GetAnnotations(), gate, now)...)
	ops = append(append(ops, rolloutStarts(w)...), g.resumeStakater(w)...)
	if err := WriteMeta(ctx, w, ops, "end the pause period of"); err != nil {
		return err
	}
	g.store.Delete(pk)
	if g.deferrals.release(w.Key) {
		g.report()
	}
	g.log.Info("pause period ended outside the watched namespaces", "kind", w.Kind.Name, "namespace", w.Key.Namespace, "name", w.Key.Name)
	return nil
}

// A pause entry: "<end> <start> <UID>", the times RFC 3339 to the nanosecond.
const pauseLen = 2*len("2006-01-02T15:04:05.999999999Z") + 2 + 64

func encodePause(end, pausedAt time.Time, uid string) string {
	return end.UTC().Format(time.RFC3339Nano) + " " + pausedAt.UTC().Format(time.RFC3339Nano) + " " + uid
}

func decodePause(v string) (end, pausedAt time.Time, uid string, err error) {
	f := strings.Fields(v)
	if len(f) != 3 || len(f[2]) > 64 {
		return end, pausedAt, "", errors.New("a pause entry holds <end> <start> <uid>")
	}
	if end, err = time.Parse(time.RFC3339Nano, f[0]); err != nil {
		return end, pausedAt, "", err
	}
	if pausedAt, err = time.Parse(time.RFC3339Nano, f[1]); err != nil {
		return end, pausedAt, "", err
	}
	return end, pausedAt, f[2], nil
}

// PauseEntries is the kind of state entry of a pause of ours (entrykeys.Names.Pause).
func PauseEntries() state.EntryKind {
	return state.EntryKind{
		Prefix: entrykeys.PausePrefix,
		MaxLen: func(string) int { return pauseLen },
		Valid: func(_, v string) error {
			_, _, _, err := decodePause(v)
			return err
		},
	}
}
