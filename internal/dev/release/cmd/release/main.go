// Command release runs `make image` (--images-only) and `make release`: see package release.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kong"

	"github.com/reloader/reloader/internal/dev/release"
)

type cli struct {
	Version    string   `required:"" help:"Release version (vMAJOR.MINOR.PATCH); with --images-only, any image tag."`
	Revision   string   `help:"Source commit for the image labels and the SBOM."`
	Out        string   `default:"dist" help:"Output directory."`
	Platforms  []string `default:"${platforms}" help:"Platforms to build."`
	ImagesOnly bool     `help:"Build only the binaries and the images."`
	Push       string   `placeholder:"REGISTRY" help:"Push the image --out holds (make image) to REGISTRY/reloader:VERSION and write kustomize overlays that run it."`
	Crane      string   `help:"The crane binary, for --push."`
	Overlays   string   `default:"bin/deploy" help:"Where --push writes its overlays, one per deploy/ base."`
}

func main() {
	var c cli
	kong.Parse(&c, kong.Description("Builds the reloader's release artifacts without a container engine."),
		kong.Vars{"platforms": strings.Join(release.DefaultPlatforms, ",")})
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
	if c.Push != "" {
		return push(ctx, c, root)
	}
	if c.ImagesOnly {
		return release.Images(ctx, o)
	}
	return release.Release(ctx, o)
}

func push(ctx context.Context, c cli, root string) error {
	ref, err := release.Push(ctx, release.PushOptions{Crane: c.Crane, Registry: c.Push, Version: c.Version,
		Images: c.Out, Root: root, Overlays: c.Overlays})
	if err != nil {
		return err
	}
	fmt.Printf("pushed %s\nrun it in your cluster, watching one namespace or all of them:\n"+
		"  kubectl -n NAMESPACE apply -k %s\n  kubectl apply -k %s\n",
		ref, filepath.Join(c.Overlays, "namespace"), filepath.Join(c.Overlays, "cluster"))
	return nil
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
