package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/reloader/reloader/internal/dev/release"
)

// TestSourcesNameOneReleasedImage: the plain manifests, the chart's appVersion and the top of
// CHANGELOG.md name the same version, and nothing under deploy/ names a :latest image, so a
// checkout applied as it is runs the release it belongs to (make release rewrites all of them).
func TestSourcesNameOneReleasedImage(t *testing.T) {
	var chart struct{ Version, AppVersion string }
	data, err := os.ReadFile(filepath.Join("helm", "reloader", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	if "v"+chart.Version != chart.AppVersion {
		t.Errorf("Chart.yaml version %q and appVersion %q differ (a release sets appVersion to v+version)", chart.Version, chart.AppVersion)
	}
	want := release.ImageRepository + ":" + chart.AppVersion
	for _, base := range release.Bases {
		d := one[*appsv1.Deployment](t, readManifestDir(t, base))
		if got := reloaderContainer(t, d).Image; got != want {
			t.Errorf("deploy/%s: image %s, want %s (Chart.yaml's appVersion)", base, got, want)
		}
	}
	changelog, err := os.ReadFile(filepath.Join("..", "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	top := regexp.MustCompile(`(?m)^## \[?(v[0-9][^\] ]*)`).FindSubmatch(changelog)
	if top == nil || string(top[1]) != chart.AppVersion {
		t.Errorf("CHANGELOG.md's newest entry %q, want %s", top, chart.AppVersion)
	}
	err = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(path, ".yaml") && !strings.HasSuffix(path, ".tpl") {
			return err
		}
		data, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(data), "reloader:latest") {
			t.Errorf("%s names reloader:latest", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
