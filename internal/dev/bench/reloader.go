package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/reloader/reloader/internal/dev/testcluster"
)

const (
	readyTimeout  = 3 * time.Minute
	stopTimeout   = 30 * time.Second
	sampleEvery   = 100 * time.Millisecond
	httpTimeout   = 2 * time.Minute // long enough for a CPU profile
	readyInterval = 20 * time.Millisecond
)

// reloaderProc is one run of the reloader binary, a child process the bench measures.
type reloaderProc struct {
	name    string
	cmd     *exec.Cmd
	base    string // http://127.0.0.1:<port>
	logPath string
	started time.Time
	exited  chan struct{}
	waitErr error
	rss     *sampler
	http    *http.Client
}

// reloaderArgs are what every run gets besides --coalesce-period. An empty ns watches all
// namespaces, with the state in "default".
func reloaderArgs(kubeconfig, ns string, port int, coalesce time.Duration) []string {
	scope := []string{"--namespace", ns}
	if ns == "" {
		scope = []string{"--state-namespace", "default"}
	}
	return append(scope,
		"--kubeconfig", kubeconfig, "--port", fmt.Sprint(port),
		"--coalesce-period", coalesce.String(), "--enable-pprof", "--log-format", "json", "--log-level", "info",
	)
}

// startReloader runs bin (a command and its first arguments, the reloader's binary last) with
// its log in dir/<name>.log, with environ added to the bench's environment. The kernel kills
// it if the bench dies.
func startReloader(bin []string, dir, name, kubeconfig, ns string, coalesce time.Duration, environ []string, extra ...string) (*reloaderProc, error) {
	port, err := testcluster.FreePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create reloader log: %w", err)
	}
	cmd := exec.Command(bin[0], append(append(bin[1:], reloaderArgs(kubeconfig, ns, port, coalesce)...), extra...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if len(environ) > 0 {
		cmd.Env = append(os.Environ(), environ...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start reloader %s: %w", bin[len(bin)-1], err)
	}
	p := &reloaderProc{
		name: name, cmd: cmd, logPath: logPath, started: time.Now(), exited: make(chan struct{}),
		base: fmt.Sprintf("http://127.0.0.1:%d", port), http: &http.Client{Timeout: httpTimeout},
	}
	p.rss = startSampler(cmd.Process.Pid, sampleEvery)
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

func (p *reloaderProc) pid() int { return p.cmd.Process.Pid }

func (p *reloaderProc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// waitReady polls /readyz until it returns 200 and reports how long after the start that was.
func (p *reloaderProc) waitReady(ctx context.Context) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		if code, _, err := p.get(ctx, "/readyz"); err == nil && code == http.StatusOK {
			return time.Since(p.started), nil
		}
		select {
		case <-p.exited:
			return 0, fmt.Errorf("reloader %s exited before ready (%v); log: %s", p.name, p.waitErr, p.logPath)
		case <-ctx.Done():
			return 0, fmt.Errorf("reloader %s not ready after %s: %w; log: %s", p.name, readyTimeout, ctx.Err(), p.logPath)
		case <-time.After(readyInterval):
		}
	}
}

// get fetches a path of the reloader's HTTP server.
func (p *reloaderProc) get(ctx context.Context, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("GET %s: %w", path, err)
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return resp.StatusCode, body, nil
}

// getOK fetches a path and fails unless it returns 200.
func (p *reloaderProc) getOK(ctx context.Context, path string) ([]byte, error) {
	code, body, err := p.get(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("reloader %s: %w", p.name, err)
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("reloader %s: GET %s: status %d: %.200s", p.name, path, code, body)
	}
	return body, nil
}

func (p *reloaderProc) metrics(ctx context.Context) (metricSet, error) {
	body, err := p.getOK(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	m, err := parseMetrics(bytes.NewReader(body))
	return m, wrap(err, "reloader %s", p.name)
}

// memory reads the process's memory from /proc.
func (p *reloaderProc) memory() (memStatus, error) { return readMemStatus(p.pid()) }

func (p *reloaderProc) cpu() (float64, error) { return cpuSeconds(p.pid()) }

// terminate sends SIGTERM, as Kubernetes does, and returns the exit code.
func (p *reloaderProc) terminate() (int, error) {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && p.running() {
		return 0, fmt.Errorf("SIGTERM reloader %s: %w", p.name, err)
	}
	return p.waitExit()
}

// kill sends SIGKILL, a crash.
func (p *reloaderProc) kill() error {
	if err := p.cmd.Process.Kill(); err != nil && p.running() {
		return fmt.Errorf("kill reloader %s: %w", p.name, err)
	}
	_, err := p.waitExit()
	return err
}

func (p *reloaderProc) waitExit() (int, error) {
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return -1, fmt.Errorf("reloader %s did not exit within %s of SIGTERM; killed", p.name, stopTimeout)
	}
	p.rss.close()
	var exitErr *exec.ExitError
	if p.waitErr != nil && !errors.As(p.waitErr, &exitErr) {
		return -1, fmt.Errorf("wait for reloader %s: %w", p.name, p.waitErr)
	}
	return p.cmd.ProcessState.ExitCode(), nil
}

// stop makes sure the process is gone; for deferred cleanup.
func (p *reloaderProc) stop() {
	if p.running() {
		_ = p.kill()
	}
}
