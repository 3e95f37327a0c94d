package alert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// WebhookBody is what stakater Reloader posts to --webhook-url on a config change, verbatim.
const WebhookBody = `{"webhook":"update successful"}`

// Webhook is --webhook-url: on a config change it is called instead of reloading anything.
type Webhook struct {
	URL     string // never logged: it may carry a token
	Timeout time.Duration
	Client  *http.Client // nil: http.DefaultClient's transport, no redirects followed
}

// Post sends WebhookBody as JSON, within the timeout (10 s when zero); an answer outside 2xx
// is an error. Errors never include the URL.
func (h Webhook) Post(ctx context.Context) error {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	client := h.Client
	if client == nil {
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return errors.New("the webhook answered with a redirect") }}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader([]byte(WebhookBody)))
	if err != nil {
		return errors.New("call --webhook-url: not a valid URL")
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("call --webhook-url: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("call --webhook-url: answered %s", resp.Status)
	}
	return nil
}
