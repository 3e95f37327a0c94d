// Command reloader restarts Deployments, StatefulSets, DaemonSets, Argo Rollouts and
// DeploymentConfigs, and runs CronJobs and Jobs again, when the ConfigMaps and Secrets they use
// change. See README.md and docs/. The flags live in internal/cli, the wiring in internal/app.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/reloader/reloader/internal/app"
	"github.com/reloader/reloader/internal/cli"
	"github.com/reloader/reloader/internal/gctune"
	"github.com/reloader/reloader/internal/pageout"
)

// version is stamped by the linker (-ldflags "-X main.version=...").
var version = "dev"

// memoryLimitEnv carries the container's memory limit in bytes: the manifests and the chart set
// it from the downward API (resourceFieldRef limits.memory), which cannot scale a value, so
// the share is taken here.
const memoryLimitEnv = "RELOADER_MEMORY_LIMIT"

// codeRoom is what a container's limit must hold beside the Go runtime's memory: the pages of
// the executable a reload runs (about 10 MiB, the bench's limit scenario) and the kernel's
// socket buffers. Below it the reloader reads its code again and again instead of reloading.
const codeRoom = 12 << 20

// memoryLimit is the Go runtime's soft memory limit for a container limit given in
// RELOADER_MEMORY_LIMIT: the limit less the larger of 10% and codeRoom, and never below half
// the limit. GOMEMLIMIT, when set, wins; so does the absence of a limit (ok false).
func memoryLimit(getenv func(string) string) (limit int64, ok bool) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(getenv(memoryLimitEnv), 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return max(n-max(n/10, codeRoom), n/2), true
}

func main() {
	// reloader explain (kubectl reloader explain, installed as kubectl-reloader): reads only.
	if cli.IsExplain(os.Args[1:]) {
		explain(os.Args[2:])
		return
	}
	if cli.IsPlugin(os.Args[0]) { // kubectl reloader must not start a controller
		fmt.Fprintln(os.Stderr, "usage: kubectl reloader explain [-n NAMESPACE] KIND/NAME [CONFIG-KIND/NAME] [-o json]")
		os.Exit(2)
	}
	phase := gctune.NewPhase()
	if os.Getenv("GOGC") == "" { // else it holds for every heap size
		go gctune.Follow(context.Background(), phase)
	}
	if limit, ok := memoryLimit(os.Getenv); ok {
		debug.SetMemoryLimit(limit)
	}
	var flags cli.Flags
	kong.Parse(&flags, cli.ParserOptions(version)...)
	// Most of the executable's pages mapped so far served the packages' initialisation only.
	_, _ = pageout.Executable() // where the kernel cannot, nothing changes

	// Once started, one processor: a reload waits on the API server, not on the CPU, and
	// goroutines handed between threads cost more CPU per change than they save (BENCHMARKS.md,
	// CPU per change). Each start, decoding the lists, has them all. GOMAXPROCS, if set, holds.
	procs, ownProcs := runtime.GOMAXPROCS(0), os.Getenv("GOMAXPROCS") == ""
	setProcs := func(n int) {
		if ownProcs && runtime.GOMAXPROCS(0) != n {
			runtime.GOMAXPROCS(n)
		}
	}
	hooks := app.Hooks{
		Starting: func() {
			phase.Set(false)
			setProcs(procs)
		},
		// Once the lists are in: the code that decoded them is most of the executable's pages
		// mapped by then, and the start-up pass that follows maps its own
		// (docs/lab/benchmarks-sessions.md).
		Synced: func() error {
			_, err := pageout.Executable()
			return err
		},
		// Once started: the lists' garbage, and most of the executable's pages mapped by then,
		// served only the start.
		StartedUp: func() error {
			phase.Set(true)
			setProcs(1)
			debug.FreeOSMemory()
			_, err := pageout.Executable()
			return err
		},
	}
	if err := app.Run(flags, version, hooks); err != nil {
		fmt.Fprintln(os.Stderr, "reloader: error:", err)
		os.Exit(1)
	}
}

// explain runs reloader explain with args (after the word) and exits non-zero on an error.
func explain(args []string) {
	x, p, err := cli.ParseExplain(args, version)
	if p == nil {
		fmt.Fprintln(os.Stderr, "reloader explain: error:", err)
		os.Exit(2)
	}
	p.FatalIfErrorf(err)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := app.Explain(ctx, x, version, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "reloader explain: error:", err)
		os.Exit(1)
	}
}
