// Package alert posts a message about each reload to a chat or webhook sink (Slack, Microsoft
// Teams, Google Chat, or a plain-text webhook), configured by stakater Reloader's ALERT_*
// environment variables. It knows sinks, payloads and delivery, and nothing of Kubernetes: a
// post happens after the reload, from a bounded queue, so a slow or failing sink never delays
// one.
package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Sinks, as ALERT_SINK names them; anything else is the plain-text webhook, as in stakater.
const (
	SinkSlack      = "slack"
	SinkTeams      = "teams"
	SinkGoogleChat = "gchat"
	SinkWebhook    = "webhook"
)

// Config is where and how alerts are posted.
type Config struct {
	Sink           string // slack, teams, gchat or webhook
	URL            string // never logged: a chat webhook URL carries its token
	Proxy          string // optional HTTP proxy URL
	AdditionalInfo string // prefixed to every message ("<info> : <message>"), e.g. a cluster name
}

// FromEnv reads stakater's variables: ALERT_ON_RELOAD ("true" turns alerts on), ALERT_SINK,
// ALERT_WEBHOOK_URL, ALERT_WEBHOOK_PROXY and ALERT_ADDITIONAL_INFO. on is false when alerts are
// off; an error names the variable that is wrong.
func FromEnv(lookup func(string) (string, bool)) (cfg Config, on bool, err error) {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	if get("ALERT_ON_RELOAD") != "true" {
		return Config{}, false, nil
	}
	cfg = Config{Sink: strings.ToLower(get("ALERT_SINK")), URL: get("ALERT_WEBHOOK_URL"),
		Proxy: get("ALERT_WEBHOOK_PROXY"), AdditionalInfo: get("ALERT_ADDITIONAL_INFO")}
	switch cfg.Sink {
	case SinkSlack, SinkTeams, SinkGoogleChat:
	default:
		cfg.Sink = SinkWebhook
	}
	if u, err := url.Parse(cfg.URL); err != nil || u.Scheme == "" || u.Host == "" {
		return Config{}, false, errors.New("ALERT_WEBHOOK_URL: ALERT_ON_RELOAD is true, but this is not an absolute http(s) URL")
	}
	if cfg.Proxy != "" {
		if _, err := url.Parse(cfg.Proxy); err != nil {
			return Config{}, false, errors.New("ALERT_WEBHOOK_PROXY: not a URL")
		}
	}
	return cfg, true, nil
}

// Payload is the request body and content type a sink takes for msg: Slack an attachment,
// Teams a card text, Google Chat a text message, the webhook the text without stakater's
// *bold* marks.
func Payload(sink, msg string) (contentType string, body []byte) {
	var v any
	switch sink {
	case SinkSlack:
		v = map[string]any{"attachments": []map[string]string{{"text": msg, "color": "good", "author_name": "Reloader"}}}
	case SinkTeams, SinkGoogleChat:
		v = map[string]string{"text": msg}
	default:
		return "text/plain", []byte(strings.ReplaceAll(msg, "*", ""))
	}
	body, _ = json.Marshal(v) // maps of strings always encode
	return "application/json", body
}

// ConfigRef names a config in a reload message.
type ConfigRef struct{ Kind, Name string }

// ReloadMessage is stakater's sentence for a reload, naming every config that caused it.
// Only names, kinds and namespaces: never a value.
func ReloadMessage(configs []ConfigRef, namespace, workloadKind, workload string) string {
	parts := make([]string, len(configs))
	for i, c := range configs {
		parts[i] = fmt.Sprintf("*%s* of type *%s*", c.Name, strings.ToUpper(c.Kind))
	}
	return fmt.Sprintf("Reloader detected changes in %s in namespace *%s*. Hence reloaded *%s* of type *%s* in namespace *%s*",
		strings.Join(parts, " and "), namespace, workload, workloadKind, namespace)
}

// Results of a post, as Counter receives them.
const (
	ResultSent    = "sent"
	ResultFailed  = "failed"  // the sink answered an error, or did not answer within the timeout
	ResultDropped = "dropped" // the queue was full
)

// Sender posts messages from a bounded queue, one at a time, each within a timeout.
type Sender struct {
	cfg     Config
	client  *http.Client
	timeout time.Duration
	queue   chan string
	log     *slog.Logger
	count   func(result string)
}

// Options tune a Sender; zero values take the defaults.
type Options struct {
	QueueSize int           // messages waiting at most (default 100); more are dropped
	Timeout   time.Duration // per post (default 10s)
	Log       *slog.Logger
	Count     func(result string) // called once per message with its result
}

// New builds a Sender; Run delivers.
func New(cfg Config, o Options) (*Sender, error) {
	if o.QueueSize <= 0 {
		o.QueueSize = 100
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Count == nil {
		o.Count = func(string) {}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.Proxy != "" {
		p, err := url.Parse(cfg.Proxy)
		if err != nil {
			return nil, errors.New("alert proxy: not a URL")
		}
		transport.Proxy = http.ProxyURL(p)
	}
	client := &http.Client{Transport: transport,
		// As stakater: a redirect from a chat webhook means a wrong token; following it could
		// send the message elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return errors.New("the sink answered with a redirect") }}
	return &Sender{cfg: cfg, client: client, timeout: o.Timeout, queue: make(chan string, o.QueueSize), log: o.Log, count: o.Count}, nil
}

// Send queues msg without ever blocking; when the queue is full the message is dropped and
// counted.
func (s *Sender) Send(msg string) {
	if s.cfg.AdditionalInfo != "" {
		msg = s.cfg.AdditionalInfo + " : " + msg
	}
	select {
	case s.queue <- msg:
	default:
		s.count(ResultDropped)
		s.log.Warn("alert dropped: the queue of alerts is full (the sink is slow or down)", "sink", s.cfg.Sink)
	}
}

// Run posts queued messages until ctx ends; those still queued then are not sent.
func (s *Sender) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case msg := <-s.queue:
			if err := s.post(ctx, msg); err != nil {
				s.count(ResultFailed)
				s.log.Error("alert not delivered", "sink", s.cfg.Sink, "err", err)
				continue
			}
			s.count(ResultSent)
		}
	}
}

// post sends one message. Errors never include the URL, which holds the sink's token.
func (s *Sender) post(ctx context.Context, msg string) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	typ, body := Payload(s.cfg.Sink, msg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return errors.New("build the request: the webhook URL is not valid")
	}
	req.Header.Set("Content-Type", typ)
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("post to the %s sink: %w", s.cfg.Sink, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("post to the %s sink: answered %s", s.cfg.Sink, resp.Status)
	}
	return nil
}
