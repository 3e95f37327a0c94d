package reloader_test

import (
	"fmt"
	"testing"
	"time"
)

// A first start queues more keys (150 workloads, 150 configs) than the work queue is handed at
// once: its work ends, a restart restarts nothing, and the last config's change reloads its
// workload.
func TestAFirstStartLargerThanTheQueueWindowEndsAndRestartsNothing(t *testing.T) {
	ns := cluster.NewNamespace(t)
	const n = 150
	population(t, ns, n)
	before := generations(t, ns)

	first := startController(t, ns, controllerOpts{grace: 5 * time.Second})
	waitFor(t, 30*time.Second, "the first start's work done", func() (bool, error) { return first.ctrl.Idle(), nil })
	settle()
	first.stop(t)
	startController(t, ns, controllerOpts{grace: 5 * time.Second})
	settle()
	if moved := changed(before, generations(t, ns)); len(moved) != 0 {
		t.Fatalf("first start and restart without config changes restarted %v", moved)
	}
	last := fmt.Sprintf("cfg-%d", n-1)
	waitEnv(t, ns, fmt.Sprintf("app-%d", n-1), "_RELOADER_-configmap-"+last, updateConfigMap(t, ns, last, map[string]string{"v": "1"}))
}
