package cli

import (
	"fmt"

	"github.com/reloader/reloader/policy"
)

// validateGate checks the defaults of the reload gate.
func (c *Flags) validateGate() error {
	if c.ReloadWindow != "" {
		if _, err := policy.ParseWindows(c.ReloadWindow); err != nil {
			return fmt.Errorf("--reload-window: %w", err)
		}
	}
	if c.MinReloadInterval < 0 {
		return fmt.Errorf("--min-reload-interval: must not be negative, got %s", c.MinReloadInterval)
	}
	return nil
}
