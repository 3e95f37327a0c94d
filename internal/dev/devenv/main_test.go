package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestRunRefusesATakenPortBeforeStartingTheControlPlane: make run PORT=... checks the port
// first, so a taken one fails in a moment, naming the knob, not after the control plane start.
func TestRunRefusesATakenPortBeforeStartingTheControlPlane(t *testing.T) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	begin := time.Now()
	err = run(ctx, "bin/reloader", "testdata/sample.yaml", port, false)
	if err == nil || !strings.Contains(err.Error(), "PORT=") {
		t.Fatalf("run on taken port %s: %v, want a refusal naming PORT=", port, err)
	}
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("the refusal took %s: the control plane was started first", took)
	}
}

// TestWaitServingReturnsOnceTheReloaderServesHealthz: the hints are printed only once
// /healthz answers, and never when the reloader exits first.
func TestWaitServingReturnsOnceTheReloaderServesHealthz(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	sleeper := startProcess(t, "sleep", "30")
	defer sleeper.terminate()
	served := make(chan error, 1)
	go func() { served <- waitServing(context.Background(), port, sleeper) }()
	select {
	case err := <-served:
		t.Fatalf("waitServing returned %v before anything listened on %s", err, port)
	case <-time.After(500 * time.Millisecond):
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	l, err = net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	defer srv.Close()
	if err := <-served; err != nil {
		t.Fatalf("waitServing once /healthz answers: %v", err)
	}

	exited := startProcess(t, "true")
	if err := waitServing(context.Background(), "1", exited); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("waitServing with the reloader exited: %v, want an error saying so", err)
	}
}

// TestHintsWaitForTheReloadBeforeTheRolloutStatus: rollout status alone reports the old
// ReplicaSet as rolled out while the coalescing period runs, so the hint first waits for the
// generation the reload gives the Deployment.
func TestHintsWaitForTheReloadBeforeTheRolloutStatus(t *testing.T) {
	h := hints("/tmp/kubeconfig", "8081", 3)
	waitAt := strings.Index(h, "wait deployment/web --for=jsonpath='{.metadata.generation}'=4")
	statusAt := strings.Index(h, "rollout status deployment/web")
	if waitAt < 0 || statusAt < waitAt {
		t.Errorf("hints do not wait for generation 4 before rollout status:\n%s", h)
	}
	if !strings.Contains(h, "localhost:8081/metrics") {
		t.Errorf("hints do not name the port given:\n%s", h)
	}
}

func startProcess(t *testing.T, name string, args ...string) *process {
	t.Helper()
	p, err := start(exec.Command(name, args...))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
