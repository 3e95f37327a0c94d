package testcluster

import (
	"os"
	"path/filepath"
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
