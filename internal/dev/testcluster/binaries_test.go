package testcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestKubeModuleFollowsTheRequestedMinorVersion: RELOADER_KUBE_VERSION picks tools/kube when
// that module pins the minor version, tools/kube-vX.Y otherwise, and refuses a version that
// nothing pins instead of silently testing another.
func TestKubeModuleFollowsTheRequestedMinorVersion(t *testing.T) {
	tools := t.TempDir()
	for dir, gomod := range map[string]string{
		"kube":       "module reloader.local/tools/kube\n\nrequire k8s.io/kubernetes v1.36.3\n",
		"kube-v1.37": "module reloader.local/tools/kube-v1.37\n\nrequire k8s.io/kubernetes v1.37.2\n",
	} {
		if err := os.MkdirAll(filepath.Join(tools, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tools, dir, "go.mod"), []byte(gomod), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ env, want, err string }{
		{"", "kube", ""},
		{"1.36", "kube", ""},
		{"v1.36", "kube", ""},
		{"1.37", "kube-v1.37", ""},
		{"1.3", "", "neither"}, // a prefix of 1.36 is not 1.36
		{"1.35", "", "neither"},
	} {
		t.Setenv(envKubeVersion, tc.env)
		got, err := kubeModule(tools)
		if got != tc.want || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s=%q: got %q, %v; want %q, error containing %q", envKubeVersion, tc.env, got, err, tc.want, tc.err)
		}
	}
}

// TestToolModulesCompileOneVersionOfWhatTheyShare: the tools/ modules that make tools builds,
// tools/image and the reloader's own module (whose tests link client-go) select one version of
// every module that two of them compile, so that the build cache compiles each shared package
// once.
func TestToolModulesCompileOneVersionOfWhatTheyShare(t *testing.T) {
	tools, err := findToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	builds := map[string][]string{
		filepath.Dir(tools):              {"-test", "./..."},
		filepath.Join(tools, helmModule): {helmPkg},
		filepath.Join(tools, "image"):    {"./...", "github.com/google/go-containerregistry/cmd/crane"},
	}
	b := resolveBinaries(t.TempDir(), defaultKube)
	for _, bin := range b.binaries() {
		dir := filepath.Join(tools, bin.module)
		builds[dir] = append(builds[dir], bin.pkg)
	}
	selected := map[string]map[string][]string{} // module path -> version -> the dirs selecting it
	for dir, pkgs := range builds {
		args := append([]string{"list", "-deps", "-f",
			"{{with .Module}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}}"}, pkgs...)
		out, err := goCommand(t.Context(), dir, args...)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(filepath.Dir(tools), dir)
		for _, line := range strings.Split(string(out), "\n") {
			path, version, _ := strings.Cut(line, " ")
			if version == "" { // the main module, or a local replacement
				continue
			}
			if selected[path] == nil {
				selected[path] = map[string][]string{}
			}
			if !slices.Contains(selected[path][version], rel) {
				selected[path][version] = append(selected[path][version], rel)
			}
		}
	}
	var split []string
	for path, versions := range selected {
		if len(versions) > 1 {
			split = append(split, fmt.Sprintf("%s: %v", path, versions))
		}
	}
	slices.Sort(split)
	for _, s := range split {
		t.Errorf("%s; go get the newest where it is older, so it compiles once", s)
	}
}
