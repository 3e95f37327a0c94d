package e2e

import (
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/reloader/reloader/e2e/checker"
)

// replicas are the reloader processes of a sequence: their start, stop, kill and downtime, and
// which of them leads.
type replicas struct {
	*env
	kube    string // the kubeconfig through the gate
	hookURL string // --webhook-url's receiver, "" for none
	scope   *scope

	procs []*proc
	downs map[int]downtime // replicas stopped by a down action, by index in procs
	mu    sync.Mutex
	// stopping holds the replicas the checker stopped: an exit of any other one that led is a
	// leader lost on its own (its renew deadline passed in an outage), which opens a span with
	// no leader as a stop does.
	stopping map[*proc]bool
}

// downtime is a replica stopped for a while: it starts again at the first action after until.
type downtime struct {
	from, until time.Time
}

// start launches the sequence's replicas and waits until each is ready.
func (r *replicas) start() {
	for range r.seq.Replicas {
		r.procs = append(r.procs, r.launch())
	}
	for _, p := range r.procs {
		p.waitReady(r.t)
	}
}

func (r *replicas) launch() *proc {
	args := []string{"--coalesce-period", r.seq.Coalesce.String()}
	if r.seq.Replicas > 1 {
		args = append(args, electionFlags[2:]...)
	}
	if r.seq.OnCreate {
		args = append(args, "--reload-on-create")
	}
	if r.seq.OnDelete {
		args = append(args, "--reload-on-delete")
	}
	if r.seq.Strategy != "" {
		args = append(args, "--reload-strategy", r.seq.Strategy)
	}
	switch {
	case r.seq.Rollback && r.seq.Rollouts:
		args = append(args, "--rollback", "--rollout-timeout", rolloutsTimeout.String())
	case r.seq.Rollback:
		args = append(args, "--rollback", "--rollout-timeout", checker.RolloutTimeout.String())
	}
	switch r.seq.Window {
	case "open":
		args = append(args, "--reload-window", checker.OpenWindow)
	case "closed":
		args = append(args, "--reload-window", checker.ClosedWindow(time.Now()))
	}
	if r.seq.NsSelector {
		args = append(args, r.scope.args()...)
	}
	if r.hookURL != "" {
		args = append(args, "--webhook-url", r.hookURL)
	}
	if r.seq.Argo {
		args = append(args, "--is-argo-rollouts")
	}
	p := launch(r.t, r.ns, r.kube, args...)
	go r.watch(p)
	return p
}

// watch records when process p begins from the state it found: once it leads and is ready (its
// state loaded, its caches synced). Its launch time would be too early: a process started
// during an outage loads the state only once the API server answers, possibly after the state
// lost an entry (checker's forgotten). With it goes when the process began to act, by its log:
// the restarts its workers made before it was seen ready are its own. It also records a leader
// that exits on its own as a stop (soak seed 1795476458054184883: a leader past its renew
// deadline in an outage, and a workload created before the next one led).
func (r *replicas) watch(p *proc) {
	led := false
	for r.ctx.Err() == nil {
		if _, exited := p.wait(0); exited {
			r.mu.Lock()
			own := r.stopping[p]
			r.mu.Unlock()
			if led && !own {
				r.rec.Stopped()
			}
			return
		}
		if !led && p.scrape("reloader_leader") == "1" && p.ready(0) {
			r.rec.Started(checker.ActingFrom(p.stderr.String()))
			led = true
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop notes that the checker stops replica i, before it does.
func (r *replicas) stop(i int) {
	r.mu.Lock()
	r.stopping[r.procs[i]] = true
	r.mu.Unlock()
	r.rec.Stopped()
}

// restart stops a replica (SIGTERM, or kill -9 with kill) and starts it again.
func (r *replicas) restart(kill bool) {
	i := r.rnd.IntN(len(r.procs))
	r.stop(i)
	if kill {
		r.faults["kill -9"]++
		r.rec.Killed()
		r.procs[i].kill()
	} else {
		r.faults["sigterm"]++
		_ = r.procs[i].cmd.Process.Signal(syscall.SIGTERM)
		r.procs[i].wait(30 * time.Second)
	}
	time.Sleep(time.Duration(r.rnd.IntN(1500)) * time.Millisecond)
	r.up(i)
}

// down stops one replica (SIGTERM or kill -9) for d: the actions made meanwhile reach it at its
// next start, all at once. It starts again at the first action after d (wake).
func (r *replicas) down(d time.Duration) {
	i := r.rnd.IntN(len(r.procs))
	if _, stopped := r.downs[i]; stopped {
		return
	}
	r.faults["down"]++
	r.stop(i)
	if r.rnd.IntN(2) == 0 {
		r.rec.Killed()
		r.procs[i].kill()
	} else {
		_ = r.procs[i].cmd.Process.Signal(syscall.SIGTERM)
		r.procs[i].wait(30 * time.Second)
	}
	now := time.Now()
	r.downs[i] = downtime{from: now, until: now.Add(d)}
}

// wake starts the replicas whose downtime has passed, or all of them with all set.
func (r *replicas) wake(all bool) {
	for i, d := range r.downs {
		if all || time.Now().After(d.until) {
			r.up(i)
		}
	}
}

// up starts replica i again. A downtime it ends counts as a blind spell: the replica catches up
// with what happened meanwhile in no particular order, as after an outage.
func (r *replicas) up(i int) {
	if d, ok := r.downs[i]; ok {
		delete(r.downs, i)
		r.rec.BlindFrom(d.from, time.Now())
	}
	r.procs[i] = r.launch()
}

// revive starts again every replica that exited, until all are ready and one leads: a leader
// cut off past its renew deadline exits by design, and Kubernetes would start it again. It may
// exit once more while the Lease settles, so it tries a few rounds.
func (r *replicas) revive() {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		for i, p := range r.procs {
			if _, exited := p.wait(0); exited {
				r.t.Logf("replica %d had exited; restarting it:\n%s", i, tail(p.stderr.String(), 5))
				r.procs[i] = r.launch()
			}
		}
		allReady := true
		for _, p := range r.procs {
			allReady = allReady && p.ready(10*time.Second)
		}
		// A standby is ready too; the state is loaded only once one of them leads.
		if allReady && r.leading(10*time.Second) {
			return
		}
		if time.Now().After(deadline) {
			for i, p := range r.procs {
				r.t.Logf("replica %d:\n%s", i, tail(p.stderr.String(), 30))
			}
			r.t.Fatal("the reloader replicas did not all become ready, one leading, within 2 minutes of the faults' end")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// leading waits up to timeout for a replica that leads and is ready: its state is loaded and
// its caches synced.
func (r *replicas) leading(timeout time.Duration) bool {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for _, p := range r.procs {
			if p.scrape("reloader_leader") == "1" && p.ready(0) {
				return true
			}
		}
	}
	return false
}

// lastArgs are the flags of the replica launched last.
func (r *replicas) lastArgs() []string {
	return r.procs[len(r.procs)-1].cmd.Args[1:]
}

func (r *replicas) logTails() {
	for i, p := range r.procs {
		r.t.Logf("replica %d log (tail):\n%s", i, tail(p.stderr.String(), *logTail))
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
