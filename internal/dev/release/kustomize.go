package release

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Bases are the kustomize bases under deploy/ that a release renders into plain manifests,
// each written as reloader-BASE.yaml.
var Bases = []string{"namespace", "cluster"}

// Kustomize renders the kustomize base in dir as `kubectl apply -k` of an overlay would: the
// overlay sets namespace when it is not empty, and the reloader image's tag when tag is not
// empty. The base's files are copied into memory, so nothing is written next to them.
func Kustomize(dir, namespace, tag string) ([]byte, error) {
	fs := filesys.MakeFsInMemory()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read kustomize base: %w", err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read kustomize base: %w", err)
		}
		if err := fs.WriteFile("/base/"+e.Name(), data); err != nil {
			return nil, err
		}
	}
	overlay := "resources: [../base]\n"
	if namespace != "" {
		overlay += fmt.Sprintf("namespace: %q\n", namespace)
	}
	if tag != "" {
		overlay += fmt.Sprintf("images:\n- name: %s\n  newTag: %q\n", ImageRepository, tag)
	}
	if err := fs.WriteFile("/overlay/kustomization.yaml", []byte(overlay)); err != nil {
		return nil, err
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/overlay")
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	return m.AsYaml()
}

// writeManifests renders each base into reloader-BASE.yaml, its image pinned by the digest of
// the release's image index as well as named by its tag: what is applied is what was built and
// checksummed, whatever the tag is later moved to.
func writeManifests(_ context.Context, o Options) error {
	digest, err := indexDigest(filepath.Join(o.Out, "oci"))
	if err != nil {
		return err
	}
	for _, base := range Bases {
		data, err := Kustomize(filepath.Join(o.Root, "deploy", base), "", o.Version+"@"+digest)
		if err != nil {
			return err
		}
		header := fmt.Sprintf("# reloader %s: deploy/%s rendered with kustomize (see docs/install-and-upgrade.md, \"Deploying\").\n", o.Version, base)
		name := filepath.Join(o.Out, "reloader-"+base+".yaml")
		if err := os.WriteFile(name, append([]byte(header), data...), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// indexDigest is the digest of the one image index an OCI layout holds (Images writes one, of
// every platform).
func indexDigest(layout string) (string, error) {
	data, err := os.ReadFile(filepath.Join(layout, "index.json"))
	if err != nil {
		return "", fmt.Errorf("read the image layout: %w", err)
	}
	var index struct {
		Manifests []struct {
			Digest string `json:"digest"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(data, &index); err != nil {
		return "", fmt.Errorf("read %s: %w", filepath.Join(layout, "index.json"), err)
	}
	if len(index.Manifests) != 1 || !strings.HasPrefix(index.Manifests[0].Digest, "sha256:") {
		return "", fmt.Errorf("%s holds %d entries, want one image index", filepath.Join(layout, "index.json"), len(index.Manifests))
	}
	return index.Manifests[0].Digest, nil
}
