package testcluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Binaries holds the absolute paths of the control-plane executables and of
// the kwok stage configuration.
type Binaries struct {
	// Dir is the cache directory the binaries are built into.
	Dir string
	// KubeModule is the directory under tools/ that pins the Kubernetes binaries: kube, or
	// kube-vMAJOR.MINOR when $RELOADER_KUBE_VERSION asks for another minor version.
	KubeModule            string
	Etcd                  string
	KubeAPIServer         string
	KubeControllerManager string
	KubeScheduler         string
	Kwok                  string
	// KwokStages is a multi-document YAML file with the kwok Stage objects
	// that make nodes Ready and pods Running.
	KwokStages string
}

// binary describes one executable and the tools module that pins it.
type binary struct {
	name   string // file name, also the name KUBEBUILDER_ASSETS uses
	module string // directory under tools/
	pkg    string // package to go build
	path   *string
	stamp  bool // its module's build stamps the Kubernetes version into /version (see kubeLDFlags)
}

const (
	envTestbinDir    = "RELOADER_TESTBIN_DIR"
	envToolsDir      = "RELOADER_TOOLS_DIR"
	envAssets        = "KUBEBUILDER_ASSETS"
	envKubeVersion   = "RELOADER_KUBE_VERSION"
	defaultKube      = "kube"
	kwokModule       = "sigs.k8s.io/kwok"
	kwokStagesFile   = "kwok-stages.yaml"
	lockFile         = ".lock"
	buildErrorTail   = 20
	lockPollInterval = 200 * time.Millisecond
)

// kwokStageDirs are the directories of the kwok module whose Stage objects
// make up the kwok configuration.
func kwokStageDirs() []string {
	return []string{
		"kustomize/stage/node/fast",
		"kustomize/stage/node/heartbeat",
		"kustomize/stage/pod/fast",
	}
}

// helm is built only on request (EnsureHelm): the deploy tests render the
// Helm chart with it, the cluster does not need it. It has its own cache
// directory, so adding or bumping it never rebuilds the control plane.
const (
	helmName   = "helm"
	helmModule = "helm"
	helmPkg    = "helm.sh/helm/v3/cmd/helm"
)

func (b *Binaries) binaries() []binary {
	return []binary{
		{"etcd", "etcd", "go.etcd.io/etcd/server/v3", &b.Etcd, false},
		{"kube-apiserver", b.KubeModule, "k8s.io/kubernetes/cmd/kube-apiserver", &b.KubeAPIServer, true},
		{"kube-controller-manager", b.KubeModule, "k8s.io/kubernetes/cmd/kube-controller-manager", &b.KubeControllerManager, false},
		{"kube-scheduler", b.KubeModule, "k8s.io/kubernetes/cmd/kube-scheduler", &b.KubeScheduler, false},
		{"kwok", "kwok", "sigs.k8s.io/kwok/cmd/kwok", &b.Kwok, false},
	}
}

// EnsureBinaries returns the control-plane binaries, building the missing
// ones from the pinned modules under tools/ into a per-version cache
// directory. Concurrent callers, also in other processes, are serialized with
// a file lock; when everything is cached it returns without building or
// locking. Progress lines go to log (nil discards them).
func EnsureBinaries(ctx context.Context, log io.Writer) (Binaries, error) {
	if log == nil {
		log = io.Discard
	}
	tools, err := findToolsDir()
	if err != nil {
		return Binaries{}, err
	}
	kube, err := kubeModule(tools)
	if err != nil {
		return Binaries{}, err
	}
	dir, err := cacheDir(tools, kube)
	if err != nil {
		return Binaries{}, err
	}
	b := resolveBinaries(dir, kube)
	if b.complete() {
		return b, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Binaries{}, fmt.Errorf("create binary cache %s: %w", dir, err)
	}
	unlock, err := lockDir(ctx, dir, log)
	if err != nil {
		return Binaries{}, err
	}
	defer unlock()
	if err := b.buildMissing(ctx, tools, log); err != nil {
		return Binaries{}, err
	}
	if !exists(b.KwokStages) {
		if err := writeKwokStages(ctx, filepath.Join(tools, "kwok"), b.KwokStages); err != nil {
			return Binaries{}, err
		}
	}
	return b, nil
}

// EnsureHelm returns the path of the helm binary, building it from the pinned
// module tools/helm into a cache directory of its own on first use, in the
// same way and under the same kind of lock as EnsureBinaries. Start does not
// need it. Progress lines go to log (nil discards them).
func EnsureHelm(ctx context.Context, log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	tools, err := findToolsDir()
	if err != nil {
		return "", err
	}
	dir, err := helmCacheDir(tools)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, helmName)
	if exists(path) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create binary cache %s: %w", dir, err)
	}
	unlock, err := lockDir(ctx, dir, log)
	if err != nil {
		return "", err
	}
	defer unlock()
	if exists(path) {
		return path, nil
	}
	fmt.Fprintf(log, "building %s (first run only, a minute or two)...\n", helmName)
	stamp, err := helmLDFlags(ctx, filepath.Join(tools, helmModule))
	if err != nil {
		return "", err
	}
	helm := []binary{{name: helmName, module: helmModule, pkg: helmPkg, path: &path}}
	if err := goBuildAll(ctx, filepath.Join(tools, helmModule), helm, strippedLDFlags+" "+stamp); err != nil {
		return "", fmt.Errorf("build %s (%s in %s): %w", helmName, helmPkg, filepath.Join(tools, helmModule), err)
	}
	return path, nil
}

// helmLDFlags stamp the Kubernetes version of helm's client-go as the one helm template assumes,
// as helm's own release build does (unstamped, it assumes v1.20, below the chart's kubeVersion).
func helmLDFlags(ctx context.Context, dir string) (string, error) {
	_, minor, err := moduleVersion(ctx, dir, "k8s.io/client-go", "v0.%d.")
	if err != nil {
		return "", err
	}
	pkg := "helm.sh/helm/v3/pkg/chartutil"
	return fmt.Sprintf("-X %s.k8sVersionMajor=1 -X %s.k8sVersionMinor=%d", pkg, pkg, minor), nil
}

// kubeLDFlags stamp the pinned Kubernetes version into the API server's /version, as
// Kubernetes' own build does; unstamped it says v0.0.0-master, which helm cannot parse, so a
// chart's kubeVersion refuses every install.
func kubeLDFlags(ctx context.Context, dir string) (string, error) {
	v, minor, err := moduleVersion(ctx, dir, "k8s.io/kubernetes", "v1.%d.")
	if err != nil {
		return "", err
	}
	pkg := "k8s.io/component-base/version"
	return fmt.Sprintf("-X %s.gitVersion=%s -X %s.gitMajor=1 -X %s.gitMinor=%d -X %s.gitTreeState=clean",
		pkg, v, pkg, pkg, minor, pkg), nil
}

// moduleVersion is the version of mod that the module in dir requires, and its minor number
// read with format.
func moduleVersion(ctx context.Context, dir, mod, format string) (string, int, error) {
	out, err := goCommand(ctx, dir, "list", "-m", "-f", "{{.Version}}", mod)
	if err != nil {
		return "", 0, fmt.Errorf("read the version of %s in %s: %w", mod, dir, err)
	}
	v := strings.TrimSpace(string(out))
	var minor int
	if _, err := fmt.Sscanf(v, format, &minor); err != nil {
		return "", 0, fmt.Errorf("version %q of %s in %s: %w", v, mod, dir, err)
	}
	return v, minor, nil
}

// resolveBinaries picks each binary from KUBEBUILDER_ASSETS when it is there
// and from the cache directory otherwise.
func resolveBinaries(dir, kube string) Binaries {
	b := Binaries{Dir: dir, KubeModule: kube, KwokStages: filepath.Join(dir, kwokStagesFile)}
	assets := os.Getenv(envAssets)
	for _, bin := range b.binaries() {
		*bin.path = filepath.Join(dir, bin.name)
		if assets == "" {
			continue
		}
		if p := filepath.Join(assets, bin.name); exists(p) {
			*bin.path = p
		}
	}
	return b
}

func (b *Binaries) complete() bool {
	for _, bin := range b.binaries() {
		if !exists(*bin.path) {
			return false
		}
	}
	return exists(b.KwokStages)
}

// buildMissing builds the missing binaries with one go build per module: the Kubernetes
// binaries share most of their packages, and their links run side by side. Each is linked with
// strippedLDFlags.
func (b *Binaries) buildMissing(ctx context.Context, tools string, log io.Writer) error {
	byModule := map[string][]binary{}
	var modules []string
	for _, bin := range b.binaries() {
		if exists(*bin.path) {
			continue
		}
		if byModule[bin.module] == nil {
			modules = append(modules, bin.module)
		}
		byModule[bin.module] = append(byModule[bin.module], bin)
	}
	for _, module := range modules {
		bins, dir := byModule[module], filepath.Join(tools, module)
		ldflags := strippedLDFlags
		if slices.ContainsFunc(bins, func(bin binary) bool { return bin.stamp }) {
			stamp, err := kubeLDFlags(ctx, dir)
			if err != nil {
				return err
			}
			ldflags += " " + stamp
		}
		var names, pkgs []string
		for _, bin := range bins {
			names, pkgs = append(names, bin.name), append(pkgs, bin.pkg)
		}
		fmt.Fprintf(log, "building %s (first run only, a few minutes)...\n", strings.Join(names, ", "))
		if err := goBuildAll(ctx, dir, bins, ldflags); err != nil {
			return fmt.Errorf("build %s (%s in %s): %w", strings.Join(names, ", "), strings.Join(pkgs, " "), dir, err)
		}
	}
	return nil
}

// strippedLDFlags leave out the symbol table and the DWARF data, which take much of a link's
// time and which nothing here reads: a panic's trace comes from the runtime's own tables.
const strippedLDFlags = "-s -w"

// goBuildAll builds bins, all of module dir, into a temporary directory beside the first's path
// and renames each into place, so that each path either is complete or does not exist. With
// more than one, go build names each executable by its package path's last element, which
// must be its name.
func goBuildAll(ctx context.Context, dir string, bins []binary, ldflags string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(*bins[0].path), ".build-")
	if err != nil {
		return fmt.Errorf("create build directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	out := tmp + string(filepath.Separator)
	if len(bins) == 1 {
		out = filepath.Join(tmp, bins[0].name)
	}
	args := []string{"build", "-ldflags", ldflags, "-o", out}
	for _, bin := range bins {
		args = append(args, bin.pkg)
	}
	if _, err := goCommand(ctx, dir, args...); err != nil {
		return err
	}
	for _, bin := range bins {
		if err := os.Rename(filepath.Join(tmp, bin.name), *bin.path); err != nil {
			return fmt.Errorf("install %s: %w", *bin.path, err)
		}
	}
	return nil
}

// goCommand runs the go tool in dir outside any workspace and returns its
// stdout; on failure the error carries the tail of its stderr.
func goCommand(ctx context.Context, dir string, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, lastLines(stderr.String(), buildErrorTail))
	}
	return stdout.Bytes(), nil
}

// writeKwokStages joins the kwok stage YAML files shipped in the kwok module
// into one configuration file at out.
func writeKwokStages(ctx context.Context, kwokTools, out string) error {
	moduleDir, err := moduleDir(ctx, kwokTools, kwokModule)
	if err != nil {
		return fmt.Errorf("locate %s module: %w", kwokModule, err)
	}
	var docs []string
	for _, dir := range kwokStageDirs() {
		found, err := readStages(filepath.Join(moduleDir, dir))
		if err != nil {
			return fmt.Errorf("read kwok stages: %w", err)
		}
		docs = append(docs, found...)
	}
	return writeFileAtomic(out, []byte(strings.Join(docs, "---\n")))
}

// moduleDir returns where the module cache holds module, downloading it when
// needed.
func moduleDir(ctx context.Context, dir, module string) (string, error) {
	out, err := goCommand(ctx, dir, "mod", "download", "-json", module)
	if err != nil {
		return "", err
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("decode go mod download output: %w", err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no directory (%s)", module, info.Error)
	}
	return info.Dir, nil
}

// readStages returns the YAML documents in dir, skipping kustomization.yaml.
func readStages(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var docs []string
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".yaml" || e.Name() == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		doc := strings.TrimPrefix(string(data), "---\n")
		if !strings.HasSuffix(doc, "\n") {
			doc += "\n"
		}
		docs = append(docs, doc)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("no stage files in %s", dir)
	}
	return docs, nil
}

// findToolsDir returns the directory holding the pinned tool modules:
// $RELOADER_TOOLS_DIR, else the nearest tools/ above the working directory,
// else the one next to this source file.
func findToolsDir() (string, error) {
	if dir := os.Getenv(envToolsDir); dir != "" {
		return filepath.Abs(dir)
	}
	if wd, err := os.Getwd(); err == nil {
		if dir, ok := toolsDirAbove(wd); ok {
			return dir, nil
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		if dir, ok := toolsDirAbove(filepath.Dir(file)); ok {
			return dir, nil
		}
	}
	return "", fmt.Errorf("find tools dir: no tools/kube/go.mod above the working directory; set %s", envToolsDir)
}

func toolsDirAbove(dir string) (string, bool) {
	for {
		tools := filepath.Join(dir, "tools")
		if exists(filepath.Join(tools, "kube", "go.mod")) {
			return tools, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// kubeModule returns the tools/ module pinning the Kubernetes binaries for
// $RELOADER_KUBE_VERSION=MAJOR.MINOR (make test-matrix): tools/kube when it
// pins that minor version, else tools/kube-vMAJOR.MINOR. Unset, it is tools/kube.
func kubeModule(tools string) (string, error) {
	v := strings.TrimPrefix(os.Getenv(envKubeVersion), "v")
	if v == "" {
		return defaultKube, nil
	}
	gomod, err := os.ReadFile(filepath.Join(tools, defaultKube, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("read the pinned Kubernetes version: %w", err)
	}
	if strings.Contains(string(gomod), "\nrequire k8s.io/kubernetes v"+v+".") {
		return defaultKube, nil
	}
	module := "kube-v" + v
	if !exists(filepath.Join(tools, module, "go.mod")) {
		return "", fmt.Errorf("%s=%s: neither tools/%s nor tools/%s pins it", envKubeVersion, v, defaultKube, module)
	}
	return module, nil
}

// cacheDir returns $RELOADER_TESTBIN_DIR, or a user cache directory keyed by
// the hash of the go.mod and go.sum files of etcd, kwok and the kube module.
func cacheDir(tools, kube string) (string, error) {
	if dir := os.Getenv(envTestbinDir); dir != "" {
		return filepath.Abs(dir)
	}
	sum, err := toolsHash(tools, func(module string) bool { return module == "etcd" || module == "kwok" || module == kube })
	if err != nil {
		return "", err
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locate user cache dir: %w", err)
	}
	// "-kv": kube-apiserver stamped by kubeLDFlags; binaries cached before it are not reused.
	return filepath.Join(base, "reloader", "testbin", sum+"-kv"), nil
}

// helmCacheDir returns $RELOADER_TESTBIN_DIR, or a user cache directory keyed
// by the hash of tools/helm's go.mod and go.sum files.
func helmCacheDir(tools string) (string, error) {
	if dir := os.Getenv(envTestbinDir); dir != "" {
		return filepath.Abs(dir)
	}
	sum, err := toolsHash(tools, func(module string) bool { return module == helmModule })
	if err != nil {
		return "", err
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locate user cache dir: %w", err)
	}
	// "-kv": built with helmLDFlags; helms cached before them are not reused.
	return filepath.Join(base, "reloader", "testbin", helmName+"-"+sum+"-kv"), nil
}

// toolsHash returns the first 12 hex digits of a sha256 over the go.mod and
// go.sum of every tools/<module> that include admits, in a stable order.
func toolsHash(tools string, include func(module string) bool) (string, error) {
	mods, _ := filepath.Glob(filepath.Join(tools, "*", "go.mod"))
	sums, _ := filepath.Glob(filepath.Join(tools, "*", "go.sum"))
	files := slices.DeleteFunc(append(mods, sums...), func(f string) bool {
		return !include(filepath.Base(filepath.Dir(f)))
	})
	if len(files) == 0 {
		return "", fmt.Errorf("hash tool modules: no go.mod files in %s", tools)
	}
	slices.Sort(files)
	h := sha256.New()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("hash tool modules: %w", err)
		}
		rel, _ := filepath.Rel(tools, f)
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// lockDir takes an exclusive flock on dir's lock file, waiting for other
// builders while ctx allows. The returned function releases it.
func lockDir(ctx context.Context, dir string, log io.Writer) (func(), error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	waiting := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !waiting {
			fmt.Fprintf(log, "waiting for another process building test binaries (%s)...\n", path)
			waiting = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-time.After(lockPollInterval):
		}
	}
}

func writeFileAtomic(path string, data []byte) error {
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// lastLines returns at most n trailing non-empty lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
