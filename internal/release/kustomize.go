package release

import (
	"context"
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

// writeManifests renders each base with the release's image tag into reloader-BASE.yaml.
func writeManifests(_ context.Context, o Options) error {
	for _, base := range Bases {
		data, err := Kustomize(filepath.Join(o.Root, "deploy", base), "", o.Version)
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
