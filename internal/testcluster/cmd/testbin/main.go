// Command testbin builds the control-plane binaries the tests need (if they
// are not cached yet) and prints the cache directory holding them.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"reloader/internal/testcluster"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bins, err := testcluster.EnsureBinaries(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testbin: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(bins.Dir)
}
