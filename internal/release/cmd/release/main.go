// Command release runs `make image` (--images-only) and `make release`: see package release.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/alecthomas/kong"

	"github.com/reloader/reloader/internal/release"
)

type cli struct {
	Version    string   `required:"" help:"Release version (vMAJOR.MINOR.PATCH); with --images-only, any image tag."`
	Revision   string   `help:"Source commit for the image labels and the SBOM."`
	Out        string   `default:"dist" help:"Output directory."`
	Platforms  []string `default:"linux/amd64,linux/arm64" help:"Platforms to build."`
	ImagesOnly bool     `help:"Build only the binaries and the images."`
}

func main() {
	var c cli
	kong.Parse(&c, kong.Description("Builds the reloader's release artifacts without a container engine."))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runRelease(ctx, c); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}

func runRelease(ctx context.Context, c cli) error {
	created, err := sourceDateEpoch()
	if err != nil {
		return err
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	o := release.Options{Version: c.Version, Revision: c.Revision, Root: root, Out: c.Out,
		Platforms: c.Platforms, Created: created, Log: os.Stderr}
	if c.ImagesOnly {
		return release.Images(ctx, o)
	}
	return release.Release(ctx, o)
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH (the Makefile passes the commit time), else now.
func sourceDateEpoch() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Now().UTC(), nil
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse SOURCE_DATE_EPOCH %q: %w", v, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}
