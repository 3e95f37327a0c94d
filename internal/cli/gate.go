package cli

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

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
	// The reloader writes this key when a pause period starts: one the API server refuses
	// would fail that write, and hold the workload's reloads for good. With no pause-period
	// annotation no pause starts.
	if errs := validation.IsQualifiedName(c.PauseDeploymentTimeAnnotation); c.PauseDeploymentAnnotation != "" && len(errs) > 0 {
		return fmt.Errorf("--pause-deployment-time-annotation: %q is not an annotation key: %s", c.PauseDeploymentTimeAnnotation, strings.Join(errs, "; "))
	}
	return nil
}
