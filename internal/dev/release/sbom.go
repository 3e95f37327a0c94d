package release

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// module is the reloader's Go module path, the SBOM's main component.
const module = "github.com/reloader/reloader"

// writeSBOMs writes a CycloneDX JSON SBOM next to each binary (BINARY.cdx.json). It lists what
// the binary itself records (what `go version -m` prints): the Go toolchain and every module
// compiled in, with its version and go.sum hash. Reading it from the binary, not from go.mod,
// leaves out modules that only tests and tools use.
func writeSBOMs(_ context.Context, o Options) error {
	for _, p := range o.Platforms {
		bin := filepath.Join(o.Out, binaryName(o.Version, p))
		bom, err := binarySBOM(bin, o, p)
		if err != nil {
			return err
		}
		f, err := os.Create(bin + ".cdx.json")
		if err != nil {
			return fmt.Errorf("create SBOM: %w", err)
		}
		err = cdx.NewBOMEncoder(f, cdx.BOMFileFormatJSON).SetPretty(true).Encode(bom)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write SBOM %s: %w", f.Name(), err)
		}
	}
	return nil
}

// binarySBOM is the SBOM of the binary at path, built for platform.
func binarySBOM(path string, o Options, platform string) (*cdx.BOM, error) {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read build info of %s: %w", path, err)
	}
	goos, goarch, goarm, err := goPlatform(platform)
	if err != nil {
		return nil, err
	}
	main := component(cdx.ComponentTypeApplication, module, o.Version)
	main.PackageURL += "?goarch=" + goarch + "&goos=" + goos
	if goarm != "" {
		main.PackageURL += "&goarm=" + goarm
	}
	main.BOMRef = main.PackageURL
	main.Properties = &[]cdx.Property{{Name: "vcs.revision", Value: o.Revision}}
	deps := []cdx.Component{component(cdx.ComponentTypeLibrary, "stdlib", info.GoVersion)}
	for _, d := range info.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		c := component(cdx.ComponentTypeLibrary, d.Path, d.Version)
		if d.Sum != "" {
			c.Properties = &[]cdx.Property{{Name: "go.sum", Value: d.Sum}}
		}
		deps = append(deps, c)
	}
	refs := make([]string, len(deps))
	for i, d := range deps {
		refs[i] = d.BOMRef
	}
	bom := cdx.NewBOM()
	bom.Metadata = &cdx.Metadata{Timestamp: o.Created.UTC().Format(time.RFC3339), Component: &main}
	bom.Components = &deps
	bom.Dependencies = &[]cdx.Dependency{{Ref: main.BOMRef, Dependencies: &refs}}
	return bom, nil
}

// component is a Go module as a CycloneDX component, named by its package URL.
func component(typ cdx.ComponentType, path, version string) cdx.Component {
	purl := "pkg:golang/" + path + "@" + version
	return cdx.Component{BOMRef: purl, Type: typ, Name: path, Version: version, PackageURL: purl}
}
