// Command testbin builds the control-plane binaries and helm that the tests
// need (if they are not cached yet) and prints where they are.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/reloader/reloader/internal/dev/testcluster"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bins, err := testcluster.EnsureBinaries(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testbin: %v\n", err)
		os.Exit(1)
	}
	helm, err := testcluster.EnsureHelm(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testbin: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(bins.Dir)
	fmt.Println(helm)
}
