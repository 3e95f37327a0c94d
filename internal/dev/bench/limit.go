package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// defaultLimitsMiB are the limit scenario's runs: issue 52's start-up target at 5,000 configs
// (the memory limit a user must set is the one the reloader starts and reloads under), and the
// smallest limit it worked under on 2026-12-04 (BENCHMARKS.md), which a change must not lose.
const defaultLimitsMiB = "21,32"

// limitScenario runs the reloader in a memory cgroup whose limit is -limit-mib, as a container
// with that limit, with its executable out of the page cache, as on a node that never ran it:
// the start must reach /readyz and the updates of the memory scenario must all reload, with no
// OOM kill. VmHWM counts every executable page the process ever mapped; the kernel reclaims
// those before it kills, so the limit that works is the figure a user sizes by.
type limitScenario struct{ *kit }

func (ls limitScenario) params(e *env) map[string]any {
	return map[string]any{"population": e.pop, "limit_mib": ls.cfg.limitMiB, "updates": ls.cfg.updates,
		"update_window": ls.cfg.updateWindow.String()}
}

// run runs one reloader per limit; its logs are named after name, the result's.
func (ls limitScenario) run(ctx context.Context, e *env, r *result, name string) error {
	var errs []error
	for _, n := range ls.cfg.limitMiB {
		if err := ls.runUnder(ctx, e, r, name, n); err != nil {
			errs = append(errs, fmt.Errorf("under %d MiB: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// limitReadyTimeout bounds the wait for /readyz under a limit: without one the reloader is
// ready in about a second; a thrashing one may take minutes or never be.
const limitReadyTimeout = time.Minute

// runUnder runs one reloader in a cgroup limited to n MiB; check names begin with the limit. A
// run that thrashes or is killed is a result, not an error.
func (ls limitScenario) runUnder(ctx context.Context, e *env, r *result, scenario string, n int) error {
	name := fmt.Sprintf("%s-%dMiB", scenario, n)
	cg, err := newMemCgroup(fmt.Sprintf("reloader-bench-%d-%d", os.Getpid(), n), int64(n)<<20)
	if errors.Is(err, errNoCgroup) {
		r.detail("skipped", err.Error())
		ls.logf("%s skipped: %v", scLimit, err)
		return nil
	} else if err != nil {
		return err
	}
	defer func() {
		if err := cg.remove(); err != nil {
			ls.logf("%v", err)
		}
	}()
	cached, err := evictFile(ls.cfg.reloader)
	if err != nil {
		return err
	}
	rs := &limitRun{r: r, prefix: fmt.Sprintf("%d MiB: ", n)}
	rs.add(info("executable cached before the start", mib(cached), unitMiB))
	p, err := ls.procs.startIn(cg, e, name, 0)
	if err != nil {
		return err
	}
	defer p.stop()
	works, err := ls.startAndUpdate(ctx, e, p, rs)
	if err != nil {
		return err
	}
	if f, err := majorFaults(p.pid()); err == nil {
		rs.add(info("major page faults in all", float64(f), unitCount))
	}
	if code, err := p.terminate(); err != nil {
		works = false
		rs.add(exactly("exited within 30 s of SIGTERM", 0, 1, unitCount))
		p.stop()
	} else {
		works = works && code == 0
		rs.add(exactly("exit code after SIGTERM", float64(code), 0, unitCount))
	}
	st, err := cg.stats() // final: the process has left the cgroup
	if err != nil {
		return err
	}
	r.detail(name+"_cgroup", st)
	works = works && st.OOMKills == 0
	rs.add(exactly("OOM kills", float64(st.OOMKills), 0, unitCount),
		info("cgroup charge peak", mib(st.Peak), unitMiB),
		exactly("works: ready, every reload, no OOM kill, a clean exit", b2f(works), 1, unitCount))
	logged := &result{Details: map[string]any{}}
	err = logIssues(logged, p)
	rs.add(logged.Checks...)
	for k, v := range logged.Details {
		r.detail(k, v)
	}
	return err
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// limitRun adds a run's checks to the scenario's result under the run's prefix.
type limitRun struct {
	r      *result
	prefix string
}

func (lr *limitRun) add(cs ...check) {
	for i := range cs {
		cs[i].Name = lr.prefix + cs[i].Name
	}
	lr.r.add(cs...)
}

// startAndUpdate waits for /readyz and the settle time, then updates ConfigMaps as the memory
// scenario does and waits for their reloads. It reports whether the reloader got ready and
// missed no reload; an error is the bench's own.
func (ls limitScenario) startAndUpdate(ctx context.Context, e *env, p *reloaderProc, r *limitRun) (bool, error) {
	readyCtx, cancel := context.WithTimeout(ctx, limitReadyTimeout)
	ready, err := ls.procs.ready(readyCtx, p)
	cancel()
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil {
		r.add(exactly(fmt.Sprintf("ready within %s", limitReadyTimeout), 0, 1, unitCount))
		return false, nil
	}
	r.add(info("time to /readyz", ready.Seconds(), unitSeconds))
	if err := sleep(ctx, ls.cfg.settle); err != nil {
		return false, err
	}
	m, err := p.memory()
	if err != nil {
		return false, err
	}
	faults, err := majorFaults(p.pid())
	if err != nil {
		return false, err
	}
	r.add(info("VmHWM at settle", mib(m.HWM), unitMiB), info("RssAnon settled", mib(m.Anon), unitMiB),
		info("RssFile settled", mib(m.File), unitMiB), info("major page faults to settle", float64(faults), unitCount))
	reloads, err := spreadUpdates(ctx, e, ls.cfg.updates, ls.cfg.updateWindow)
	if err != nil {
		return false, err
	}
	lat := awaitReloads(ctx, e, reloads, ls.cfg.timeout)
	after, err := majorFaults(p.pid())
	if err != nil {
		return false, err
	}
	r.add(exactly("reloads missed during updates", float64(lat.missed), 0, unitCount),
		info("latency p99 during updates", ms(lat.percentile(99)), unitMs),
		info("major page faults during updates", float64(after-faults), unitCount))
	return lat.missed == 0, nil
}
