package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/reloader/reloader/e2e/checker"
)

// webhookBody is what --webhook-url posts (stakater's).
const webhookBody = `{"webhook":"update successful"}`

// receiver is the webhook's receiving end: when each call came, and what was wrong with any.
type receiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []time.Time
	bad   []checker.Violation
}

func newReceiver() *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls = append(r.calls, time.Now())
		if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" || !bytes.Equal(bytes.TrimSpace(body), []byte(webhookBody)) {
			r.bad = append(r.bad, checker.Violation(fmt.Sprintf("webhook: a call was %s %s (%s), want POST %s (application/json)",
				req.Method, strings.TrimSpace(string(body)), req.Header.Get("Content-Type"), webhookBody)))
		}
	}))
	return r
}

// since counts the calls at or after t.
func (r *receiver) since(t time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		if !c.Before(t) {
			n++
		}
	}
	return n
}

// last is when the last call came (zero for none).
func (r *receiver) last() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) == 0 {
		return time.Time{}
	}
	return r.calls[len(r.calls)-1]
}

// webhookCheck holds a --webhook-url sequence to its promises about the webhook's calls: none
// for a content that does not validate, one for a valid change, one after the final round.
type webhookCheck struct {
	*env
	recv *receiver // nil where the sequence has no --webhook-url
	cfgs *configEdits
	// found are what invalid found; finalAt is when the final round began.
	found   []checker.Violation
	finalAt time.Time
}

// invalid writes content of a.Target that does not validate, and holds the reloader to
// calling nothing for it; then a valid content, which must call the webhook if the state knew
// the config (a config the state lost is a first content, as for workloads).
func (h *webhookCheck) invalid(a checker.Action) error {
	ignored := h.rec.Configs.IgnoredNow(a.Target)
	data, ok := h.rec.Configs.Current(a.Target)
	if h.recv == nil || ignored || !ok {
		return nil
	}
	e, err := h.cfgs.stateEntry(a.Target)
	known := err == nil && e != "" && !strings.HasPrefix(e, "deleted@")
	write := func(v string) (time.Time, error) {
		h.cfgs.noteUnknown(a.Target)
		data["a"] = v
		at := time.Now()
		return at, h.retry(a.String(), func() error { return h.cfgs.writeConfig(a.Target, data, false) })
	}
	h.faults["webhook: invalid content judged"]++
	at, err := write(checker.InvalidJSON)
	if err != nil {
		return err
	}
	quiet := h.seq.Coalesce + 3*time.Second
	time.Sleep(quiet)
	if n := h.recv.since(at); n > 0 {
		h.found = append(h.found, checker.Violation(fmt.Sprintf("webhook: %d call(s) within %s of %s's content that does not validate, nothing else changing",
			n, quiet, a.Target)))
	}
	if at, err = write(a.Value); err != nil || !known {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for h.recv.since(at) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if h.recv.since(at) == 0 {
		h.found = append(h.found, checker.Violation(fmt.Sprintf("webhook: no call within 30 s of %s's change to valid content a=%s", a.Target, a.Value)))
	}
	return nil
}

// violations is what the oracle holds a --webhook-url sequence to: a receiver's call of
// the wrong form, a judged validation, no restart of a workload, and a call after the final
// round (once it began). The caller holds no lock.
func (h *webhookCheck) violations() []checker.Violation {
	out := append([]checker.Violation(nil), h.found...)
	h.recv.mu.Lock()
	out = append(out, h.recv.bad...)
	h.recv.mu.Unlock()
	out = append(out, h.rec.Oracle.ReloaderRestarts()...)
	if !h.finalAt.IsZero() && h.recv.since(h.finalAt) == 0 {
		out = append(out, checker.Violation("webhook: no call after the final change of every config"))
	}
	return out
}
