package checker

import (
	"fmt"
	"slices"
	"time"
)

// Generator version 9 (issue 48), drawn from a tenth random stream so that versions 1 to 8 keep
// their sequences:
//   - forge: a well-formed entry the reloader did not write, put into the state ConfigMap while a
//     replica is down, so that its next start reads it. Held to what SECURITY.md ("Who can
//     write the state can …") says each kind may make the reloader do: a Job recreation note
//     (unsigned, signed under another key, or signed under the real key for a namespace outside
//     --namespace) nothing; a config entry or a tombstone restart once the workloads that reload
//     on the config, and a tombstone keep those created since its date from a deletion the next
//     start judges by it; a strip restart once the workload it names, if it reloads on the
//     config; a hold keep the workload it names from the content held until the config changes
//     again.
//   - A state ConfigMap deleted under a running reloader, past writeBackWithin with nothing
//     else happening, then a replica down while a config changes: the running reloader must
//     have written the state back from memory, so no excuse of a lost state covers the change
//     (history.unknowable).
//   - An owner's `kubectl rollout pause` and resume of a Deployment (ownerpause.go).
//   - In a third of the switches from stakater, a config whose stakater variable is cm--2's
//     (fold.go).

// How often, after a main action, the tenth stream draws each of its actions.
const forgeEvery, lossEvery, ownerPauseEvery, foldUpdateEvery = 8, 60, 10, 6

// writeBackWithin bounds how long a running reloader takes to write back a state ConfigMap
// deleted under it (docs/design.md, "Repair"): it checks its shards every minute, and skips a
// shard one of its writes reached within the last minute, so an idle deletion waits up to two.
const writeBackWithin = 130 * time.Second

// tenthActions draws gen 9's actions after a main action. They change nothing the other streams
// read (the generator's world, its fresh values), so version 9 without them is version 8.
func (g *laterDraws) tenthActions(s Sequence) []Action {
	var out []Action
	if g.faults && g.tenth.IntN(forgeEvery) == 0 {
		out = append(out, g.forge(s)...)
	}
	if g.faults && g.tenth.IntN(lossEvery) == 0 {
		out = append(out, g.stateLostUnderARunningReloader()...)
	}
	if g.tenth.IntN(ownerPauseEvery) == 0 {
		out = append(out, g.ownerPause()...)
	}
	if s.Fold && g.tenth.IntN(foldUpdateEvery) == 0 {
		out = append(out, Action{Op: "update", Target: FoldedName, Key: pick(g.tenth, []string{"a", "a", "b"}), Value: pick(g.tenth, values),
			Pause: time.Duration(g.tenth.IntN(400)) * time.Millisecond})
	}
	for i := range out {
		out[i].Tenth = true
	}
	return out
}

// Forged entry kinds.
const (
	ForgeUnsigned  = "note-unsigned"  // a Job recreation note with no MAC
	ForgeOtherKey  = "note-other-key" // signed under a key that is not the reloader's
	ForgeOutside   = "note-outside"   // signed under the reloader's key, for a namespace it does not watch
	ForgeEntry     = "entry"          // a config entry holding a hash of no content the config had
	ForgeTombstone = "tombstone"      // the same as a tombstone
	ForgeStrip     = "strip"          // a strip of a workload for a config it reads, of another hash
	ForgeHold      = "hold"           // a hold of a workload on its config's current content
)

// forge draws a replica down and a forged state entry, which its next start reads. Over all
// namespaces, only --namespace bounds which notes are acted on, so a note for another namespace
// is forged under another key instead.
func (g *laterDraws) forge(s Sequence) []Action {
	a := Action{Op: "forge", Value: pick(g.tenth, []string{ForgeUnsigned, ForgeOtherKey, ForgeOutside, ForgeEntry, ForgeEntry, ForgeTombstone, ForgeStrip, ForgeStrip, ForgeHold, ForgeHold})}
	if a.Value == ForgeOutside && s.NsSelector {
		a.Value = ForgeOtherKey
	}
	cms := ConfigNames[:3] // forged config entries are of ConfigMaps: a Secret's hashes are keyed
	switch a.Value {
	case ForgeEntry, ForgeTombstone:
		a.Target = pick(g.tenth, cms)
	case ForgeStrip, ForgeHold:
		// A live workload whose template changes in place, and a ConfigMap it reloads on: where
		// a strip or a hold has something to act on.
		var pairs [][2]string
		for _, w := range workloadNames {
			for _, r := range g.refs[w] {
				reloads, _ := triggers(g.modes[w], g.refs[w], r.Config)
				if g.workloads[w] && reloads && slices.Contains(cms, r.Config) && slices.Contains(TemplateKinds[:3], KindOrDefault(g.kinds[w])) {
					pairs = append(pairs, [2]string{w, r.Config})
				}
			}
		}
		if len(pairs) == 0 {
			a.Value, a.Target = ForgeEntry, pick(g.tenth, cms)
			break
		}
		p := pick(g.tenth, pairs)
		a.Key, a.Target = p[0], p[1]
	}
	// Forged while the replica is down: a running reloader writes back its own shard within
	// writeBackWithin, and removes what it did not write.
	a.Pause = time.Duration(g.tenth.IntN(400)) * time.Millisecond
	out := []Action{{Op: "down", Dur: time.Duration(1500+g.tenth.IntN(1500)) * time.Millisecond, Pause: time.Duration(100+g.tenth.IntN(200)) * time.Millisecond}, a}
	if a.Value == ForgeHold {
		// The hold ends with the config's next change, made while the replica is down, which
		// its workload must take: judged at once, before a later change heals a loss.
		out = append(out, Action{Op: "update", Target: a.Target, Key: "a", Value: fmt.Sprint(2000 + g.tenth.IntN(1000)), Pause: g.coalesce + RaceMargin}, Action{Op: "quiet"})
	}
	return out
}

// stateLostUnderARunningReloader creates a workload reading a config (w-s<n>, a name the other
// streams never draw: it carries no marker, so the state judges it), deletes the state
// ConfigMap, waits past writeBackWithin, then stops a replica for a few seconds and changes the
// config meanwhile: the state the next leader loads must be the one written back, which knows
// the content before the change, so the workload restarts.
func (g *laterDraws) stateLostUnderARunningReloader() []Action {
	var live []string
	for _, c := range ConfigNames {
		if g.configs[c] && !g.ignored[c] {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return nil
	}
	c := pick(g.tenth, live)
	g.lossRuns++
	return []Action{
		{Op: "create-workload", Target: fmt.Sprintf("w-s%d", g.lossRuns), Mode: ModeAuto, Refs: []Ref{{Config: c, Whole: true}}, Kind: KindDeployment,
			Pause: time.Duration(2500+g.tenth.IntN(1000)) * time.Millisecond},
		{Op: "state-delete", Pause: writeBackWithin + time.Duration(2000+g.tenth.IntN(1500))*time.Millisecond},
		{Op: "down", Dur: time.Duration(2000+g.tenth.IntN(2000)) * time.Millisecond, Pause: time.Duration(100+g.tenth.IntN(300)) * time.Millisecond},
		// A JSON number no other action writes, valid where key a is validated.
		{Op: "update", Target: c, Key: "a", Value: fmt.Sprint(1000 + g.tenth.IntN(1000)), Pause: time.Duration(g.tenth.IntN(400)) * time.Millisecond},
	}
}

// Forgery is a forged state entry, as the oracle holds the reloader to it.
type Forgery struct {
	Kind     string
	Config   string // entries, tombstones, strips, holds
	Workload string // strips, holds
	At       time.Time
	RV       int64     // the state ConfigMap's, after the forgery
	Since    time.Time // a tombstone's date: when it says the config was deleted
	Job      string
	JobNS    string // notes: the Job it names
}

// Forged records a forgery.
func (r *ConfigLog) Forged(f Forgery) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgeries = append(r.forgeries, f)
}

// ForgedNotes are the forged Job recreation notes.
func (r *ConfigLog) ForgedNotes() []Forgery {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Forgery
	for _, f := range r.forgeries {
		if f.Job != "" {
			out = append(out, f)
		}
	}
	return out
}

// forgedRestarts are the restarts of w for c a forged entry allows, each as a change a restart
// may take: one per forged entry or tombstone of c, and per forged strip of w for c, made while
// w reloaded on c (SECURITY.md: such an entry restarts once the workloads that reload on the
// config). Never one of a workload that does not reload on c. The caller holds r.mu.
func (r *excess) forgedRestarts(w *WorkloadLife, c string) []change {
	var out []change
	for _, f := range r.forgeries {
		if f.Config != c || f.Kind == ForgeHold || f.Workload != "" && f.Workload != w.name || f.At.Before(w.createdAt) {
			continue
		}
		if ok, _ := triggers(w.modeAt(f.At), w.refsAt(f.At), c); ok {
			out = append(out, change{rv: f.RV, at: f.At, by: "a forged " + f.Kind})
		}
	}
	return out
}

// heldByForgery reports whether a forged hold of w on c's content stands: c has not changed
// since it was written (SECURITY.md: a hold keeps the workload from reloading to the content
// held, until the config changes again). The caller holds r.mu.
func (r *Oracle) heldByForgery(w *WorkloadLife, c string) bool {
	es := r.configs[c]
	return slices.ContainsFunc(r.forgeries, func(f Forgery) bool {
		return f.Kind == ForgeHold && f.Workload == w.name && f.Config == c && f.At.After(w.createdAt) &&
			(len(es) == 0 || es[len(es)-1].at.Before(f.At))
	})
}

// deletionMaskedByForgery reports whether a forged tombstone of c may have kept w from
// restarting for c's deletion (SECURITY.md: a tombstone may keep the workloads the state judges
// from restarting for a change). It holds when c is deleted now; the tombstone came after c's
// last content; no leader ran undisturbed through both it and the deletion, and one began after
// them, so the deletion was judged from the state holding the forgery; and w carries no marker
// of c and was created after the tombstone's date, so by it w never ran c
// (policy.CreatedAfterDeletion). The caller holds r.mu.
func (r *Oracle) deletionMaskedByForgery(w *WorkloadLife, c string) bool {
	es := r.configs[c]
	if len(es) == 0 || es[len(es)-1].exists || markers(&w.tmpl)[c] != "" {
		return false
	}
	var content time.Time // c's last content
	deleted := es[0].at   // the deletion after it
	for i, e := range es {
		if e.exists && i+1 < len(es) {
			content, deleted = e.at, es[i+1].at
		}
	}
	return slices.ContainsFunc(r.forgeries, func(f Forgery) bool {
		if f.Kind != ForgeTombstone || f.Config != c || !f.At.After(content) || !w.createdAt.After(f.Since) {
			return false
		}
		from, to := f.At, deleted
		if to.Before(from) {
			from, to = to, from
		}
		return r.disturbed(from, to) && slices.ContainsFunc(r.starts, func(s time.Time) bool { return s.After(to) })
	})
}

// forgedStripUnread reports whether the checker forged a strip of w for c that no process has
// loaded: none began after it (a start loads the state, and acts on the strip). The caller
// holds r.mu.
func (r *history) forgedStripUnread(w *WorkloadLife, c string) bool {
	return slices.ContainsFunc(r.forgeries, func(f Forgery) bool {
		return f.Kind == ForgeStrip && f.Workload == w.name && f.Config == c && f.At.After(w.createdAt) &&
			!slices.ContainsFunc(r.starts, func(s time.Time) bool { return s.After(f.At) })
	})
}

// modeAt is w's annotation mode at a moment.
func (w *WorkloadLife) modeAt(at time.Time) string {
	m := w.modes[0].mode
	for _, e := range w.modes[1:] {
		if e.at.After(at) {
			break
		}
		m = e.mode
	}
	return m
}

// unknowable reports whether the state's loss l may have been unknown to the next reloader to
// start: always for a corrupt entry or a tombstone with no hash; for the state ConfigMap
// deleted (or found gone), only if no leader ran undisturbed long enough to write it back from
// memory (writeBackWithin): an outage, an API server restart, a stop or a downtime meanwhile.
// The caller holds r.mu.
func (r *history) unknowable(l loss) bool {
	if l.deleted.IsZero() {
		return true
	}
	end := l.deleted.Add(writeBackWithin)
	if !l.at.After(end) {
		end = l.at.Add(writeBackWithin)
	}
	return r.disturbed(l.deleted, end)
}

// disturbed reports whether anything stopped the leader from writing between from and to.
// The caller holds r.mu.
func (r *history) disturbed(from, to time.Time) bool {
	if !r.leaderless.IsZero() && r.leaderless.Before(to) {
		return true
	}
	return slices.ContainsFunc(r.blind, func(b [2]time.Time) bool { return b[0].Before(to) && b[1].After(from) }) ||
		slices.ContainsFunc(r.kills, func(k time.Time) bool { return !k.Before(from) && k.Before(to) })
}

// loss is the state losing a config's entry at a moment; deleted, when the loss is the state
// ConfigMap deleted (or found gone), is when it was deleted.
type loss struct {
	at, deleted time.Time
}
