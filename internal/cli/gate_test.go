package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
)

// stakater's pause flags, spelled as its chart passes them, rename the annotations; the gate
// flags reach the controller's options.
func TestGateAndPauseFlags(t *testing.T) {
	var cli Flags
	parser, err := kong.New(&cli)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse([]string{
		"--pause-deployment-annotation", "example.com/pause",
		"--pause-deployment-time-annotation", "example.com/paused",
		"--reload-window", "Mon-Fri 22:00-06:00 Europe/Berlin; Sat,Sun 00:00-24:00",
		"--min-reload-interval", "30s",
	}); err != nil {
		t.Fatal(err)
	}
	a := cli.annotations()
	if a.PausePeriod != "example.com/pause" || a.PausedAt != "example.com/paused" {
		t.Errorf("pause annotations %q, %q", a.PausePeriod, a.PausedAt)
	}
	o := cli.Options("ns", "ns", nil, nil)
	if o.Gate.Window != "Mon-Fri 22:00-06:00 Europe/Berlin; Sat,Sun 00:00-24:00" || o.Gate.MinInterval != 30*time.Second {
		t.Errorf("gate options %+v", o.Gate)
	}

	var defaults Flags
	if _, err := kong.Must(&defaults).Parse(nil); err != nil {
		t.Fatal(err)
	}
	if a := defaults.annotations(); a.PausePeriod != "deployment.reloader.stakater.com/pause-period" || a.PausedAt != "deployment.reloader.stakater.com/paused-at" {
		t.Errorf("default pause annotations %q, %q", a.PausePeriod, a.PausedAt)
	}
}

func TestBadGateFlagsNameTheFlag(t *testing.T) {
	for flag, cli := range map[string]Flags{
		"--reload-window":       {ReloadWindow: "Sat 02:00"},
		"--min-reload-interval": {MinReloadInterval: -time.Second},
	} {
		cli.Port, cli.KubeAPIQPS, cli.KubeAPIBurst, cli.HashKeySecret = 9090, 50, 100, "reloader-hash-key"
		if err := cli.Validate(); err == nil || !strings.HasPrefix(err.Error(), flag) {
			t.Errorf("%s: got %v", flag, err)
		}
	}
}
