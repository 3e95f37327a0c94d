package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// topLines is how many lines of `go tool pprof -top` a summary keeps, header included.
const topLines = 22

// profiler saves the reloader's pprof profiles to dir and summarises them with goTool.
type profiler struct {
	dir    string
	goTool string
	cpuFor time.Duration // length of the latency run's CPU profile; 0: none
	logf   func(format string, args ...any)
}

// profile saves a pprof profile of the reloader to dir/<file> and returns its
// `go tool pprof -top` summary.
func (f *profiler) profile(ctx context.Context, p *reloaderProc, path, file string, pprofArgs ...string) (string, []string, error) {
	body, err := p.getOK(ctx, path)
	if err != nil {
		return "", nil, fmt.Errorf("fetch profile: %w", err)
	}
	dst := filepath.Join(f.dir, file)
	if err := os.WriteFile(dst, body, 0o644); err != nil {
		return "", nil, fmt.Errorf("save profile: %w", err)
	}
	top, err := f.pprofTop(ctx, dst, "", pprofArgs...)
	if err != nil {
		return dst, nil, err
	}
	return dst, top, nil
}

// heapProfile collects garbage, so the profile shows what is live now and not at the last
// collection, then saves the in-use heap and summarises it by inuse_space.
func (f *profiler) heapProfile(ctx context.Context, p *reloaderProc, file string) (string, []string, error) {
	return f.profile(ctx, p, "/debug/pprof/heap?gc=1", file, "-sample_index=inuse_space")
}

// cpuProfile records the CPU for the given seconds and summarises it.
func (f *profiler) cpuProfile(ctx context.Context, p *reloaderProc, file string, seconds int) (string, []string, error) {
	return f.profile(ctx, p, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds), file)
}

// pprofTop runs `go tool pprof -top` on a saved profile and saves the summary next to it, its
// name ending in label.top.txt. Profiles from Go carry their symbols, so the stripped binary is
// not needed.
func (f *profiler) pprofTop(ctx context.Context, path, label string, args ...string) ([]string, error) {
	args = append([]string{"tool", "pprof", "-top", "-nodecount=" + fmt.Sprint(topLines), "-symbolize=none"}, args...)
	cmd := exec.CommandContext(ctx, f.goTool, append(args, path)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", cmd, err, out)
	}
	txt := strings.TrimSuffix(path, ".pb.gz") + label + ".top.txt"
	if err := os.WriteFile(txt, out, 0o644); err != nil {
		return nil, fmt.Errorf("save profile summary: %w", err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return lines[:min(len(lines), topLines+6)], nil
}

// profileCPU records a CPU profile during the first seconds of the latency run, if enabled.
func (f *profiler) profileCPU(ctx context.Context, p *reloaderProc, r *result) <-chan struct{} {
	done := make(chan struct{})
	seconds := int(f.cpuFor / time.Second)
	if seconds <= 0 {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		path, top, err := f.cpuProfile(ctx, p, scLatency+"-cpu.pb.gz", seconds)
		if err != nil {
			f.logf("latency: CPU profile: %v", err)
			return
		}
		r.detail("cpu_profile", path)
		r.detail("cpu_top", top)
	}()
	return done
}
