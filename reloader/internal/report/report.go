// Package report says things once: it records the reloader's Events on workloads, and says a
// Warning once per workload, reason and message until it is cleared.
package report

import (
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// Reporter emits Events on workloads. A Warning is sent once per workload, reason and message,
// until it is cleared, so a problem that persists is said once, not at every retry.
type Reporter struct {
	recorder record.EventRecorder
	log      *slog.Logger

	mu   sync.Mutex
	said map[string]map[string]string // workload UID → reason → message
}

// New returns a Reporter that records through recorder.
func New(recorder record.EventRecorder, log *slog.Logger) *Reporter {
	return &Reporter{recorder: recorder, log: log, said: map[string]map[string]string{}}
}

// Event records an Event on obj.
func (r *Reporter) Event(obj any, typ, reason, message string) {
	if o, ok := obj.(runtime.Object); ok {
		r.recorder.Event(o, typ, reason, message)
	}
}

// Warn records a Warning unless the same one was already said for this workload; it reports
// whether it did.
func (r *Reporter) Warn(obj any, uid, reason, message string) bool {
	r.mu.Lock()
	if r.said[uid] == nil {
		r.said[uid] = map[string]string{}
	}
	seen := r.said[uid][reason] == message
	r.said[uid][reason] = message
	r.mu.Unlock()
	if !seen {
		r.Event(obj, corev1.EventTypeWarning, reason, message)
	}
	return !seen
}

// Clear forgets the given reasons for a workload, so they are said again if they recur.
func (r *Reporter) Clear(uid string, reasons ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, reason := range reasons {
		delete(r.said[uid], reason)
	}
	if len(r.said[uid]) == 0 {
		delete(r.said, uid)
	}
}

// Forget drops everything said about a deleted workload.
func (r *Reporter) Forget(uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.said, uid)
}
