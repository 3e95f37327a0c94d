package testcluster

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestEphemeralLowReadsTheFirstPortOfTheKernelsRange(t *testing.T) {
	for text, want := range map[string]int{
		"32768\t60999\n": 32768,
		"49152 65535":    49152,
		"":               0,
		"32768":          0,
		"low high":       0,
	} {
		if got := ephemeralLow(text); got != want {
			t.Errorf("ephemeralLow(%q) = %d, want %d", text, got, want)
		}
	}
}

func TestFreePortsAreDistinctAndBelowTheEphemeralRange(t *testing.T) {
	hi := ephemeralLow(readFile(ephemeralRangeFile))
	if hi <= lowestPort {
		t.Skipf("no ports between %d and the ephemeral range (%d)", lowestPort, hi)
	}
	ports, err := freePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lowestPort || p >= hi || seen[p] {
			t.Errorf("port %d: want distinct ports in [%d, %d); got %v", p, lowestPort, hi, ports)
		}
		seen[p] = true
	}
}

// fakeComponent starts /bin/sh running script as a component and
// waits until it is ready (running for a moment) or exits.
func fakeComponent(ctx context.Context, c *components, script string) error {
	p, err := c.run("fake", "/bin/sh", "-c", script)
	if err != nil {
		return err
	}
	ready := time.Now().Add(300 * time.Millisecond)
	return p.waitFor(ctx, "a moment of running", 10*time.Second, func(context.Context) (bool, error) {
		return time.Now().After(ready), nil
	})
}

func TestOnFreePortsStartsAComponentAgainOnlyWhenItLostAPort(t *testing.T) {
	const taken = "echo 'listen tcp 127.0.0.1:1: bind: address already in use'; exit 1"
	const running = "exec sleep 60"
	tests := []struct {
		name         string
		scripts      []string // one per attempt; the last repeats
		wantAttempts int
		wantErr      string
	}{
		{name: "a lost port is picked again", scripts: []string{taken, running}, wantAttempts: 2},
		{name: "a port lost every time gives up", scripts: []string{taken}, wantAttempts: bindAttempts, wantErr: "address already in use"},
		{name: "another failure is not retried", scripts: []string{"echo 'bad flag'; exit 2"}, wantAttempts: 1, wantErr: "bad flag"},
		{name: "a component that starts is started once", scripts: []string{running}, wantAttempts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &components{dir: t.TempDir(), log: io.Discard}
			t.Cleanup(c.stopAll)
			attempts := 0
			err := c.onFreePorts("fake", 2, func(ports []int) error {
				if len(ports) != 2 {
					t.Errorf("got %d ports, want 2", len(ports))
				}
				script := tt.scripts[min(attempts, len(tt.scripts)-1)]
				attempts++
				return fakeComponent(t.Context(), c, script)
			})
			if attempts != tt.wantAttempts {
				t.Errorf("started %d times, want %d", attempts, tt.wantAttempts)
			}
			if tt.wantErr == "" && err != nil {
				t.Fatalf("onFreePorts: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("onFreePorts error = %v, want one quoting %q", err, tt.wantErr)
			}
			if tt.wantErr == "" && (len(c.processes) != 1 || c.processes[0].exited()) {
				t.Errorf("want only the running component kept, got %d processes", len(c.processes))
			}
		})
	}
}
