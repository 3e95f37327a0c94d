// Package release makes what a reloader release ships, from a checkout, with no container
// engine and no network beyond the Go module proxy: static binaries per platform, the container
// images (built by the pinned tool in tools/image), the plain manifests rendered from the
// kustomize bases, the packaged Helm chart, an SBOM per binary and SHA-256 checksums, every one
// naming the same version.
package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Options say what to build and where.
type Options struct {
	// Version is the release version, vMAJOR.MINOR.PATCH (Images accepts any image tag).
	Version string
	// Revision is the source commit, for the image labels and the SBOM.
	Revision string
	// Root is the repository checkout.
	Root string
	// Out is the output directory; Release empties it first.
	Out string
	// Platforms are linux/ARCH or linux/arm/v7; empty means DefaultPlatforms.
	Platforms []string
	// Created is stamped into the images and the SBOM (reproducible builds: the commit time).
	Created time.Time
	// Log receives progress lines (nil discards them).
	Log io.Writer
}

// ChecksumsFile is the name of the SHA-256 checksum list in the output directory, in the
// format `sha256sum -c` reads.
const ChecksumsFile = "SHA256SUMS"

// semver is the release version form: the chart's version is it without the "v".
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// imageTag is what a Docker tag may hold.
var imageTag = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

func (o *Options) defaults() {
	if len(o.Platforms) == 0 {
		o.Platforms = DefaultPlatforms
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// Release empties Out and writes every release artifact into it, then SHA256SUMS over them.
func Release(ctx context.Context, o Options) error {
	o.defaults()
	if !semver.MatchString(o.Version) {
		return fmt.Errorf("release version %q: want vMAJOR.MINOR.PATCH, e.g. v0.1.0", o.Version)
	}
	if err := os.RemoveAll(o.Out); err != nil {
		return fmt.Errorf("empty %s: %w", o.Out, err)
	}
	steps := []struct {
		what string
		run  func(context.Context, Options) error
	}{
		{"images", Images},
		{"SBOMs", writeSBOMs},
		{"manifests", writeManifests},
		{"chart", packageChart},
		{"OCI archive", archiveLayout},
	}
	for _, s := range steps {
		fmt.Fprintf(o.Log, "release %s: %s\n", o.Version, s.what)
		if err := s.run(ctx, o); err != nil {
			return fmt.Errorf("release %s: %s: %w", o.Version, s.what, err)
		}
	}
	return writeChecksums(o.Out)
}

// DefaultPlatforms are the platforms a release builds binaries and images for.
var DefaultPlatforms = []string{"linux/amd64", "linux/arm64", "linux/arm/v7"}

// goPlatform is the GOOS, GOARCH and, for linux/arm/vN, GOARM that build for platform.
func goPlatform(platform string) (goos, goarch, goarm string, err error) {
	goos, arch, _ := strings.Cut(platform, "/")
	goarch, variant, _ := strings.Cut(arch, "/")
	switch {
	case goos != "linux" || goarch == "":
		return "", "", "", fmt.Errorf("platform %q: want linux/ARCH or linux/arm/v7", platform)
	case goarch == "arm" && (variant == "v6" || variant == "v7"):
		return goos, goarch, strings.TrimPrefix(variant, "v"), nil
	case variant != "":
		return "", "", "", fmt.Errorf("platform %q: only arm takes a variant (v6 or v7)", platform)
	}
	return goos, goarch, "", nil
}

// binaryName is the file name of the static binary for platform ("linux/arm64").
func binaryName(version, platform string) string {
	return fmt.Sprintf("reloader-%s-%s", version, strings.ReplaceAll(platform, "/", "-"))
}

// writeChecksums writes SHA256SUMS over the regular files directly in dir (the OCI layout
// directory is covered by its archive).
func writeChecksums(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	var lines []string
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == ChecksumsFile {
			continue
		}
		sum, err := fileSHA256(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		lines = append(lines, sum+"  "+e.Name()+"\n")
	}
	slices.Sort(lines)
	if err := os.WriteFile(filepath.Join(dir, ChecksumsFile), []byte(strings.Join(lines, "")), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", ChecksumsFile, err)
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("checksum: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("checksum %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
