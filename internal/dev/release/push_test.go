package release_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/reloader/reloader/internal/dev/testcluster"
)

// TestMakePushRunsTheImageItBuiltFromTheUsersRegistry follows the README's way in with no
// published image: make push REGISTRY=... (make image, then the pinned crane) into crane's
// registry on the loopback, then kubectl apply -k of the overlay it wrote. The registry must
// hold the index make image built, under the tag the manifests name, and the overlay, applied
// on the test control plane, must run a reloader pod from exactly that image. kwok's pods do
// not pull images, so that the image starts in a real kubelet is not proven here.
func TestMakePushRunsTheImageItBuiltFromTheUsersRegistry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	root := repoRoot(t)
	crane, addr := serveRegistry(ctx, t)

	out := t.TempDir()
	images, overlays := filepath.Join(out, "image"), filepath.Join(out, "deploy")
	makePush := exec.CommandContext(ctx, "make", "-C", root, "push", "REGISTRY="+addr+"/team",
		"PLATFORMS=linux/amd64", "IMAGE_OUT="+images, "OVERLAYS="+overlays)
	printed, err := makePush.CombinedOutput()
	if err != nil {
		t.Fatalf("make push: %v\n%s", err, printed)
	}

	tag := manifestTag(t, filepath.Join(root, "deploy", "namespace", "reloader.yaml"))
	repo := addr + "/team/reloader"
	digest := strings.TrimSpace(string(runCrane(ctx, t, crane, "digest", repo+":"+tag)))
	index := openLayout(t, filepath.Join(images, "oci"))
	if len(index.index.Manifests) != 1 || index.index.Manifests[0].Digest != digest {
		t.Fatalf("the registry holds %s at %s:%s; make image built %+v", digest, repo, tag, index.index.Manifests)
	}
	var cfg imageConfig
	if err := json.Unmarshal(runCrane(ctx, t, crane, "config", "--platform", "linux/amd64", repo+":"+tag), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Config.Labels["org.opencontainers.image.version"] != tag || cfg.Config.Entrypoint[0] != "/reloader" {
		t.Errorf("pushed image config: version label %q, entrypoint %v; want %s, /reloader",
			cfg.Config.Labels["org.opencontainers.image.version"], cfg.Config.Entrypoint, tag)
	}
	want := repo + ":" + tag + "@" + digest
	if !strings.Contains(string(printed), "pushed "+want) {
		t.Errorf("make push does not say what it pushed (%s):\n%s", want, printed)
	}

	for _, base := range []string{"namespace", "cluster"} {
		if got := renderedImage(t, filepath.Join(overlays, base)); got != want {
			t.Errorf("kubectl apply -k %s runs %q, want %q", filepath.Join(overlays, base), got, want)
		}
	}
	runOverlay(ctx, t, filepath.Join(overlays, "namespace"), want)
}

// serveRegistry builds crane from tools/image's pinned module and serves its in-memory
// registry on a loopback address until the test ends.
func serveRegistry(ctx context.Context, t *testing.T) (crane, addr string) {
	t.Helper()
	crane = filepath.Join(t.TempDir(), "crane")
	build := exec.CommandContext(ctx, "go", "build", "-o", crane, "github.com/google/go-containerregistry/cmd/crane")
	build.Dir, build.Env = filepath.Join(repoRoot(t), "tools", "image"), append(os.Environ(), "GOWORK=off")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build crane: %v\n%s", err, msg)
	}
	addr = freeLoopbackAddr(t)
	serve := exec.CommandContext(ctx, crane, "registry", "serve", "--address", addr)
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill(); serve.Wait() })
	waitListening(t, addr)
	return crane, addr
}

// manifestTag is the tag of the reloader image a manifest names.
func manifestTag(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`image: ghcr\.io/reloader/reloader:(\S+)`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("%s names no reloader image", path)
	}
	return string(m[1])
}

// renderedImage renders the overlay as kubectl apply -k does and returns the Deployment's image.
func renderedImage(t *testing.T, dir string) string {
	t.Helper()
	d := overlayDeployment(t, dir)
	return d.Spec.Template.Spec.Containers[0].Image
}

func overlayDeployment(t *testing.T, dir string) *appsv1.Deployment {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	for _, r := range m.Resources() {
		if r.GetKind() != "Deployment" {
			continue
		}
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		var d appsv1.Deployment
		if err := yaml.Unmarshal(data, &d); err != nil {
			t.Fatal(err)
		}
		return &d
	}
	t.Fatalf("kustomize %s: no Deployment", dir)
	return nil
}

// runOverlay applies the rendered overlay into a namespace of a local control plane and waits
// for a Running reloader pod whose container names image.
func runOverlay(ctx context.Context, t *testing.T, dir, image string) {
	t.Helper()
	c, err := testcluster.Start(ctx, testcluster.Options{Pods: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	ns := c.NewNamespace(t)
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(ctx, ns, manifest); err != nil {
		t.Fatalf("apply %s: %v", dir, err)
	}
	var last []string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		last = last[:0]
		for _, p := range pods.Items {
			last = append(last, p.Name+" "+string(p.Status.Phase)+" "+p.Spec.Containers[0].Image)
			if p.Status.Phase == corev1.PodRunning && p.Spec.Containers[0].Image == image {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no Running pod of %s in %s: %v; pods: %v", image, ns, err, last)
	}
}
