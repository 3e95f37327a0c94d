package release

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// PushOptions say where `make push` sends the image `make image` built, and where it writes
// the kustomize overlays that deploy it.
type PushOptions struct {
	// Crane is the path of the crane binary built from tools/image's pinned module.
	Crane string
	// Registry is a registry host with an optional path, e.g. localhost:5001 or
	// registry.example.com/team; the image is pushed to Registry/reloader:Version.
	Registry string
	// Version is the tag `make image` gave the image.
	Version string
	// Images is `make image`'s output directory (it holds oci/).
	Images string
	// Root is the repository checkout, whose deploy/ bases the overlays name.
	Root string
	// Overlays is the directory the overlays are written under, one per base.
	Overlays string
}

// Push pushes the image index in Images/oci to Registry/reloader:Version, checks that the
// registry holds the digest that was built, and writes, for each base under deploy/, an
// overlay that runs that image by tag and digest. It returns the pushed reference.
func Push(ctx context.Context, o PushOptions) (string, error) {
	repo := strings.TrimSuffix(o.Registry, "/") + "/reloader"
	if o.Registry == "" || strings.Contains(o.Registry, "://") {
		return "", fmt.Errorf("registry %q: want a host[:port][/path], e.g. localhost:5001", o.Registry)
	}
	if !imageTag.MatchString(o.Version) {
		return "", fmt.Errorf("version %q is not a valid image tag", o.Version)
	}
	want, err := indexDigest(filepath.Join(o.Images, "oci"))
	if err != nil {
		return "", fmt.Errorf("%w (run make image first)", err)
	}
	ref := repo + ":" + o.Version
	if _, err := run(ctx, o.Root, nil, o.Crane, "push", filepath.Join(o.Images, "oci"), ref); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	out, err := run(ctx, o.Root, nil, o.Crane, "digest", ref)
	if err != nil {
		return "", fmt.Errorf("read the pushed digest of %s: %w", ref, err)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		return "", fmt.Errorf("the registry holds %s at %s, but make image built %s", got, ref, want)
	}
	for _, base := range Bases {
		if err := writeOverlay(o, base, repo, want); err != nil {
			return "", err
		}
	}
	return ref + "@" + want, nil
}

// writeOverlay writes Overlays/base/kustomization.yaml: deploy/base with the image replaced
// by repo:Version@digest, as the release's manifests pin it.
func writeOverlay(o PushOptions, base, repo, digest string) error {
	dir, err := filepath.Abs(filepath.Join(o.Overlays, base))
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(dir, filepath.Join(o.Root, "deploy", base))
	if err != nil {
		return fmt.Errorf("locate deploy/%s from %s: %w", base, dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create overlay %s: %w", dir, err)
	}
	overlay := fmt.Sprintf(`# Written by make push: deploy/%s running the image it pushed (kubectl apply -k %s).
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
images:
- name: %s
  newName: %s
  newTag: %q
`, base, filepath.Join(o.Overlays, base), filepath.ToSlash(rel), ImageRepository, repo, o.Version+"@"+digest)
	name := filepath.Join(dir, "kustomization.yaml")
	if err := os.WriteFile(name, []byte(overlay), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
