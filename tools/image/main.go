// Command image builds the reloader's container images without a container engine: the static
// binary on an empty base that holds only CA certificates and a non-root user, one image per
// platform (linux/amd64, linux/arm64, linux/arm/v7), written as an OCI layout (an index of every platform, for crane and podman) and as
// one docker-save tarball per platform (for docker load and kind load image-archive).
//
// With -base-tar it writes only the base filesystem as a tar, which the Dockerfile unpacks, so
// the Dockerfile's image has the same files, user and entrypoint as this one.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
)

// options are the command line.
type options struct {
	binaries   map[string]string // platform ("linux/amd64") → path of the static binary
	version    string
	revision   string
	repository string
	source     string
	out        string
	baseTar    string
	created    time.Time
}

func main() {
	opts, err := parseFlags(os.Args[1:])
	if err == nil {
		err = run(opts)
	}
	if err != nil {
		slog.Error("image build failed", "err", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	opts := options{binaries: map[string]string{}}
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.Func("binary", "`platform=path` of a static reloader binary, e.g. linux/arm64=dist/reloader-linux-arm64 (repeatable)", func(v string) error {
		platform, path, ok := strings.Cut(v, "=")
		if !ok || !strings.HasPrefix(platform, "linux/") || path == "" {
			return fmt.Errorf("want linux/ARCH=PATH, got %q", v)
		}
		opts.binaries[platform] = path
		return nil
	})
	fs.StringVar(&opts.version, "version", "", "version: the image tag and the org.opencontainers.image.version label")
	fs.StringVar(&opts.revision, "revision", "", "source revision (git commit) for the org.opencontainers.image.revision label")
	fs.StringVar(&opts.repository, "repository", "ghcr.io/reloader/reloader", "image repository the tarballs are tagged with")
	fs.StringVar(&opts.source, "source", "https://github.com/reloader/reloader", "org.opencontainers.image.source label")
	fs.StringVar(&opts.out, "out", "", "output directory for the OCI layout and the tarballs")
	fs.StringVar(&opts.baseTar, "base-tar", "", "write only the base filesystem as a tar to this path (for the Dockerfile) and exit")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	created, err := sourceDateEpoch()
	if err != nil {
		return opts, err
	}
	opts.created = created
	if opts.baseTar != "" {
		return opts, nil
	}
	if opts.version == "" || opts.out == "" || len(opts.binaries) == 0 {
		return opts, fmt.Errorf("need -version, -out and at least one -binary")
	}
	return opts, nil
}

// sourceDateEpoch is the time stamped into layers and the config: $SOURCE_DATE_EPOCH (the
// reproducible-builds convention; the Makefile passes the commit time), else the Unix epoch,
// so the same inputs always give the same image digest.
func sourceDateEpoch() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse SOURCE_DATE_EPOCH %q: %w", v, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

func run(opts options) error {
	if opts.baseTar != "" {
		data, err := baseLayerTar(opts.created)
		if err != nil {
			return err
		}
		if err := os.WriteFile(opts.baseTar, data, 0o644); err != nil {
			return fmt.Errorf("write base tar: %w", err)
		}
		return nil
	}
	return build(opts)
}
