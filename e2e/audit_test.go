package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// auditEvent is the part of a kube-apiserver audit event (audit.k8s.io/v1) the tests read.
type auditEvent struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Received metav1.MicroTime `json:"requestReceivedTimestamp"`
	Done     metav1.MicroTime `json:"stageTimestamp"`
}

// write is one write request of a replica, as the API server saw it.
type write struct {
	replica, verb, what string
	code                int
	received, done      time.Time
}

func (w write) String() string {
	return fmt.Sprintf("%s %s %s (%d) at %s", w.replica, w.verb, w.what, w.code, w.received.Format("15:04:05.000000"))
}

// replicaWrites reads the audit log: the write requests made in namespace ns by processes
// launched with launchAs under a name starting "reloader-", Lease writes apart.
func replicaWrites(t *testing.T, ns string) (leases, others []write) {
	t.Helper()
	f, err := os.Open(cluster.AuditLog)
	if err != nil {
		t.Fatalf("the audit log: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			continue // the line the API server is writing now
		}
		name, _, _ := strings.Cut(ev.UserAgent, "/")
		if ev.ObjectRef == nil || ev.ObjectRef.Namespace != ns || !strings.HasPrefix(name, "reloader-") {
			continue
		}
		w := write{replica: name, verb: ev.Verb, what: ev.ObjectRef.Resource + "/" + ev.ObjectRef.Name,
			received: ev.Received.Time, done: ev.Done.Time}
		if ev.ResponseStatus != nil {
			w.code = ev.ResponseStatus.Code
		}
		if ev.ObjectRef.Resource == "leases" {
			leases = append(leases, w)
		} else {
			others = append(others, w)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read the audit log: %v", err)
	}
	return leases, others
}

// minGap is the least time between the last write of one leader and the first of the next. By
// the timing rule (see leader.Election) a leader's last write leaves before its renew deadline R
// and the next leader acts no sooner than the Lease duration D after the same instant: 1s apart
// with these tests' flags. 100ms of that is left for the API server's handling of the request.
const minGap = 900 * time.Millisecond

// checkNoTwoActed fails unless, by the API server's clock, the writes of distinct replicas (a
// workload patch, a state write, an Event; accepted or not) never interleave and are at least
// minGap apart, no replica wrote before it held the Lease, and at least wantLeaders replicas led
// and wrote: otherwise the check proves nothing.
//
// A replica acquires the Lease with its first accepted Lease write: a standby writes the Lease
// only to take it, and a replica that loses the Lease exits, so each process leads once.
func checkNoTwoActed(t *testing.T, ns string, wantLeaders int) {
	t.Helper()
	leases, others := replicaWrites(t, ns)
	acquired := map[string]time.Time{}
	for _, l := range leases {
		if _, ok := acquired[l.replica]; !ok && l.code < 300 {
			acquired[l.replica] = l.done
		}
	}
	type term struct {
		replica     string
		first, last write
		writes      int
	}
	terms := map[string]*term{}
	for _, w := range others {
		if at, ok := acquired[w.replica]; !ok || !w.received.After(at) {
			t.Errorf("%s: written before the replica held the Lease", w)
		}
		tm := terms[w.replica]
		if tm == nil {
			tm = &term{replica: w.replica, first: w, last: w}
			terms[w.replica] = tm
		}
		if w.received.Before(tm.first.received) {
			tm.first = w
		}
		if w.done.After(tm.last.done) {
			tm.last = w
		}
		tm.writes++
	}
	var order []*term
	for _, tm := range terms {
		order = append(order, tm)
	}
	sort.Slice(order, func(i, j int) bool { return order[i].first.received.Before(order[j].first.received) })
	for i, tm := range order {
		t.Logf("audit: %s acquired the Lease at %s, wrote %d times from %s to %s", tm.replica, acquired[tm.replica].Format("15:04:05.000"),
			tm.writes, tm.first.received.Format("15:04:05.000"), tm.last.done.Format("15:04:05.000"))
		if i == 0 {
			continue
		}
		prev := order[i-1]
		if gap := tm.first.received.Sub(prev.last.done); gap < minGap {
			t.Errorf("two replicas acted: %s wrote %s after %s's last write, less than %s\n  last:  %s\n  first: %s",
				tm.replica, gap.Round(time.Millisecond), prev.replica, minGap, prev.last, tm.first)
		} else {
			t.Logf("audit: %s first wrote %s after %s last did", tm.replica, gap.Round(time.Millisecond), prev.replica)
		}
	}
	if len(order) < wantLeaders {
		t.Errorf("the audit log shows %d replicas that led and wrote, want at least %d: the check proves nothing", len(order), wantLeaders)
	}
}
