package testcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	logTailLines = 20
	logTailBytes = 64 << 10
	pollInterval = 100 * time.Millisecond
)

// process is one running control-plane component whose stdout and stderr go
// to <dir>/<name>.log.
type process struct {
	name    string
	binary  string
	args    []string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	err     error         // result of Wait, set before done is closed
}

// startProcess starts binary in its own process group. The kernel kills it
// when the test binary dies, so no component outlives its test.
func startProcess(name, binary, dir string, args ...string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: open log: %w", name, err)
	}
	fmt.Fprintf(logFile, "# %s %s\n", binary, strings.Join(args, " "))
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, binary: binary, args: args, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// stop sends SIGTERM to the process group and SIGKILL after grace.
func (p *process) stop(grace time.Duration) {
	pgid := -p.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	<-p.done
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// failure returns an error naming the component, what went wrong and the
// tail of its log.
func (p *process) failure(format string, args ...any) error {
	return fmt.Errorf("%s: %s; last lines of %s:\n%s",
		p.name, fmt.Sprintf(format, args...), p.logPath, tailFile(p.logPath, logTailLines))
}

// waitFor polls ready until it reports true. It fails when p exits, when
// timeout passes or when ctx ends; errors from ready only mean "not yet" and
// the last one is reported on timeout.
func (p *process) waitFor(ctx context.Context, what string, timeout time.Duration, ready func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for {
		if p.exited() {
			return p.failure("exited (%v) while waiting for %s", p.err, what)
		}
		callCtx, cancelCall := context.WithTimeout(ctx, requestTimeout)
		ok, err := ready(callCtx)
		cancelCall()
		if ok {
			return nil
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return p.failure("timed out after %s waiting for %s (last error: %v)", timeout, what, lastErr)
		case <-p.done:
		case <-time.After(pollInterval):
		}
	}
}

// tailFile returns the last n lines of the file at path, or a note saying
// why it could not be read.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() > logTailBytes {
		_, _ = f.Seek(-logTailBytes, io.SeekEnd)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	return lastLines(string(data), n)
}
