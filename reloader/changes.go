package reloader

import (
	"sync"
	"time"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/workload"
)

// changeLog remembers, per config, when its current content was first observed while running
// (for the latency metric) and whether a change arrived since its last sync (a fresh change
// extends its dependents' windows; a re-check does not).
type changeLog struct {
	mu    sync.Mutex
	since map[workload.Key]time.Time
	fresh map[workload.Key]bool
}

func newChangeLog() *changeLog {
	return &changeLog{since: map[workload.Key]time.Time{}, fresh: map[workload.Key]bool{}}
}

// observe notes a change of config k seen at now.
func (l *changeLog) observe(k workload.Key, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.since[k]; !ok {
		l.since[k] = now
	}
	l.fresh[k] = true
}

// take reports whether a change of k arrived since the last take, and clears that.
func (l *changeLog) take(k workload.Key) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	fresh := l.fresh[k]
	delete(l.fresh, k)
	return fresh
}

// forget drops k once its content is fully rolled out, unless a change arrived during the sync
// that found it so: that one is still to be judged.
func (l *changeLog) forget(k workload.Key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.fresh[k] {
		delete(l.since, k)
	}
}

// oldest returns the earliest observation among the configs of a reload.
func (l *changeLog) oldest(ns string, changes []policy.Change) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out time.Time
	for _, ch := range changes {
		if t, ok := l.since[workload.ConfigKey(ch.Ref, ns)]; ok && (out.IsZero() || t.Before(out)) {
			out = t
		}
	}
	return out, !out.IsZero()
}
