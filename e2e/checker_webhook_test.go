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

// webhookInvalid writes content of a.Target that does not validate, and holds the reloader to
// calling nothing for it; then a valid content, which must call the webhook if the state knew
// the config (a config the state lost is a first content, as for workloads).
func (w *world) webhookInvalid(a checker.Action) error {
	ignored := w.rec.Configs.IgnoredNow(a.Target)
	data, ok := w.rec.Configs.Current(a.Target)
	if w.hook == nil || ignored || !ok {
		return nil
	}
	e, err := w.stateEntry(a.Target)
	known := err == nil && e != "" && !strings.HasPrefix(e, "deleted@")
	write := func(v string) (time.Time, error) {
		w.noteUnknown(a.Target)
		data["a"] = v
		at := time.Now()
		return at, w.retry(a.String(), func() error { return w.writeConfig(a.Target, data, false) })
	}
	w.faults["webhook: invalid content judged"]++
	at, err := write(checker.InvalidJSON)
	if err != nil {
		return err
	}
	quiet := w.seq.Coalesce + 3*time.Second
	time.Sleep(quiet)
	if n := w.hook.since(at); n > 0 {
		w.hookViolations = append(w.hookViolations, checker.Violation(fmt.Sprintf("webhook: %d call(s) within %s of %s's content that does not validate, nothing else changing",
			n, quiet, a.Target)))
	}
	if at, err = write(a.Value); err != nil || !known {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for w.hook.since(at) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if w.hook.since(at) == 0 {
		w.hookViolations = append(w.hookViolations, checker.Violation(fmt.Sprintf("webhook: no call within 30 s of %s's change to valid content a=%s", a.Target, a.Value)))
	}
	return nil
}

// webhookViolations is what the oracle holds a --webhook-url sequence to: a receiver's call of
// the wrong form, a judged validation, no restart of a workload, and a call after the final
// round (once it began). The caller holds no lock.
func (w *world) webhookViolations() []checker.Violation {
	out := append([]checker.Violation(nil), w.hookViolations...)
	w.hook.mu.Lock()
	out = append(out, w.hook.bad...)
	w.hook.mu.Unlock()
	out = append(out, w.rec.Oracle.ReloaderRestarts()...)
	if !w.finalAt.IsZero() && w.hook.since(w.finalAt) == 0 {
		out = append(out, checker.Violation("webhook: no call after the final change of every config"))
	}
	return out
}
