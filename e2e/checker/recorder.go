package checker

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Recorder keeps the history the oracle judges: the checker's own writes, and every template
// change the API server reports through a watch that resumes across faults. Its own methods
// are the watch and what the executor reports of processes, faults and the state; Configs and
// Workloads take the executor's writes, and Oracle judges.
type Recorder struct {
	*history
}

func (r *Recorder) LastRestart() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changedAt
}

func NewRecorder(seq Sequence) *Recorder {
	return newRecorder(&history{configs: map[string][]configEvent{}, ignored: map[string][]modeEvent{},
		workloads: map[types.UID]*WorkloadLife{}, own: map[int64]bool{}, amnesia: map[string][]loss{}, unknownNext: map[string]bool{},
		onCreate: seq.OnCreate, onDelete: seq.OnDelete, window: seq.Window, rollback: seq.Rollback, rollouts: seq.Rollouts, argo: seq.Argo, validated: seq.Validated, jobsSeen: map[types.UID]bool{}})
}

// newRecorder gives h its parts.
func newRecorder(h *history) *Recorder {
	h.Configs, h.Workloads, h.Oracle = &ConfigLog{h}, &WorkloadLog{h}, &Oracle{h}
	h.reads, h.excess, h.gates = &reads{h}, &excess{h}, &gates{h}
	return &Recorder{h}
}

// ConfigLog records the executor's writes of configs: contents, deletions, ignore annotations
// and the state entries it forged.
type ConfigLog struct{ *history }

// WorkloadLog records the executor's writes of workloads: creations, edits, deletions, and
// the pauses it made as their owner.
type WorkloadLog struct{ *history }

// reads says what a workload's pods read of a config: when they started, whether they wait for
// a config, and the content they began with.
type reads struct{ *history }

// Oracle judges the recorded history: changes lost, restarts in excess (through excess), and
// the summary of what it judged.
type Oracle struct{ *history }

// excess finds the restarts by the reloader that no change explains.
type excess struct{ *history }

// gates judges reloads against their gates, owner pauses, rollouts and rollbacks.
type gates struct{ *history }

// UnknownBefore notes whether the state holds no content for config name, just before the
// checker's next write of it.
func (r *Recorder) UnknownBefore(name string, unknown bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unknownNext[name] = unknown
}

// Forget notes that the state lost the entries of configs: corrupted, or a tombstone with no
// hash.
func (r *Recorder) Forget(configs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range configs {
		r.amnesia[c] = append(r.amnesia[c], loss{at: time.Now()})
	}
}

// StateDeleted notes that the checker deleted the state ConfigMap.
func (r *Recorder) StateDeleted() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for _, c := range JudgedConfigs {
		r.amnesia[c] = append(r.amnesia[c], loss{at: now, deleted: now})
	}
	r.stateLosses = append(r.stateLosses, now)
}

// StateGone notes that the state ConfigMap was found missing before a write of config c: lost
// at its last deletion, or never written.
func (r *Recorder) StateGone(c string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := loss{at: time.Now()}
	if n := len(r.stateLosses); n > 0 {
		l.deleted = r.stateLosses[n-1]
	}
	r.amnesia[c] = append(r.amnesia[c], l)
}

func (r *Recorder) SetStep(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.step = s
}

// Stopped notes that a replica was stopped (SIGTERM, kill -9, a downtime), or that a leader exited
// on its own.
func (r *Recorder) Stopped() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leaderless.IsZero() {
		r.leaderless = time.Now()
	}
}

// ActingFrom is when a reloader process's log says it began to act: its caches synced, just
// before its workers start (reloader/controller.go), to the millisecond its log gives. Zero when
// it has not said so.
func ActingFrom(log string) time.Time {
	for line := range strings.Lines(log) {
		if !strings.Contains(line, ` msg="caches synced; reloading" `) {
			continue
		}
		v, ok := strings.CutPrefix(line, "time=")
		v, _, _ = strings.Cut(v, " ")
		if at, err := time.Parse(time.RFC3339Nano, v); ok && err == nil {
			return at
		}
	}
	return time.Time{}
}

// Started notes that a process leads and is ready, having begun to act at acting (zero:
// unknown, taken as now): its start-up pass may restart workloads before it is seen ready.
func (r *Recorder) Started(acting time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if !r.leaderless.IsZero() {
		r.blind = append(r.blind, [2]time.Time{r.leaderless, now})
		r.leaderless = time.Time{}
	}
	if acting.IsZero() || acting.After(now) {
		acting = now
	}
	r.starts, r.acting = append(r.starts, now), append(r.acting, acting)
}

func (r *Recorder) BlindFrom(from, to time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blind = append(r.blind, [2]time.Time{from, to})
}

// CutOff notes an outage or an API server restart from from to to: a blind spell in which the
// running reloaders' watches saw nothing, so they acted on what they saw before it.
func (r *Recorder) CutOff(from, to time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blind = append(r.blind, [2]time.Time{from, to})
	r.cuts = append(r.cuts, [2]time.Time{from, to})
}

// Killed notes a kill -9 of a replica.
func (r *Recorder) Killed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kills = append(r.kills, time.Now())
}

// KeyLost notes that the key of Secret hashes was deleted or replaced.
func (r *Recorder) KeyLost() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keyLosses = append(r.keyLosses, time.Now())
}
