package release

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/reloader/reloader/internal/dev/testcluster"
)

// ImageRepository is the repository every release image and manifest names.
const ImageRepository = "ghcr.io/reloader/reloader"

// imageToolDir is the pinned module holding the image builder.
const imageToolDir = "tools/image"

// Images builds the static binary for each platform into Out, then the images from them: an
// OCI layout Out/oci holding an index of all platforms, and a docker-save tarball per platform.
func Images(ctx context.Context, o Options) error {
	o.defaults()
	if !imageTag.MatchString(o.Version) {
		return fmt.Errorf("version %q is not a valid image tag", o.Version)
	}
	out, err := filepath.Abs(o.Out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	args := []string{"run", ".", "-version", o.Version, "-revision", o.Revision, "-repository", ImageRepository, "-out", out}
	for _, p := range o.Platforms {
		bin := filepath.Join(out, binaryName(o.Version, p))
		fmt.Fprintf(o.Log, "building %s\n", bin)
		if err := buildBinary(ctx, o, p, bin); err != nil {
			return err
		}
		args = append(args, "-binary", p+"="+bin)
	}
	env := []string{"GOWORK=off", "SOURCE_DATE_EPOCH=" + strconv.FormatInt(o.Created.Unix(), 10)}
	if _, err := run(ctx, filepath.Join(o.Root, imageToolDir), env, "go", args...); err != nil {
		return fmt.Errorf("build images: %w", err)
	}
	return nil
}

// buildBinary builds the static reloader for platform with the flags `make build` uses, the
// version stamped in.
func buildBinary(ctx context.Context, o Options, platform, out string) error {
	goos, goarch, goarm, err := goPlatform(platform)
	if err != nil {
		return err
	}
	env := []string{"CGO_ENABLED=0", "GOOS=" + goos, "GOARCH=" + goarch}
	if goarm != "" {
		env = append(env, "GOARM="+goarm)
	}
	ldflags := "-s -w -X main.version=" + o.Version
	if _, err := run(ctx, o.Root, env, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, "."); err != nil {
		return fmt.Errorf("build %s binary: %w", platform, err)
	}
	return nil
}

// packageChart packages deploy/helm/reloader with the pinned helm, its version the release's
// without the "v" and its appVersion the release's (which the chart's image tag defaults to).
func packageChart(ctx context.Context, o Options) error {
	helm, err := testcluster.EnsureHelm(ctx, o.Log)
	if err != nil {
		return err
	}
	out, err := filepath.Abs(o.Out)
	if err != nil {
		return err
	}
	chart := filepath.Join(o.Root, "deploy", "helm", "reloader")
	_, err = run(ctx, o.Root, nil, helm, "package", chart,
		"--version", strings.TrimPrefix(o.Version, "v"), "--app-version", o.Version, "--destination", out)
	return err
}

// archiveLayout writes Out/oci as an OCI archive (a tar of the layout), the single file
// `podman load` and `skopeo copy oci-archive:` take.
func archiveLayout(_ context.Context, o Options) error {
	dir := filepath.Join(o.Out, "oci")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		return addToTar(tw, dir, path, d)
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return fmt.Errorf("archive %s: %w", dir, err)
	}
	name := filepath.Join(o.Out, fmt.Sprintf("reloader-%s-oci.tar", o.Version))
	return os.WriteFile(name, buf.Bytes(), 0o644)
}

// addToTar adds path, relative to root, with a fixed owner and time so the archive's checksum
// depends only on the layout's contents.
func addToTar(tw *tar.Writer, root, path string, d fs.DirEntry) error {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Typeflag: tar.TypeReg}
	if d.IsDir() {
		hdr.Name, hdr.Mode, hdr.Typeflag = hdr.Name+"/", 0o755, tar.TypeDir
		return tw.WriteHeader(hdr)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	hdr.Size = int64(len(data))
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = tw.Write(data)
	return err
}

// run runs name in dir with env added and returns its stdout; on failure the error carries
// the end of its stderr.
func run(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail(stderr.String(), 20))
	}
	return stdout.Bytes(), nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
