package reloader

import (
	"sync"

	"github.com/reloader/reloader/policy"
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

// restarts holds the last restart of each workload, and the one in flight.
type restarts struct {
	mu       sync.Mutex
	done     map[key]*restart
	inFlight map[key]*restart
}

// restart is one reload's patch: the resourceVersion it wrote ("" while in flight), and per
// config the workload reloads on, what its marker was judged against.
type restart struct {
	rv    string
	reads map[policy.ConfigRef]*read
}

// read is a config as a restart judged it: the content (for the keys the workload reads; nil:
// all), then the versions seen since: all of them while the patch is in flight, afterwards only
// the last one written before it.
type read struct {
	value string
	keys  []string
	since []version
}

// version is a config version seen after a restart judged it, and whether the content the
// workload reads differs from the judged one.
type version struct {
	rv      string
	differs bool
}

func newRestarts() *restarts {
	return &restarts{done: map[key]*restart{}, inFlight: map[key]*restart{}}
}

// begin notes a patch of w about to be sent, with what its configs were judged against. cached
// gives each config's version in the cache now: it may have changed since it was judged, its
// event handled already.
func (s *restarts) begin(w key, reads map[policy.ConfigRef]*read, cached func(policy.ConfigRef, *read) (version, bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for r, rd := range reads {
		if v, ok := cached(r, rd); ok {
			rd.since = append(rd.since, v)
		}
	}
	s.inFlight[w] = &restart{reads: reads}
}

// finished ends the patch in flight: rv is what it wrote ("" when it failed, which restarted
// nothing: the restart before it still holds).
func (s *restarts) finished(w key, rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.inFlight[w]
	delete(s.inFlight, w)
	if p == nil || rv == "" {
		return
	}
	p.rv = rv
	for _, rd := range p.reads {
		var last []version
		for _, v := range rd.since {
			if writtenBefore(v.rv, rv) {
				last = []version{v}
			}
		}
		rd.since = last
	}
	s.done[w] = p
}

// configChanged notes a new version rv of config c; differs tells, for the keys a workload reads,
// whether its content differs from a judged one.
func (s *restarts) configChanged(c key, rv string, differs func(rd *read) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := policy.ConfigRef{Kind: c.kind, Name: c.name}
	for w, p := range s.inFlight {
		if rd := p.reads[r]; rd != nil && w.namespace == c.namespace {
			rd.since = append(rd.since, version{rv, differs(rd)})
		}
	}
	for w, p := range s.done {
		if rd := p.reads[r]; rd != nil && w.namespace == c.namespace && writtenBefore(rv, p.rv) {
			rd.since = []version{{rv, differs(rd)}}
		}
	}
}

// unseen reports whether the pods of w's last restart read a content of r other than the one its
// marker was judged against.
func (s *restarts) unseen(w key, r policy.ConfigRef) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.done[w]
	if p == nil || p.reads[r] == nil {
		return false
	}
	since := p.reads[r].since
	return len(since) > 0 && since[len(since)-1].differs
}

func (s *restarts) workloadGone(w key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.done, w)
	delete(s.inFlight, w)
}

// unseenChange notes a config's new content for the restarts that may not have seen it.
func (c *Controller) unseenChange(k key, rec *configRecord) {
	c.restarts.configChanged(k, rec.ResourceVersion, func(rd *read) bool { return c.content(rec, rd.keys).Value != rd.value })
}
