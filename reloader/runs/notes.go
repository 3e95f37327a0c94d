// Package runs is what a workload's pods run that no marker of theirs says: Notes takes it from
// the events of workloads and configs, Strips keeps what a workload runs without a marker (in
// memory and in the state's strip entries), and Restarts what each workload's last restart may
// have given its pods unseen (in memory); Rollbacks is both, across a rollback. The rule, the
// configs' content values and their state entries it reaches through the interfaces it
// declares: Rule, Contents and Entries.
package runs

import (
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/workload"
)

// Notes takes, from the events of workloads and configs, what a workload's pods run that no
// marker says: a marker stripped by someone else's template change, a workload created while
// the reloader runs (strips.go), a config changed unseen by a restart, and a restart by another
// actor (unseen.go).
type Notes struct {
	rule     Rule
	strips   *Strips
	restarts *Restarts
	contents Contents
	entries  Entries
	// pausedOn: workload key → the hash of the template its rollouts were paused on, for the
	// pauses this process saw begin, or found at its start (Resumed).
	pausedOn sync.Map
}

// NewNotes returns the notes that judge workloads by rule and write what their pods run to strips
// and restarts; contents and entries are the configs' content values and their state entries.
func NewNotes(rule Rule, strips *Strips, restarts *Restarts, contents Contents, entries Entries) *Notes {
	return &Notes{rule: rule, strips: strips, restarts: restarts, contents: contents, entries: entries}
}

// Rule is what notes ask of the rule (the root's judge.go): a workload read once, the configs
// it reloads on and what its marker of each should hold, what another actor's restart had its
// pods read, and a config's record and version in the cache.
type Rule interface {
	View(kind *workload.Kind, obj any) (workload.View, bool)
	ReloadsOn(w workload.View) []policy.ConfigRef
	WantedExisting(w workload.View, r policy.ConfigRef) (rec *configs.Record, want policy.Content, keys []string, ok bool)
	ReadByOthers(w workload.View, r policy.ConfigRef) *Read
	CachedVersion(namespace string) func(policy.ConfigRef, *Read) (Version, bool)
	Lookup(k workload.Key) *configs.Record
}

// Contents gives the content of a config's record for the keys a workload reads (nil: all), as
// a marker or a state entry holds it (configs.Records.Content).
type Contents interface {
	Content(rec *configs.Record, keys []string) policy.Content
}

// Entries reads the state's config entries (configs.Records.Recorded): the content hash config
// k's entry records, when it has one of a config that exists.
type Entries interface {
	Recorded(k workload.Key) (hash string, ok bool)
}

// Stripped compares a workload's template before and after a change of it: a marker that
// reappeared ends what was remembered; one that was stripped while current is remembered.
func (n *Notes) Stripped(k *workload.Kind, old, obj any) {
	ov, ok := n.rule.View(k, old)
	nv, ok2 := n.rule.View(k, obj)
	if !ok || !ok2 || nv.Target.RestartAt {
		return // a Rollout's restartAt markers live on its metadata: dropping them restarts nothing
	}
	// A rollback of ours puts back pods from before its reload, which did not take the content
	// its marker said: what they run was noted before it was sent (the root's tracker.finish).
	rollback := rolledBackBy(ov.Meta.GetAnnotations(), nv.Meta.GetAnnotations())
	// A spec change that leaves the template alone (a pause, minReadySeconds) restarts no pod:
	// what was noted of them stands (soak seed 1795773593018830783@5: the note that pods run a
	// config's reappearance, whatever their marker says, was dropped).
	restarted := configs.WholeTemplateHash(ov.Tmpl) != configs.WholeTemplateHash(nv.Tmpl)
	for _, r := range n.rule.ReloadsOn(nv) {
		rec, want, keys, ok := n.rule.WantedExisting(nv, r)
		if !ok {
			continue
		}
		before := ov.Target.MarkerOf(ov.Meta.GetAnnotations(), ov.Tmpl, r, want)
		after := nv.Target.MarkerOf(nv.Meta.GetAnnotations(), nv.Tmpl, r, want)
		switch {
		case after != policy.NoMarker && (restarted || before == policy.NoMarker):
			n.strips.forget(nv.Key, r)
		case after != policy.NoMarker: // the same pods, the same marker
		case rollback:
		case before == policy.Current && policy.WrittenBefore(rec.ResourceVersion(), nv.Meta.GetResourceVersion()):
			n.strip(nv.Key, r, rec, want.Value, keys)
		case before != policy.NoMarker:
			n.strips.forget(nv.Key, r) // stripped while behind: the state decides
		}
	}
}

// rolledBackBy reports whether a change of a workload's annotations from before to after is a
// rollback of ours: it records the rollback and drops what the reload replaced, in one patch.
func rolledBackBy(before, after map[string]string) bool {
	_, had := before[policy.RestoreAnnotation]
	_, has := after[policy.RestoreAnnotation]
	h := policy.ParseHistory(after[policy.HistoryAnnotation])
	return had && !has && len(h) > 0 && h[0].RolledBack
}

// Created remembers, for a workload just created while the reloader runs, that it runs the
// content each config it reloads on held before its creation: its pods started after it and
// read that content, though it carries no marker. Without this, while another dependent holds
// the config's state back, the state would restart the new workload for content it already
// runs. Only a workload seen as created is trusted (JustCreated, asked of the object as its
// event brought it: not one found by a relist, whose resourceVersion may be later than its
// creation); the caller asks.
func (n *Notes) Created(k *workload.Kind, obj any) {
	v, ok := n.rule.View(k, obj)
	if !ok || v.Target.RestartAt {
		return
	}
	refs := n.rule.ReloadsOn(v)
	for _, r := range refs {
		if rec, want, keys, ok := n.rule.WantedExisting(v, r); ok {
			n.runs(v, r, rec, want, keys)
		}
	}
	// The configs its pod spec reads that it does not reload on yet: a reload annotation put on
	// later must not restart it for the content it ran from its start (checker seed 1050@8). Noted
	// as auto mode reads them; a later mode that reads them otherwise finds the note stale and
	// reloads, as the state would (a note is kept only while the state is behind).
	for r, u := range v.Uses {
		if slices.Contains(refs, r) || !u.Whole && len(u.Keys) == 0 {
			continue
		}
		var keys []string
		if !u.Whole {
			keys = u.Keys
		}
		if rec := n.rule.Lookup(workload.ConfigKey(r, v.Key.Namespace)); rec != nil {
			n.runs(v, r, rec, n.contents.Content(rec, keys), keys)
		}
	}
}

// runs notes that workload v, without a marker for r, runs want: the content of rec, which was
// written before v's version of it was.
func (n *Notes) runs(v workload.View, r policy.ConfigRef, rec *configs.Record, want policy.Content, keys []string) {
	if policy.WrittenBefore(rec.ResourceVersion(), v.Meta.GetResourceVersion()) && v.Target.MarkerOf(v.Meta.GetAnnotations(), v.Tmpl, r, want) == policy.NoMarker {
		n.strip(v.Key, r, rec, want.Value, keys)
	}
}

// strip remembers, in memory and in the state, that workload w runs value of config r
// without a marker, where the state's entry for the config is behind its content. Where the
// entry holds the content it says the same, and later changes are best judged by it (one made
// while the config was ignored, for one, restarts nothing once the ignore is lifted).
func (n *Notes) strip(w workload.Key, r policy.ConfigRef, rec *configs.Record, value string, keys []string) {
	hash, recorded := n.entries.Recorded(workload.ConfigKey(r, w.Namespace))
	if recorded && n.contents.Content(rec, nil).Match(hash) != policy.Differs {
		n.strips.forget(w, r)
		return
	}
	n.strips.Remember(w, r, value, keys)
}

// ConfigChanged notes a config's new content for the restarts that may not have seen it.
func (n *Notes) ConfigChanged(k workload.Key, rec *configs.Record) {
	n.restarts.configChanged(k, rec.ResourceVersion(), func(keys []string) string { return n.contents.Content(rec, keys).Value })
}

// RestartedByOthers notes, for a followable workload whose pod template another actor changed,
// what its new pods read (podsRestarted). A reload or a rollback of ours sets or puts back
// markers, and notes its own restart; another actor's change leaves them or strips them (a helm
// upgrade), and may have the pods read other configs. A strip was once taken for ours: the
// pods' reads went unnoted, and a config they read anew while its state was behind restarted
// them for the content they ran (soak seed 1795828528856311681@7); a config deleted, whose
// deletion marker went, came back with its old content and reloaded nothing though they ran
// without it (seed 5@7). A paused workload's template change restarts nothing: its resume does
// (Resumed).
func (n *Notes) RestartedByOthers(k *workload.Kind, old, obj any) {
	ov, ok := n.rule.View(k, old)
	nv, ok2 := n.rule.View(k, obj)
	if !ok || !ok2 || !workload.Rolls(obj) || k.Paused != nil && k.Paused(obj) || configs.WholeTemplateHash(ov.Tmpl) == configs.WholeTemplateHash(nv.Tmpl) {
		return
	}
	if n.setsMarkers(ov, nv) {
		return
	}
	n.podsRestarted(nv)
}

// setsMarkers reports whether a change of a workload set a marker, or moved markers as a
// rollback of ours: a reload or a rollback, which notes its own restart. Another actor's change
// leaves the markers or only strips some (a helm upgrade).
func (n *Notes) setsMarkers(ov, nv workload.View) bool {
	moved := false
	for _, r := range n.rule.ReloadsOn(nv) {
		before := policy.MarkerCopies(ov.Meta.GetAnnotations(), ov.Tmpl, r)
		after := policy.MarkerCopies(nv.Meta.GetAnnotations(), nv.Tmpl, r)
		for _, m := range after {
			if !slices.Contains(before, m) {
				return true
			}
		}
		moved = moved || len(before) != len(after)
	}
	return moved && rolledBackBy(ov.Meta.GetAnnotations(), nv.Meta.GetAnnotations())
}

// Resumed notes, for a workload whose rollouts were paused and no longer are (a pause period's
// end, or anyone's resume), that its pods restart on the template as it is, reading each config
// as it is then (podsRestarted). A resume in the patch of a reload of ours is noted by the
// reload. A resume that finds the template this process saw the pause begin on rolls out
// nothing: the pods run what they ran (checker seed 326@9: noted as waiting for a config absent
// at an owner's resume, a workload was taken to run the content it came back with).
func (n *Notes) Resumed(k *workload.Kind, old, obj any) {
	if k.Paused == nil {
		return
	}
	m := obj.(metav1.Object)
	w := workload.Key{Kind: k.Name, Namespace: m.GetNamespace(), Name: m.GetName()}
	switch {
	case !k.Paused(old) && k.Paused(obj):
		if _, tmpl := k.Template(old); tmpl != nil {
			n.pausedOn.Store(w, configs.WholeTemplateHash(tmpl))
		}
		return
	case !k.Paused(old) || k.Paused(obj):
		return
	}
	on, seen := n.pausedOn.LoadAndDelete(w)
	ov, ok := n.rule.View(k, old)
	nv, ok2 := n.rule.View(k, obj)
	if !ok || !ok2 || n.marked(ov, nv) || seen && on == configs.WholeTemplateHash(nv.Tmpl) {
		return
	}
	n.podsRestarted(nv)
}

// PausedAtStart notes a workload whose rollouts were paused when this process listed it at
// start: the pause is taken to have begun on its template then, so that a resume that finds it
// rolls out nothing and the pods run what they ran. Not where its status says the template has
// not rolled out (changed during the pause, or paused mid-rollout): the resume rolls it out, and
// is noted as one (Resumed). A template change the status does not show yet is taken as rolled
// out: at worst one reload more, where a resume that rolls out nothing, taken for a rollout,
// may lose a change.
func (n *Notes) PausedAtStart(k *workload.Kind, obj any) {
	m := obj.(metav1.Object)
	if _, tmpl := k.Template(obj); tmpl != nil && k.Paused != nil && k.Paused(obj) && !policy.TemplatePending(obj) {
		n.pausedOn.LoadOrStore(workload.Key{Kind: k.Name, Namespace: m.GetNamespace(), Name: m.GetName()}, configs.WholeTemplateHash(tmpl))
	}
}

// WorkloadGone forgets a deleted workload's pause.
func (n *Notes) WorkloadGone(w workload.Key) { n.pausedOn.Delete(w) }

// marked reports whether a change of a workload changed a marker: a reload, a rollback or a strip.
func (n *Notes) marked(ov, nv workload.View) bool {
	return slices.ContainsFunc(n.rule.ReloadsOn(nv), func(r policy.ConfigRef) bool {
		return !slices.Equal(policy.MarkerCopies(ov.Meta.GetAnnotations(), ov.Tmpl, r), policy.MarkerCopies(nv.Meta.GetAnnotations(), nv.Tmpl, r))
	})
}

// podsRestarted notes what the pods of a restart of nv that was not a reload of ours read:
// where a marker is current, that content; where it is behind, another content than it says,
// which one unknown (a list after a watch gap may show the change later than it was made), so
// the workload is reloaded once more whatever the config holds next; an absent config they
// wait for, as at a restart of ours. Of a config without a marker they read its content, which
// a strip notes where the state is behind it (strips.go): else, the config back at the state's
// content, they would be left on the one in between (soak seed 1795727042036173470@4).
func (n *Notes) podsRestarted(nv workload.View) {
	reads := map[policy.ConfigRef]*Read{}
	var unmarked []policy.ConfigRef
	for _, r := range n.rule.ReloadsOn(nv) {
		if rd := n.rule.ReadByOthers(nv, r); rd != nil {
			reads[r] = rd
		} else {
			unmarked = append(unmarked, r)
		}
	}
	for _, r := range unmarked {
		if rec, want, keys, ok := n.rule.WantedExisting(nv, r); ok {
			n.runs(nv, r, rec, want, keys)
		}
	}
	n.restarts.byOthers(nv.Key, nv.Meta.GetResourceVersion(), reads, n.rule.CachedVersion(nv.Key.Namespace))
	n.strips.RunNothing(nv.Key, UnmarkedNone(nv, reads, nil))
	n.strips.Awaits(nv.Key, Waiting(reads))
}
