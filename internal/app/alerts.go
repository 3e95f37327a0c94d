package app

import (
	"log/slog"
	"os"

	"github.com/reloader/reloader/alert"
	"github.com/reloader/reloader/internal/cli"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/reloader"
)

// notify sets up what stakater users configure besides flags: alerts after each reload
// (ALERT_ON_RELOAD and the other ALERT_* variables) and --webhook-url.
func notify(f cli.Flags, opts *reloader.Options, log *slog.Logger, m *metrics.Metrics) error {
	if f.WebhookURL != "" {
		if err := cli.CheckWebhookURL(f.WebhookURL); err != nil {
			return err
		}
		opts.Webhook = alert.Webhook{URL: f.WebhookURL}
		log.Warn("--webhook-url is set: config changes call the webhook, and no workload is reloaded")
	}
	cfg, on, err := alert.FromEnv(os.LookupEnv)
	if err != nil || !on {
		return err
	}
	opts.Alerts, err = alert.New(cfg, alert.Options{Log: log,
		Count: func(result string) { m.Alerts.WithLabelValues(result).Inc() }})
	if err != nil {
		return err
	}
	log.Info("alerts on reload are on", "sink", cfg.Sink)
	return nil
}
