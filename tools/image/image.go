package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// metricsPort is the port the manifests pass as --port; EXPOSE is documentation only.
const metricsPort = "8080/tcp"

// build writes the OCI layout (out/oci) holding an index of every platform's image, and one
// docker-save tarball per platform (out/reloader-VERSION-linux-ARCH.tar).
func build(opts options) error {
	tag, err := name.NewTag(opts.repository + ":" + opts.version)
	if err != nil {
		return fmt.Errorf("image tag: %w", err)
	}
	if err := os.MkdirAll(opts.out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", opts.out, err)
	}
	var index v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, platform := range sortedKeys(opts.binaries) {
		img, err := platformImage(opts, platform)
		if err != nil {
			return fmt.Errorf("build %s image: %w", platform, err)
		}
		arch, variant := archVariant(platform)
		tarPath := filepath.Join(opts.out, fmt.Sprintf("reloader-%s-%s.tar", opts.version, strings.ReplaceAll(platform, "/", "-")))
		if err := tarball.WriteToFile(tarPath, tag, img); err != nil {
			return fmt.Errorf("write %s: %w", tarPath, err)
		}
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch, Variant: variant}},
		})
	}
	return writeLayout(filepath.Join(opts.out, "oci"), index, tag.String())
}

// writeLayout replaces dir with an OCI layout whose index.json holds only index, named by the
// full reference ref (what podman load and containerd's import name the image after).
func writeLayout(dir string, index v1.ImageIndex, ref string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clear %s: %w", dir, err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("create OCI layout %s: %w", dir, err)
	}
	names := layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref,
		"io.containerd.image.name":          ref,
	})
	if err := p.AppendIndex(index, names); err != nil {
		return fmt.Errorf("write OCI layout %s: %w", dir, err)
	}
	return nil
}

// platformImage is the base layer, the binary layer and the config for one platform.
func platformImage(opts options, platform string) (v1.Image, error) {
	binary, err := os.ReadFile(opts.binaries[platform])
	if err != nil {
		return nil, fmt.Errorf("read binary: %w", err)
	}
	base, err := baseLayerTar(opts.created)
	if err != nil {
		return nil, err
	}
	bin, err := binaryLayerTar(binary, opts.created)
	if err != nil {
		return nil, err
	}
	var layers []v1.Layer
	for _, data := range [][]byte{base, bin} {
		l, err := tarball.LayerFromOpener(opener(data), tarball.WithMediaType(types.OCILayer))
		if err != nil {
			return nil, fmt.Errorf("make layer: %w", err)
		}
		layers = append(layers, l)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, layers...)
	if err != nil {
		return nil, fmt.Errorf("append layers: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS = "linux"
	cfg.Architecture, cfg.Variant = archVariant(platform)
	cfg.Created = v1.Time{Time: opts.created}
	for i := range cfg.History {
		cfg.History[i].Created = cfg.Created
	}
	cfg.Config = imageConfig(opts)
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("set config: %w", err)
	}
	return img, nil
}

// imageConfig is what the Dockerfile's final stage says too: the entrypoint, the non-root user,
// the port and the labels.
func imageConfig(opts options) v1.Config {
	return v1.Config{
		Entrypoint:   []string{"/reloader"},
		User:         fmt.Sprintf("%d:%d", nonrootUID, nonrootUID),
		WorkingDir:   nonrootHome,
		ExposedPorts: map[string]struct{}{metricsPort: {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "reloader",
			"org.opencontainers.image.description": "Restarts Kubernetes workloads when the ConfigMaps and Secrets they use change",
			"org.opencontainers.image.version":     opts.version,
			"org.opencontainers.image.revision":    opts.revision,
			"org.opencontainers.image.source":      opts.source,
			"org.opencontainers.image.licenses":    "Apache-2.0",
			"org.opencontainers.image.created":     opts.created.Format("2006-01-02T15:04:05Z"),
		},
	}
}

// archVariant splits "linux/arm/v7" into "arm" and "v7" ("linux/amd64" into "amd64" and "").
func archVariant(platform string) (arch, variant string) {
	arch, variant, _ = strings.Cut(strings.TrimPrefix(platform, "linux/"), "/")
	return arch, variant
}

func opener(data []byte) tarball.Opener {
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
