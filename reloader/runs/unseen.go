package runs

import (
	"slices"
	"sync"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/workload"
)

// A config change the reloader had not seen when it restarted a workload.
//
// A reload patches the markers of the configs that changed and leaves the others as the cache
// has them. The config caches lag: a config may have changed just before the patch, unseen, and
// the restarted pods read that new content while the marker says the old one. Once the change is
// seen the marker is stale and the workload reloads; but if the change is reverted before that
// reload, the marker matches again and nothing would restart the pods that read the
// reverted-away content. So each restart remembers, per config, the content its markers were
// judged against and the versions of the config seen since; the last version written before the
// patch (resourceVersions are etcd revisions, ordered across objects) is what the pods read.
// When it differs, the workload is reloaded once for that config, whatever its marker says
// (policy.Change.Force). In memory only: a crash in between forgets it.
//
// A config absent when a restart's patch lands (the restart may be for its deletion) leaves the
// new pods waiting for it: they start on the content it has when it reappears, whatever the
// marker says (the content before, or the deletion). So the restart remembers such a config (an
// absent read) and the first version of it seen after the patch (or the last one before,
// written unseen): that is what the pods run, and the workload's marker is judged by it instead
// (the root's rule.judge, judge.go); a second deletion takes it away from them. While the marker still says
// another content, the next restart carries what the pods run on (a vouched read). In memory
// too: after a crash the marker decides again; a rollback of that restart puts back what was
// noted of the restart before it.
//
// Pods that read a config only through optional key refs do not wait for it: restarted while it
// is absent, they run without it, whatever the marker (or, without one, the state's tombstone)
// says (a none read). Its reappearance, with any content, reloads the workload once (soak seed
// 1795721381820273670@4: a CronJob run for another config while the config was deleted was not
// run again when it came back with the content it had before). In memory; for a workload
// without a marker also a strip in the state (strips.go), which outlives a restart.
//
// Another actor's change of the pod template (an image, kubectl rollout restart) restarts the
// pods too, and they read each config as it is then, whatever the markers say. It is noted as a
// restart of its own whose reads hold what the markers say: where a marker is behind its config
// (a reload held after a rollback, deferred by a gate), the workload is reloaded once more even
// if the config returns to the marker's content, which the pods no longer run.
//
// A rollback of ours that starts pods on the restored template (policy.RollbackStarts) is a
// restart too, whose pods read the content rolled back for: that is noted in the state
// (the root's tracker.noteRollbackReads), which outlives a restart of the reloader, not here.

// Restarts holds the last restart of each workload, and the one in flight.
type Restarts struct {
	mu       sync.Mutex
	done     map[workload.Key]*restart
	inFlight map[workload.Key]*restart
	// before: the restart that done replaced, for a rollback to put back: the last one whose
	// pods ran. pausedTook: by config, the reappearances that restarts patched in during a
	// pause after it took while they were the last; a rollback at the resume goes back past
	// them too (Restore.Since). One per config, so a workload paused for weeks keeps no list.
	before     map[workload.Key]*restart
	pausedTook map[workload.Key]map[policy.ConfigRef]*Read
	// rollingBack: a rollback's patch is in flight. Its own update event may be handled before
	// the call returns, and the template it shows is before's (soak seed
	// 1795681571291661041@4: judged by the restart undone, whose pods had taken a config's
	// reappearance, the workload was left running the content before it).
	rollingBack map[workload.Key]bool
	// rolledBack: the resourceVersion our last rollback of a workload wrote. A cache older than
	// it still shows the reload as rolling out, and finishing it again would note a second
	// rollback, of the restart the first one put back (the judge, meanwhile, would take that
	// restart's reads for the ones before it).
	rolledBack map[workload.Key]string
}

// restart is one reload's patch: the resourceVersion it wrote ("" while in flight), and per
// config the workload reloads on, what its marker was judged against.
type restart struct {
	rv    string
	reads map[policy.ConfigRef]*Read
	// judged: the configs judged while the patch was in flight, to judge again once it ends
	// (AwaitPatches).
	judged []workload.Key
	// paused: the patch left the workload's rollouts paused, so its pods never started; the
	// resume starts them (notes.Resumed), and a rollback of that goes back past every restart
	// patched in during the pause (Restore.Since).
	paused bool
}

// Read is a config as a restart judged it: the content (for the keys the workload reads; nil:
// all), then the versions seen since: all of them while the patch is in flight, afterwards only
// the last one written before it (for an absent read, if there is none, the first one after).
type Read struct {
	Value string
	Keys  []string
	since []Version
	// Absent: the config did not exist and the pods wait for it; Value is unknown.
	Absent bool
	// None: the config did not exist and the pods did not wait for it (they read it only through
	// optional key refs): they run without it, unless a version written just before the patch
	// is in since, which they read.
	None bool
	// Vouched: the pods run Value, though the marker may say another content.
	Vouched bool
}

// Version is a config version seen after a restart judged it, with the content the workload
// reads of it.
type Version struct {
	RV    string
	Value string
}

// NewRestarts returns a restart memory that knows of no restart yet.
func NewRestarts() *Restarts {
	return &Restarts{done: map[workload.Key]*restart{}, inFlight: map[workload.Key]*restart{}, before: map[workload.Key]*restart{}, pausedTook: map[workload.Key]map[policy.ConfigRef]*Read{},
		rollingBack: map[workload.Key]bool{}, rolledBack: map[workload.Key]string{}}
}

// Begin notes a patch of w about to be sent, with what its configs were judged against. cached
// gives each config's version in the cache now: it may have changed since it was judged, its
// event handled already.
func (s *Restarts) Begin(w workload.Key, reads map[policy.ConfigRef]*Read, cached func(policy.ConfigRef, *Read) (Version, bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for r, rd := range reads {
		if v, ok := cached(r, rd); ok {
			rd.since = append(rd.since, v)
		}
	}
	s.inFlight[w] = &restart{reads: reads}
}

// AwaitPatches reports whether a patch of any of deps, the dependents of config c, is in
// flight; c is then judged again when each ends (Finished). Judged meanwhile, such a dependent
// is taken to run what the patch leaves it on (latest), and the patch may yet fail.
func (s *Restarts) AwaitPatches(deps []workload.Dependent, c workload.Key) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	waits := false
	for _, d := range deps {
		if p := s.inFlight[d.Workload]; p != nil {
			if !slices.Contains(p.judged, c) {
				p.judged = append(p.judged, c)
			}
			waits = true
		}
	}
	return waits
}

// Finished ends the patch in flight: rv is what it wrote ("" when it failed, which restarted
// nothing: the restart before it still holds), paused whether it left the workload's rollouts
// paused. It returns the configs to judge again (AwaitPatches).
func (s *Restarts) Finished(w workload.Key, rv string, paused bool) (judgeAgain []workload.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.inFlight[w]
	delete(s.inFlight, w)
	if p == nil {
		return nil
	}
	judgeAgain, p.judged = p.judged, nil
	if rv == "" {
		return judgeAgain
	}
	p.rv, p.paused = rv, paused
	for _, rd := range p.reads {
		var last []Version
		for _, v := range rd.since {
			if policy.WrittenBefore(v.RV, rv) {
				last = []Version{v}
			} else if rd.Absent && last == nil {
				last = []Version{v}
				break
			}
		}
		rd.since = last
	}
	s.replace(w, p)
	return judgeAgain
}

// replace makes p w's last restart, keeping the one it replaces for a rollback to put back;
// one patched in during a pause is never put back, its pods never ran, but a rollback undoes
// what its pods were to take (soak seed 1795782049105262354@6: a rollback at the resume put
// back a deletion's reload patched in during the pause, whose absent read then took the
// recreation's content; and a reload patched in during the next pause took it, the state
// recorded it, and the pods put back, which ran the content before the deletion, were left on
// it). The caller holds s.mu.
func (s *Restarts) replace(w workload.Key, p *restart) {
	delete(s.rolledBack, w)
	switch last := s.done[w]; {
	case last == nil:
		delete(s.before, w)
		delete(s.pausedTook, w)
	case last.paused:
		for r, rd := range took(last) {
			if s.pausedTook[w] == nil {
				s.pausedTook[w] = map[policy.ConfigRef]*Read{}
			}
			s.pausedTook[w][r] = rd
		}
	default:
		s.before[w] = last
		delete(s.pausedTook, w)
	}
	s.done[w] = p
}

// configChanged notes a new version rv of config c; content gives its content for the keys a
// workload reads.
func (s *Restarts) configChanged(c workload.Key, rv string, content func(keys []string) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := policy.ConfigRef{Kind: c.Kind, Name: c.Name}
	for w, p := range s.inFlight {
		if rd := p.reads[r]; rd != nil && w.Namespace == c.Namespace {
			rd.since = append(rd.since, Version{rv, content(rd.Keys)})
		}
	}
	// A restart kept for a rollback to put back sees the versions too: its pods wait as well
	// (soak seed 1795669739113515740@4: its absent read, put back, took a later content).
	for _, restarts := range []map[workload.Key]*restart{s.done, s.before} {
		for w, p := range restarts {
			rd := p.reads[r]
			if rd == nil || w.Namespace != c.Namespace {
				continue
			}
			// An absent read takes the first version after the patch: the one the pods waited for.
			if policy.WrittenBefore(rv, p.rv) || rd.Absent && len(rd.since) == 0 {
				rd.since = []Version{{rv, content(rd.Keys)}}
			}
		}
	}
}

// byOthers notes a change of w's pod template that another actor made, written at rv: its pods
// read each config of reads as it was then. A patch of ours in flight, or already noted at rv,
// is not one.
func (s *Restarts) byOthers(w workload.Key, rv string, reads map[policy.ConfigRef]*Read, cached func(policy.ConfigRef, *Read) (Version, bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if last := s.done[w]; s.inFlight[w] != nil || last != nil && last.rv == rv {
		return
	}
	for r, rd := range reads {
		if v, ok := cached(r, rd); ok && policy.WrittenBefore(v.RV, rv) {
			rd.since = []Version{v}
		}
	}
	s.replace(w, &restart{rv: rv, reads: reads})
}

// Unseen reports whether the pods of w's last restart read a content of r other than the one its
// marker was judged against.
func (s *Restarts) Unseen(w workload.Key, r policy.ConfigRef) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.latest(w)
	if p == nil || p.reads[r] == nil || p.reads[r].Absent || p.reads[r].None {
		return false
	}
	rd := p.reads[r]
	return len(rd.since) > 0 && rd.since[len(rd.since)-1].Value != rd.Value
}

// Runs is the content of r the pods of w's last restart run where their marker may say another:
// the config was absent at the restart and has reappeared since, or a restart before it said so
// (vouched); keys are those it is the content of (nil: all). ok is false when the marker says it.
func (s *Restarts) Runs(w workload.Key, r policy.ConfigRef) (value string, keys []string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.latest(w)
	if p == nil || p.reads[r] == nil {
		return "", nil, false
	}
	rd := p.reads[r]
	switch {
	case (rd.Absent || rd.None) && len(rd.since) > 0:
		return rd.since[len(rd.since)-1].Value, rd.Keys, true
	case rd.None:
		return "", rd.Keys, true // nothing, as a deleted config's marker says
	case rd.Vouched:
		return rd.Value, rd.Keys, true
	}
	return "", nil, false
}

// Awaiting reports whether the pods of w's last restart wait for r, absent at the restart and
// not seen back since.
func (s *Restarts) Awaiting(w workload.Key, r policy.ConfigRef) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.latest(w)
	return p != nil && p.reads[r] != nil && p.reads[r].Absent && len(p.reads[r].since) == 0
}

// latest is w's restart in flight, or else its last one. A patch's own update event may be
// handled before the call returns: the cache then shows its template, which the reads of the
// restart in flight describe (seed test TestSeedExamplesReloadAsDescribed: judged by the
// restart before, a config was left due and its content never recorded). The caller holds s.mu.
func (s *Restarts) latest(w workload.Key) *restart {
	if p := s.inFlight[w]; p != nil {
		return p
	}
	if s.rollingBack[w] {
		return s.before[w]
	}
	return s.done[w]
}

// RollbackBegins notes a rollback of w's last restart about to be sent; RollbackEnded ends it.
// It returns, for each config that restart's pods (or those of the restarts patched in during
// the pause it resumed) waited for and took when it reappeared, what the pods put back run:
// what was noted of the restart before, or OtherContent when nothing was. Judged by the pods
// that took it, the config may have been recorded in the state as run by every dependent; the
// pods put back do not run it. (A vouched read needs nothing: the pods put back ran that content
// too, by their marker or by the state, or it was held.)
func (s *Restarts) RollbackBegins(w workload.Key) map[policy.ConfigRef]Stripped {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rollingBack[w] = true
	out := map[policy.ConfigRef]Stripped{}
	last, prev := s.done[w], s.before[w]
	if last == nil {
		return out
	}
	undone := took(last)
	for r, rd := range s.pausedTook[w] {
		if undone[r] == nil {
			undone[r] = rd
		}
	}
	for r, rd := range undone {
		out[r] = Stripped{value: OtherContent, known: true, keys: rd.Keys}
		if prev == nil || prev.reads[r] == nil {
			continue
		}
		switch b := prev.reads[r]; {
		case b.Absent && len(b.since) > 0:
			out[r] = Stripped{value: b.since[len(b.since)-1].Value, known: true, keys: rd.Keys}
		case !b.Absent:
			out[r] = Stripped{value: b.Value, known: true, keys: rd.Keys}
		}
	}
	return out
}

// took are the absent reads of p whose pods took their config when it reappeared.
func took(p *restart) map[policy.ConfigRef]*Read {
	out := map[policy.ConfigRef]*Read{}
	for r, rd := range p.reads {
		if rd.Absent && len(rd.since) > 0 {
			out[r] = rd
		}
	}
	return out
}

// RollbackEnded ends the rollback in flight; rv is what it wrote ("" when it failed, and then
// nothing changes). Written, the restart before w's last one is put back. A rollback puts back the template from before that restart, so the pods
// are the previous ones again and its reads describe pods that are gone (soak seed
// 1795664411625522854@4: an absent read vouched for content the restored pods never read, and
// its reappearance reloaded nothing); what was noted of the previous ones holds again (seed
// 1795669739113515711@4: another actor's change had started them on content the restored marker
// does not say). With none noted, the marker the rollback restored decides.
func (s *Restarts) RollbackEnded(w workload.Key, rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rollingBack, w)
	if rv == "" {
		return
	}
	if prev := s.before[w]; prev != nil {
		s.done[w] = prev
	} else {
		delete(s.done, w)
	}
	delete(s.before, w)
	delete(s.pausedTook, w)
	s.rolledBack[w] = rv
}

// WritesUnseen reports whether the cache, as CachedVersion reads it, has yet to show a write of ours
// to a workload (a reload's patch or a rollback): its update event is what lets the state
// advance, so a shutdown waits for it (the root's drained).
func (s *Restarts) WritesUnseen(cachedVersion func(workload.Key) (string, bool)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	behind := func(w workload.Key, rv string) bool {
		cached, ok := cachedVersion(w)
		return ok && policy.WrittenBefore(cached, rv)
	}
	for w, p := range s.done {
		if behind(w, p.rv) {
			return true
		}
	}
	for w, rv := range s.rolledBack {
		if behind(w, rv) {
			return true
		}
	}
	return false
}

// BehindRollback reports whether a cached version rv of w was written before our last rollback
// of it: the rollout it shows is over.
func (s *Restarts) BehindRollback(w workload.Key, rv string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.rolledBack[w]
	return ok && policy.WrittenBefore(rv, at)
}

// WorkloadGone forgets w, deleted at rv, except what belongs to an object of its name made
// after: a Job's reload deletes it and creates it again under the same key, and the deletion's
// event may come while that restart is in flight or after it (soak seed
// 1795691391691440061@4: forgotten, a change written just before the create went unseen, and
// its revert was lost for the new Job).
func (s *Restarts) WorkloadGone(w workload.Key, rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight[w] != nil {
		return
	}
	if p := s.done[w]; p != nil && policy.WrittenBefore(rv, p.rv) {
		return
	}
	delete(s.done, w)
	delete(s.before, w)
	delete(s.pausedTook, w)
	delete(s.rollingBack, w)
	delete(s.rolledBack, w)
}

// UnmarkedNone are the configs the pods of a restart of w will run without (none reads), which
// no marker of w says and which the restart's changes leave alone, with the keys w reads of
// each: the state's tombstone would otherwise be taken for what they run.
func UnmarkedNone(w workload.View, reads map[policy.ConfigRef]*Read, changes []policy.Change) map[policy.ConfigRef][]string {
	out := map[policy.ConfigRef][]string{}
	for r, rd := range reads {
		changed := slices.ContainsFunc(changes, func(ch policy.Change) bool { return ch.Ref == r })
		if rd.None && !changed && len(policy.MarkerCopies(w.Meta.GetAnnotations(), w.Tmpl, r)) == 0 {
			out[r] = rd.Keys
		}
	}
	return out
}

// Waiting are the configs the pods of a restart wait for: absent, and read through more than
// optional key refs.
func Waiting(reads map[policy.ConfigRef]*Read) []policy.ConfigRef {
	var out []policy.ConfigRef
	for r, rd := range reads {
		if rd.Absent {
			out = append(out, r)
		}
	}
	return out
}
