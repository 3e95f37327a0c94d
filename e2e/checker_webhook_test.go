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
)

// Generator version 10: `--webhook-url` sequences (reloader/webhook.go). In a share of the
// sequences with validated configs, the reloader calls a receiver of the test's instead of
// reloading: a change of a config POSTs {"webhook":"update successful"}, which names no config.
// The receiver is the observer:
//   - no workload is restarted by the reloader;
//   - webhookInvalid (after a quiet point): content that does not validate calls nothing
//     within the coalescing period and 3 s, with nothing else changing, and the next valid
//     content of that config calls the webhook (when the state knew the config);
//   - after the final change of every config, at least one call.
//
// Calls are not counted against changes: a restart between a call and its state write calls
// again, and the body names no config.

// webhookInvalidEvery: how often, after a main action, a webhook sequence judges validation.
const webhookInvalidEvery = 6

// webhookBody is what --webhook-url posts (stakater's).
const webhookBody = `{"webhook":"update successful"}`

// webhookMode draws a --webhook-url sequence: a fifth of the sequences with validated configs that
// run neither where rollouts complete nor over all namespaces.
func (g *generator) webhookMode(s sequence) bool {
	return !s.Rollouts && !s.NsSelector && len(s.Validated) > 0 && g.eleventh.IntN(5) == 0
}

// webhookInvalid draws a quiet point, then an invalid content of a validated config that exists
// and is not ignored, then a valid one. Nil when there is none.
func (g *generator) webhookInvalid() []action {
	var live []string
	for _, c := range g.validated {
		if g.configs[c] && !g.ignored[c] {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return []action{{Op: "quiet"}, {Op: "webhook-invalid", Target: pick(g.eleventh, live), Value: fmt.Sprint(7000 + g.eleventh.IntN(1000))}}
}

// receiver is the webhook's receiving end: when each call came, and what was wrong with any.
type receiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []time.Time
	bad   []violation
}

func newReceiver() *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls = append(r.calls, time.Now())
		if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" || !bytes.Equal(bytes.TrimSpace(body), []byte(webhookBody)) {
			r.bad = append(r.bad, violation(fmt.Sprintf("webhook: a call was %s %s (%s), want POST %s (application/json)",
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
func (w *world) webhookInvalid(a action) error {
	ignored := w.rec.ignoredNow(a.Target)
	data, ok := w.rec.current(a.Target)
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
	at, err := write(invalidJSON)
	if err != nil {
		return err
	}
	quiet := w.seq.Coalesce + 3*time.Second
	time.Sleep(quiet)
	if n := w.hook.since(at); n > 0 {
		w.hookViolations = append(w.hookViolations, violation(fmt.Sprintf("webhook: %d call(s) within %s of %s's content that does not validate, nothing else changing",
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
		w.hookViolations = append(w.hookViolations, violation(fmt.Sprintf("webhook: no call within 30 s of %s's change to valid content a=%s", a.Target, a.Value)))
	}
	return nil
}

// webhookViolations is what the oracle holds a --webhook-url sequence to: a receiver's call of
// the wrong form, a judged validation, no restart of a workload, and a call after the final
// round (once it began). The caller holds no lock.
func (w *world) webhookViolations() []violation {
	out := append([]violation(nil), w.hookViolations...)
	w.hook.mu.Lock()
	out = append(out, w.hook.bad...)
	w.hook.mu.Unlock()
	out = append(out, w.rec.reloaderRestarts()...)
	if !w.finalAt.IsZero() && w.hook.since(w.finalAt) == 0 {
		out = append(out, violation("webhook: no call after the final change of every config"))
	}
	return out
}
