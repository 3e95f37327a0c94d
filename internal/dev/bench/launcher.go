package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// launcher starts the reloader under test on a population, as the command line says, and notes
// its version from the first one ready.
type launcher struct {
	cfg     config
	dir     string // where the logs go
	logf    func(format string, args ...any)
	version string // from reloader_build_info; "" until a reloader was ready
}

// start runs the reloader on env's namespace; names of its log and profiles start with name.
func (s *launcher) start(e *env, name string, coalesce time.Duration, extra ...string) (*reloaderProc, error) {
	return s.startIn(nil, e, name, coalesce, extra...)
}

// startIn is start inside a memory cgroup (none if cg is nil) whose limit is limit bytes. The
// reloader is told the limit as the manifests tell it, through RELOADER_MEMORY_LIMIT.
func (s *launcher) startIn(cg *memCgroup, e *env, name string, coalesce time.Duration, extra ...string) (*reloaderProc, error) {
	environ := slices.Clone(s.cfg.environ)
	var prefix []string
	if cg != nil {
		environ = append(environ, fmt.Sprintf("RELOADER_MEMORY_LIMIT=%d", cg.limit))
		// The shell joins the cgroup, then becomes the reloader: its first page is charged.
		prefix = []string{"/bin/sh", "-c", `echo $$ > "$0" && exec "$@"`, cg.procs()}
	}
	if s.cfg.startupProfile {
		environ = withGODEBUG(environ, "gctrace=1") // read back by readGCTrace
	}
	if s.cfg.logLevel != "" {
		extra = append(extra, "--log-level", s.cfg.logLevel) // the last one given counts
	}
	p, err := startReloader(append(prefix, s.cfg.reloader), s.dir, name, e.cluster.Kubeconfig, e.pop.watched(e.ns), coalesce, environ, extra...)
	if err != nil {
		return nil, err
	}
	s.logf("started reloader %s (pid %d, %s, --coalesce-period %s)", name, p.pid(), p.base, coalesce)
	return p, nil
}

// startSettled starts a reloader, waits until it is ready and then for the settle period, so
// that its start-up work is over before a scenario measures; on an error it is stopped.
func (s *launcher) startSettled(ctx context.Context, e *env, name string, coalesce time.Duration, extra ...string) (*reloaderProc, error) {
	p, err := s.start(e, name, coalesce, extra...)
	if err != nil {
		return nil, err
	}
	if _, err := s.ready(ctx, p); err != nil {
		p.stop()
		return nil, err
	}
	if err := sleep(ctx, s.cfg.settle); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// ready waits for the reloader's /readyz and notes its version from the build info metric.
func (s *launcher) ready(ctx context.Context, p *reloaderProc) (time.Duration, error) {
	d, err := p.waitReady(ctx)
	if err != nil || s.version != "" {
		return d, err
	}
	m, err := p.metrics(ctx)
	if err != nil {
		return d, err
	}
	for _, sm := range m {
		if sm.name == "reloader_build_info" {
			s.version = sm.labels["version"]
		}
	}
	return d, nil
}

// stopGracefully sends SIGTERM, checks the exit code and counts warnings and errors the
// reloader logged.
func stopGracefully(p *reloaderProc, r *result) error {
	code, err := p.terminate()
	if err != nil {
		return err
	}
	r.add(exactly("exit code after SIGTERM", float64(code), 0, unitCount))
	return logIssues(r, p)
}

// withGODEBUG adds setting to environ's GODEBUG, keeping the settings given with -reloader-env.
func withGODEBUG(environ []string, setting string) []string {
	for i, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			environ[i] = "GODEBUG=" + v + "," + setting
			return environ
		}
	}
	return append(environ, "GODEBUG="+setting)
}
