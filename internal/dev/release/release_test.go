package release_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/reloader/reloader/internal/dev/release"
	"github.com/reloader/reloader/internal/dev/testcluster"
)

// version differs from the one the source manifests and Chart.yaml name (v0.1.0), so a
// release that forgot to rewrite one of them fails.
const version = "v9.8.7"

// platforms are what the test releases, sorted: the host's architecture, whose binary it runs,
// and linux/arm/v7, the one 32-bit platform with a GOARM variant. release.DefaultPlatforms'
// linux/arm64 builds as linux/amd64 does (a 64-bit GOARCH, no variant), so its cold
// cross-compile is left to make release; TestReleaseDefaultsToEveryShippedPlatform keeps it in.
var platforms = testedPlatforms()

func testedPlatforms() []string {
	ps := []string{"linux/" + runtime.GOARCH, "linux/arm/v7"}
	slices.Sort(ps)
	return slices.Compact(ps)
}

// TestReleaseWritesEveryArtifactAtItsVersion runs the release into a temporary directory and
// checks each artifact: the checksums, the images (config, files, the binary inside running
// --version), the rendered manifests, the packaged chart and the SBOMs.
func TestReleaseWritesEveryArtifactAtItsVersion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	out := t.TempDir()
	created := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	err := release.Release(ctx, release.Options{
		Version: version, Revision: "0123456789abcdef", Root: repoRoot(t), Out: out,
		Platforms: platforms, Created: created, Log: testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("checksums", func(t *testing.T) { checkChecksums(t, out) })
	t.Run("images", func(t *testing.T) { checkImages(t, out, created) })
	t.Run("docker tarballs", func(t *testing.T) { checkDockerTarballs(t, out) })
	t.Run("manifests", func(t *testing.T) { checkManifests(t, out) })
	t.Run("chart", func(t *testing.T) { checkChart(ctx, t, out) })
	t.Run("SBOMs", func(t *testing.T) { checkSBOMs(t, out) })
	t.Run("push", func(t *testing.T) { checkPush(ctx, t, out) })
}

// TestReleaseDefaultsToEveryShippedPlatform: make release (whose --platforms default is
// release.DefaultPlatforms) ships the three platforms the docs name, though the release test
// builds only some of them.
func TestReleaseDefaultsToEveryShippedPlatform(t *testing.T) {
	want := []string{"linux/amd64", "linux/arm64", "linux/arm/v7"}
	if !slices.Equal(release.DefaultPlatforms, want) {
		t.Errorf("release.DefaultPlatforms = %v, want %v", release.DefaultPlatforms, want)
	}
}

// TestReleaseRefusesAVersionThatIsNotSemver: the chart's version is the release's without the
// "v", so anything but vMAJOR.MINOR.PATCH is refused before anything is built or removed.
func TestReleaseRefusesAVersionThatIsNotSemver(t *testing.T) {
	out := t.TempDir()
	keep := filepath.Join(out, "keep")
	if err := os.WriteFile(keep, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"latest", "0.1.0", "v1.2", "v01.2.3", ""} {
		err := release.Release(context.Background(), release.Options{Version: v, Root: repoRoot(t), Out: out})
		if err == nil || !strings.Contains(err.Error(), "vMAJOR.MINOR.PATCH") {
			t.Errorf("version %q: got %v, want a refusal naming the form", v, err)
		}
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("a refused release touched the output directory: %v", err)
	}
}

func checkChecksums(t *testing.T, out string) {
	data, err := os.ReadFile(filepath.Join(out, release.ChecksumsFile))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("malformed checksum line %q", line)
		}
		got, err := sha256File(filepath.Join(out, name))
		if err != nil || got != sum {
			t.Errorf("%s: checksum %s, file hashes to %s (%v)", name, sum, got, err)
		}
		listed[name] = true
	}
	want := []string{"reloader-cluster.yaml", "reloader-namespace.yaml", "reloader-" + version + "-oci.tar",
		"reloader-" + strings.TrimPrefix(version, "v") + ".tgz"}
	for _, p := range platforms {
		bin := "reloader-" + version + "-" + strings.ReplaceAll(p, "/", "-")
		want = append(want, bin, bin+".tar", bin+".cdx.json")
	}
	for _, name := range want {
		if !listed[name] {
			t.Errorf("%s is not in %s", name, release.ChecksumsFile)
		}
	}
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != release.ChecksumsFile && !listed[e.Name()] {
			t.Errorf("%s is released without a checksum", e.Name())
		}
	}
}

func checkImages(t *testing.T, out string, created time.Time) {
	l := openLayout(t, filepath.Join(out, "oci"))
	ref := release.ImageRepository + ":" + version
	if got := l.index.Manifests; len(got) != 1 || got[0].Annotations["org.opencontainers.image.ref.name"] != ref {
		t.Fatalf("layout index.json must name one index %s, got %+v", ref, got)
	}
	var idx ociIndex
	l.blobJSON(t, l.index.Manifests[0].Digest, &idx)
	var got []string
	for _, m := range idx.Manifests {
		platform := strings.TrimSuffix(m.Platform.OS+"/"+m.Platform.Architecture+"/"+m.Platform.Variant, "/")
		got = append(got, platform)
		t.Run(platform, func(t *testing.T) {
			img := l.image(t, m.Digest)
			checkImageConfig(t, img.config, strings.TrimPrefix(platform, "linux/"), created)
			checkDockerfile(t, img.config)
			files := img.files(t, l)
			checkImageFiles(t, files)
			if platform == runtime.GOOS+"/"+runtime.GOARCH {
				checkBinaryRuns(t, files["reloader"].data)
			}
		})
	}
	slices.Sort(got)
	if !slices.Equal(got, platforms) {
		t.Errorf("image index platforms %v, want %v", got, platforms)
	}
}

func checkImageConfig(t *testing.T, cfg imageConfig, arch string, created time.Time) {
	c := cfg.Config
	if cfg.platform() != "linux/"+arch {
		t.Errorf("config platform %s, want linux/%s", cfg.platform(), arch)
	}
	if !slices.Equal(c.Entrypoint, []string{"/reloader"}) || len(c.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want [/reloader] and no cmd", c.Entrypoint, c.Cmd)
	}
	if c.User != "65532:65532" {
		t.Errorf("user %q, want the non-root 65532:65532", c.User)
	}
	want := map[string]string{
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": "0123456789abcdef",
		"org.opencontainers.image.created":  created.Format(time.RFC3339),
	}
	for k, v := range want {
		if c.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, c.Labels[k], v)
		}
	}
}

// checkDockerfile: the Dockerfile's final stage sets the user, working directory, port and
// entrypoint the image has.
func checkDockerfile(t *testing.T, cfg imageConfig) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	stages := strings.Split(string(data), "\nFROM ")
	final := stages[len(stages)-1]
	var ports []string
	for p := range cfg.Config.ExposedPorts {
		ports = append(ports, strings.TrimSuffix(p, "/tcp"))
	}
	want := []string{
		"scratch\n",
		"\nUSER " + cfg.Config.User + "\n",
		"\nWORKDIR " + cfg.Config.WorkingDir + "\n",
		"\nEXPOSE " + strings.Join(ports, " ") + "\n",
		"\nENTRYPOINT [\"" + strings.Join(cfg.Config.Entrypoint, `", "`) + "\"]",
	}
	for _, w := range want {
		if !strings.Contains(final, w) {
			t.Errorf("the Dockerfile's final stage lacks %q, which the image has", strings.TrimSpace(w))
		}
	}
	if !strings.Contains(strings.Join(stages[:len(stages)-1], ""), "go run . -base-tar") {
		t.Error("the Dockerfile does not take its base files from tools/image (-base-tar)")
	}
}

// checkImageFiles: no shell and no executable but the reloader, a non-root user, a CA bundle
// that parses.
func checkImageFiles(t *testing.T, files map[string]imageFile) {
	for name, f := range files {
		if f.typ == tar.TypeReg && f.mode&0o111 != 0 && name != "reloader" {
			t.Errorf("executable %s in the image; only /reloader may be", name)
		}
		if f.typ == tar.TypeSymlink || f.typ == tar.TypeLink {
			t.Errorf("link %s in the image", name)
		}
	}
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh"} {
		if _, ok := files[shell]; ok {
			t.Errorf("%s in the image", shell)
		}
	}
	if f := files["reloader"]; f.mode != 0o755 || f.uid != 0 {
		t.Errorf("/reloader mode %o uid %d, want 755 owned by root", f.mode, f.uid)
	}
	if !strings.Contains(string(files["etc/passwd"].data), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot user 65532:\n%s", files["etc/passwd"].data)
	}
	if f := files["tmp"]; f.mode != 0o1777 {
		t.Errorf("/tmp mode %o, want 1777", f.mode)
	}
	roots := 0
	rest := files["etc/ssl/certs/ca-certificates.crt"].data
	for {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			t.Errorf("CA bundle: %v", err)
		}
		roots++
	}
	if roots < 100 {
		t.Errorf("CA bundle holds %d certificates, want Mozilla's roots (over 100)", roots)
	}
}

// checkBinaryRuns executes the binary taken out of the image layer.
func checkBinaryRuns(t *testing.T, binary []byte) {
	path := filepath.Join(t.TempDir(), "reloader")
	if err := os.WriteFile(path, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != version {
		t.Errorf("reloader --version from the image: %q (%v), want %q", out, err, version)
	}
}

// checkDockerTarballs: each tarball is what `docker load` reads: a manifest.json naming one
// image tagged with the version, whose config is that platform's.
func checkDockerTarballs(t *testing.T, out string) {
	for _, p := range platforms {
		files := readTar(t, filepath.Join(out, "reloader-"+version+"-"+strings.ReplaceAll(p, "/", "-")+".tar"))
		var manifest []struct {
			Config   string
			RepoTags []string
			Layers   []string
		}
		if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
			t.Fatalf("%s: manifest.json: %v %+v", p, err, manifest)
		}
		m := manifest[0]
		if !slices.Equal(m.RepoTags, []string{release.ImageRepository + ":" + version}) || len(m.Layers) != 2 {
			t.Errorf("%s: tags %v, %d layers; want [%s:%s] and 2", p, m.RepoTags, len(m.Layers), release.ImageRepository, version)
		}
		var cfg imageConfig
		if err := json.Unmarshal(files[m.Config], &cfg); err != nil || cfg.platform() != p {
			t.Errorf("%s: config %s: platform %q (%v)", p, m.Config, cfg.platform(), err)
		}
	}
}

// imageRef finds every image: reference in a rendered manifest.
var imageRef = regexp.MustCompile(`(?m)^\s*image:\s*"?([^"\s]+)"?\s*$`)

// checkManifests: each rendered manifest names the image by its tag and pins it by the digest
// of the index in the release's OCI layout.
func checkManifests(t *testing.T, out string) {
	data, err := os.ReadFile(filepath.Join(out, "oci", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index struct {
		Manifests []struct {
			Digest string `json:"digest"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(data, &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("the OCI layout's index.json: %v, %d entries, want one", err, len(index.Manifests))
	}
	for _, base := range release.Bases {
		data, err := os.ReadFile(filepath.Join(out, "reloader-"+base+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		checkImageRefs(t, base, string(data), version+"@"+index.Manifests[0].Digest)
	}
}

func checkImageRefs(t *testing.T, what, yaml, tag string) {
	t.Helper()
	refs := imageRef.FindAllStringSubmatch(yaml, -1)
	if len(refs) == 0 {
		t.Errorf("%s: no image reference", what)
	}
	for _, r := range refs {
		if r[1] != release.ImageRepository+":"+tag {
			t.Errorf("%s: image %s, want %s:%s", what, r[1], release.ImageRepository, tag)
		}
	}
	if strings.Contains(yaml, ":latest") {
		t.Errorf("%s names a :latest image", what)
	}
}

// checkChart: the packaged chart carries the version, and rendering it deploys that image.
func checkChart(ctx context.Context, t *testing.T, out string) {
	chart := filepath.Join(out, "reloader-"+strings.TrimPrefix(version, "v")+".tgz")
	var meta string
	for name, data := range readTarGz(t, chart) {
		if name == "reloader/Chart.yaml" {
			meta = string(data)
		}
	}
	for _, want := range []string{"\nversion: " + strings.TrimPrefix(version, "v") + "\n", "\nappVersion: " + version + "\n"} {
		if !strings.Contains(meta, want) {
			t.Errorf("packaged Chart.yaml lacks %q:\n%s", strings.TrimSpace(want), meta)
		}
	}
	helm, err := testcluster.EnsureHelm(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := exec.CommandContext(ctx, helm, "template", "reloader", chart).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", chart, err, rendered)
	}
	checkImageRefs(t, "packaged chart", string(rendered), version)
}

// checkSBOMs: each SBOM describes its binary at the release version, lists the modules compiled
// into it and leaves out modules only tests use.
func checkSBOMs(t *testing.T, out string) {
	for _, p := range platforms {
		name := filepath.Join(out, "reloader-"+version+"-"+strings.ReplaceAll(p, "/", "-")+".cdx.json")
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		var bom cdx.BOM
		err = cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&bom)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		main := bom.Metadata.Component
		if main == nil || main.Name != "github.com/reloader/reloader" || main.Version != version ||
			!strings.Contains(main.PackageURL, "goarch="+strings.Split(p, "/")[1]) {
			t.Errorf("%s: main component %+v", p, main)
		}
		var names []string
		for _, c := range *bom.Components {
			names = append(names, c.Name)
		}
		for _, want := range []string{"stdlib", "k8s.io/client-go", "github.com/prometheus/client_golang"} {
			if !slices.Contains(names, want) {
				t.Errorf("%s: SBOM lacks %s", p, want)
			}
		}
		if slices.Contains(names, "sigs.k8s.io/kustomize/api") {
			t.Errorf("%s: SBOM lists kustomize, which only the release tooling uses", p)
		}
	}
}

// checkPush runs the release workflow's push script (.github/scripts/push-release.sh) with the
// pinned crane and helm against crane's in-memory registry on the loopback: the image index is
// pushed and checked against the digest the manifests pin, each platform's config is read back,
// the docker tarballs validate, and the chart pushed is the one packaged, at its digest.
func checkPush(ctx context.Context, t *testing.T, out string) {
	helm, err := testcluster.EnsureHelm(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	crane, addr := serveRegistry(ctx, t)

	script := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot(t), ".github", "scripts", "push-release.sh"))
	script.Env = append(os.Environ(), "CRANE="+crane, "HELM="+helm, "IMAGE="+addr+"/reloader", "CHARTS=oci://"+addr+"/charts",
		"VERSION="+version, "DIST="+out, "HELM_FLAGS=--plain-http", "HELM_CONFIG_HOME="+t.TempDir(), "HELM_CACHE_HOME="+t.TempDir())
	var stderr bytes.Buffer
	script.Stderr = &stderr
	printed, err := script.Output()
	if err != nil {
		t.Fatalf("push-release.sh: %v\n%s", err, stderr.String())
	}
	pushed := map[string]string{}
	for _, line := range strings.Fields(string(printed)) {
		if k, v, ok := strings.Cut(line, "="); ok {
			pushed[k] = v
		}
	}
	ref := addr + "/reloader:" + version
	if got := strings.TrimSpace(string(runCrane(ctx, t, crane, "digest", ref))); pushed["DIGEST"] != got || !strings.HasPrefix(got, "sha256:") {
		t.Errorf("push-release.sh printed DIGEST=%q; the registry has %q", pushed["DIGEST"], got)
	}
	for _, p := range platforms {
		var cfg imageConfig
		if err := json.Unmarshal(runCrane(ctx, t, crane, "config", "--platform", p, ref), &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.platform() != p || cfg.Config.User != "65532:65532" {
			t.Errorf("pushed index, %s: config for %s user %q", p, cfg.platform(), cfg.Config.User)
		}
		runCrane(ctx, t, crane, "validate", "--tarball", filepath.Join(out, "reloader-"+version+"-"+strings.ReplaceAll(p, "/", "-")+".tar"))
	}

	chartVersion := strings.TrimPrefix(version, "v")
	if got := strings.TrimSpace(string(runCrane(ctx, t, crane, "digest", addr+"/charts/reloader:"+chartVersion))); pushed["CHART_DIGEST"] != got {
		t.Errorf("push-release.sh printed CHART_DIGEST=%q; the registry has %q", pushed["CHART_DIGEST"], got)
	}
	show := exec.CommandContext(ctx, helm, "show", "chart", "oci://"+addr+"/charts/reloader", "--version", chartVersion, "--plain-http")
	show.Env = script.Env
	meta, err := show.CombinedOutput()
	if err != nil {
		t.Fatalf("helm show chart from the registry: %v\n%s", err, meta)
	}
	for _, want := range []string{"\nversion: " + chartVersion + "\n", "\nappVersion: " + version + "\n"} {
		if !strings.Contains("\n"+string(meta), want) {
			t.Errorf("the chart pulled from the registry lacks %q:\n%s", strings.TrimSpace(want), meta)
		}
	}
}

func runCrane(ctx context.Context, t *testing.T, crane string, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, crane, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crane %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("crane registry on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// --- reading what was written, with the standard library only, so the checks do not trust
// the library that wrote it.

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
	Platform    struct{ OS, Architecture, Variant string }
}

type ociIndex struct {
	Manifests []descriptor `json:"manifests"`
}

type imageConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant"`
	Config       struct {
		Entrypoint, Cmd []string
		User            string
		WorkingDir      string
		ExposedPorts    map[string]struct{}
		Labels          map[string]string
	} `json:"config"`
}

// platform is os/architecture[/variant], as the platforms are written.
func (c imageConfig) platform() string {
	return strings.TrimSuffix(c.OS+"/"+c.Architecture+"/"+c.Variant, "/")
}

type layout struct {
	dir   string
	index ociIndex
}

func openLayout(t *testing.T, dir string) layout {
	t.Helper()
	l := layout{dir: dir}
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &l.index); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l layout) blob(t *testing.T, digest string) []byte {
	t.Helper()
	algo, hex, _ := strings.Cut(digest, ":")
	data, err := os.ReadFile(filepath.Join(l.dir, "blobs", algo, hex))
	if err != nil {
		t.Fatal(err)
	}
	if got := sha256Bytes(data); "sha256:"+got != digest {
		t.Fatalf("blob %s hashes to %s", digest, got)
	}
	return data
}

func (l layout) blobJSON(t *testing.T, digest string, v any) {
	t.Helper()
	if err := json.Unmarshal(l.blob(t, digest), v); err != nil {
		t.Fatalf("blob %s: %v", digest, err)
	}
}

type image struct {
	config imageConfig
	layers []descriptor
}

func (l layout) image(t *testing.T, digest string) image {
	t.Helper()
	var m struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	l.blobJSON(t, digest, &m)
	var img image
	l.blobJSON(t, m.Config.Digest, &img.config)
	img.layers = m.Layers
	return img
}

type imageFile struct {
	typ  byte
	mode int64
	uid  int
	data []byte
}

// files unpacks the image's layers in order into path → file.
func (img image) files(t *testing.T, l layout) map[string]imageFile {
	t.Helper()
	out := map[string]imageFile{}
	for _, layer := range img.layers {
		zr, err := gzip.NewReader(bytes.NewReader(l.blob(t, layer.Digest)))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(zr)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(tr)
			out[strings.TrimSuffix(hdr.Name, "/")] = imageFile{hdr.Typeflag, hdr.Mode, hdr.Uid, data}
		}
	}
	return out
}

func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return tarFiles(t, bufio.NewReader(f))
}

func readTarGz(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	return tarFiles(t, zr)
}

func tarFiles(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		out[hdr.Name] = data
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func sha256File(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return sha256Bytes(data), nil
}

func sha256Bytes(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
