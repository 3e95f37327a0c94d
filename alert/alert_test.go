package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// sink is a local HTTP server standing in for a chat or webhook service; it records what it
// receives.
type sink struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []string
	types  []string
	got    chan struct{}
}

func newSink(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) *sink {
	s := &sink{got: make(chan struct{}, 100)}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies, s.types = append(s.bodies, string(body)), append(s.types, r.Header.Get("Content-Type"))
		s.mu.Unlock()
		s.got <- struct{}{}
		if handle != nil {
			handle(w, r)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// results counts the results a Sender reports.
type results struct {
	mu sync.Mutex
	n  map[string]int
	ch chan string
}

func newResults() *results { return &results{n: map[string]int{}, ch: make(chan string, 100)} }

func (r *results) count(result string) {
	r.mu.Lock()
	r.n[result]++
	r.mu.Unlock()
	r.ch <- result
}

func (r *results) wait(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-r.ch:
		if got != want {
			t.Fatalf("result %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no result within 10s, want %q", want)
	}
}

func start(t *testing.T, cfg Config, o Options) *Sender {
	t.Helper()
	s, err := New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

const msg = "Reloader detected changes in *app-config* of type *CONFIGMAP* in namespace *shop*. Hence reloaded *web* of type *Deployment* in namespace *shop*"

func TestEachSinkGetsItsPayload(t *testing.T) {
	for _, tc := range []struct {
		sink, contentType string
		check             func(t *testing.T, body string)
	}{
		{SinkSlack, "application/json", func(t *testing.T, body string) {
			var p struct {
				Attachments []map[string]string `json:"attachments"`
			}
			if err := json.Unmarshal([]byte(body), &p); err != nil || len(p.Attachments) != 1 ||
				p.Attachments[0]["text"] != "cluster-a : "+msg || p.Attachments[0]["author_name"] != "Reloader" || p.Attachments[0]["color"] != "good" {
				t.Fatalf("Slack payload %s", body)
			}
		}},
		{SinkTeams, "application/json", func(t *testing.T, body string) {
			var p map[string]string
			if err := json.Unmarshal([]byte(body), &p); err != nil || p["text"] != "cluster-a : "+msg {
				t.Fatalf("Teams payload %s", body)
			}
		}},
		{SinkGoogleChat, "application/json", func(t *testing.T, body string) {
			var p map[string]string
			if err := json.Unmarshal([]byte(body), &p); err != nil || p["text"] != "cluster-a : "+msg {
				t.Fatalf("Google Chat payload %s", body)
			}
		}},
		{SinkWebhook, "text/plain", func(t *testing.T, body string) {
			if want := "cluster-a : " + strings.ReplaceAll(msg, "*", ""); body != want {
				t.Fatalf("webhook body %q, want %q", body, want)
			}
		}},
	} {
		t.Run(tc.sink, func(t *testing.T) {
			k := newSink(t, nil)
			res := newResults()
			s := start(t, Config{Sink: tc.sink, URL: k.srv.URL + "/hook", AdditionalInfo: "cluster-a"}, Options{Count: res.count})
			s.Send(msg)
			res.wait(t, ResultSent)
			k.mu.Lock()
			defer k.mu.Unlock()
			if len(k.bodies) != 1 || k.types[0] != tc.contentType {
				t.Fatalf("sink got %d posts, content type %v; want 1 of %s", len(k.bodies), k.types, tc.contentType)
			}
			tc.check(t, k.bodies[0])
		})
	}
}

// A sink that never answers: Send returns at once, each post gives up at the timeout, and once
// the queue is full further messages are dropped and counted, never waited for.
func TestAHangingSinkNeverBlocksTheSender(t *testing.T) {
	release := make(chan struct{})
	k := newSink(t, func(http.ResponseWriter, *http.Request) { <-release })
	defer close(release)
	res := newResults()
	s := start(t, Config{Sink: SinkSlack, URL: k.srv.URL}, Options{QueueSize: 2, Timeout: 300 * time.Millisecond, Count: res.count})
	began := time.Now()
	for range 10 {
		s.Send(msg)
	}
	if took := time.Since(began); took > 50*time.Millisecond {
		t.Fatalf("10 Sends to a hanging sink took %s; Send must never wait", took)
	}
	<-k.got // the first post is in flight, hanging
	res.mu.Lock()
	dropped := res.n[ResultDropped]
	res.mu.Unlock()
	if dropped < 7 { // one in flight (at most one more taken before it), two queued
		t.Fatalf("%d messages dropped of 10 with a queue of 2 and a hanging sink; want at least 7", dropped)
	}
	for range dropped {
		res.wait(t, ResultDropped)
	}
	res.wait(t, ResultFailed) // the hanging post times out
}

func TestAFailingSinkIsCountedAndLoggedWithoutItsURL(t *testing.T) {
	for name, handle := range map[string]func(http.ResponseWriter, *http.Request){
		"500":      func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", 500) },
		"redirect": func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) },
	} {
		t.Run(name, func(t *testing.T) {
			k := newSink(t, handle)
			res := newResults()
			var log bytes.Buffer
			var mu sync.Mutex
			s := start(t, Config{Sink: SinkTeams, URL: k.srv.URL + "/webhookb2/SECRET-TOKEN"},
				Options{Count: res.count, Log: slog.New(slog.NewTextHandler(lockedWriter{&mu, &log}, nil))})
			s.Send(msg)
			res.wait(t, ResultFailed)
			s.Send(msg) // the sender goes on after a failure
			res.wait(t, ResultFailed)
			mu.Lock()
			defer mu.Unlock()
			if strings.Contains(log.String(), "SECRET-TOKEN") || !strings.Contains(log.String(), "alert not delivered") {
				t.Fatalf("log must say the alert failed, without the URL:\n%s", log.String())
			}
			k.mu.Lock()
			defer k.mu.Unlock()
			if len(k.bodies) != 2 {
				t.Fatalf("sink got %d posts, want 2 (a redirect is not followed)", len(k.bodies))
			}
		})
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestFromEnvReadsStakatersVariables(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want Config
		on   bool
		err  string
	}{
		{"off without ALERT_ON_RELOAD", map[string]string{"ALERT_WEBHOOK_URL": "https://x"}, Config{}, false, ""},
		{"off unless exactly true", map[string]string{"ALERT_ON_RELOAD": "yes", "ALERT_WEBHOOK_URL": "https://x"}, Config{}, false, ""},
		{"slack", map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_SINK": " Slack ", "ALERT_WEBHOOK_URL": " https://hooks.slack.com/services/T/B/X ",
			"ALERT_ADDITIONAL_INFO": " prod ", "ALERT_WEBHOOK_PROXY": "http://proxy:3128"},
			Config{Sink: SinkSlack, URL: "https://hooks.slack.com/services/T/B/X", AdditionalInfo: "prod", Proxy: "http://proxy:3128"}, true, ""},
		{"unknown sink is the webhook", map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_SINK": "raw", "ALERT_WEBHOOK_URL": "http://h/"},
			Config{Sink: SinkWebhook, URL: "http://h/"}, true, ""},
		{"gchat", map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_SINK": "gchat", "ALERT_WEBHOOK_URL": "https://chat.googleapis.com/v1/x"},
			Config{Sink: SinkGoogleChat, URL: "https://chat.googleapis.com/v1/x"}, true, ""},
		{"missing URL", map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_SINK": "teams"}, Config{}, false, "ALERT_WEBHOOK_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, on, err := FromEnv(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil || on != tc.on || cfg != tc.want {
				t.Fatalf("FromEnv = %+v, %v, %v; want %+v, %v", cfg, on, err, tc.want, tc.on)
			}
		})
	}
}

func TestReloadMessageNamesEveryConfig(t *testing.T) {
	got := ReloadMessage([]ConfigRef{{"ConfigMap", "app-config"}, {"Secret", "db"}}, "shop", "Deployment", "web")
	want := "Reloader detected changes in *app-config* of type *CONFIGMAP* and *db* of type *SECRET* in namespace *shop*. Hence reloaded *web* of type *Deployment* in namespace *shop*"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
