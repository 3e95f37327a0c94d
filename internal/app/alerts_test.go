package app

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/reloader/reloader/internal/cli"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/reloader"
)

func TestNotifyReadsWebhookURLAndAlertVariables(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name       string
		webhookURL string
		env        map[string]string
		err        string
		webhook    bool
		alerts     bool
	}{
		{"nothing set", "", nil, "", false, false},
		{"webhook", "https://hooks.example/x", nil, "", true, false},
		{"webhook not a URL", "hooks.example", nil, "--webhook-url", false, false},
		{"alerts", "", map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_SINK": "teams", "ALERT_WEBHOOK_URL": "https://teams.example/x"}, "", false, true},
		{"alerts without URL", "", map[string]string{"ALERT_ON_RELOAD": "true"}, "ALERT_WEBHOOK_URL", false, false},
		{"alerts off", "", map[string]string{"ALERT_ON_RELOAD": "false", "ALERT_WEBHOOK_URL": "https://x.example"}, "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"ALERT_ON_RELOAD", "ALERT_SINK", "ALERT_WEBHOOK_URL"} {
				t.Setenv(k, tc.env[k])
			}
			var opts reloader.Options
			err := notify(cli.Flags{WebhookURL: tc.webhookURL}, &opts, log, metrics.New("test"))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil || (opts.Webhook.URL != "") != tc.webhook || (opts.Alerts != nil) != tc.alerts {
				t.Fatalf("err %v, webhook %q, alerts %v", err, opts.Webhook.URL, opts.Alerts != nil)
			}
		})
	}
}
