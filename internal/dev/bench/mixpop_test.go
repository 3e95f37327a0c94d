package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestMixCounts checks the make-up of the mix population at the sizes the bench runs: 20% of
// the configs read by workloads as in growth, 20% service-account tokens, 60% Helm releases.
func TestMixCounts(t *testing.T) {
	base := population{ConfigMapKiB: 10, SecretKiB: 2}
	for _, n := range []int{10_000, 50_000, 100_000, 500_000} {
		p := base.mix(n, 100)
		if got := p.configs(); got != n {
			t.Errorf("%d: configs = %d", n, got)
		}
		if read := p.ConfigMaps + p.Secrets; read != n/5 {
			t.Errorf("%d: configs read by workloads = %d, want %d", n, read, n/5)
		}
		if p.Deployments != n/25 || p.Secrets != p.Deployments || p.ConfigMaps != 4*p.Deployments {
			t.Errorf("%d: %d Deployments, %d ConfigMaps, %d Secrets: want growth's layout of %d configs", n, p.Deployments, p.ConfigMaps, p.Secrets, n/5)
		}
		if p.Tokens != n/5 || p.HelmReleases != n*3/5 {
			t.Errorf("%d: %d tokens, %d Helm releases; want %d and %d", n, p.Tokens, p.HelmReleases, n/5, n*3/5)
		}
		if err := p.validate(); err != nil {
			t.Errorf("%d: %v", n, err)
		}
	}
}

// TestHelmReleaseSizes checks the size distribution of 300,000 Helm release Secrets (500,000
// configs): its tiers' shares, bounds, mean and median, and that sizes repeat from run to run.
func TestHelmReleaseSizes(t *testing.T) {
	const n = 300_000
	sizes := make([]int, n)
	var sum int64
	var small, tail, huge int
	for k := range sizes {
		s := helmReleaseSize(k)
		sizes[k], sum = s, sum+int64(s)
		switch {
		case s < 4<<10 || s > 960<<10:
			t.Fatalf("release %d: size %d outside 4 KiB..960 KiB", k, s)
		case s < 32<<10:
			small++
		case s < 300<<10:
			tail++
		default:
			huge++
		}
	}
	share := func(c int) float64 { return float64(c) / n }
	if s := share(small); s < 0.845 || s > 0.855 {
		t.Errorf("share under 32 KiB = %.4f, want 0.85", s)
	}
	if s := share(tail); s < 0.135 || s > 0.145 {
		t.Errorf("share 32..300 KiB = %.4f, want 0.14", s)
	}
	if s := share(huge); s < 0.008 || s > 0.012 {
		t.Errorf("share from 300 KiB = %.4f, want 0.01", s)
	}
	mean := float64(sum) / n / 1024
	if mean < 32 || mean > 36 {
		t.Errorf("mean = %.1f KiB, want about 34", mean)
	}
	slices.Sort(sizes)
	if med := float64(sizes[n/2]) / 1024; med < 12 || med > 16 {
		t.Errorf("median = %.1f KiB, want about 14", med)
	}
	if first, again := helmReleaseSize(12345), helmReleaseSize(12345); first != again {
		t.Errorf("release 12345 took %d bytes, then %d: sizes must follow from the release", first, again)
	}
}

// TestMixCreate creates a small mix population on a fake client and checks each object's
// kind, type, labels, annotations and sizes as the API server and the reloader see them.
func TestMixCreate(t *testing.T) {
	p := population{ConfigMapKiB: 1, SecretKiB: 1}.mix(1000, 10)
	client := fake.NewClientset()
	if err := p.create(context.Background(), client, "bench", 8); err != nil {
		t.Fatal(err)
	}
	secrets, err := client.CoreV1().Secrets("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byType := map[corev1.SecretType]int{}
	deployed := 0
	namespaces := map[string]bool{}
	for _, s := range secrets.Items {
		byType[s.Type]++
		namespaces[s.Namespace] = true
		switch s.Type {
		case "helm.sh/release.v1":
			if s.Labels["owner"] != "helm" || s.Labels["name"] == "" || s.Labels["version"] == "" {
				t.Errorf("%s: labels %v", s.Name, s.Labels)
			}
			if !strings.HasPrefix(s.Name, "sh.helm.release.v1."+s.Labels["name"]+".v"+s.Labels["version"]) {
				t.Errorf("%s: name does not follow the labels %v", s.Name, s.Labels)
			}
			if s.Labels["status"] == "deployed" {
				deployed++
			}
			if len(s.Data["release"]) < 4<<10 {
				t.Errorf("%s: release of %d bytes", s.Name, len(s.Data["release"]))
			}
		case corev1.SecretTypeServiceAccountToken:
			if s.Annotations[corev1.ServiceAccountNameKey] == "" {
				t.Errorf("%s: no %s annotation, which the API server requires", s.Name, corev1.ServiceAccountNameKey)
			}
			if len(s.Data[corev1.ServiceAccountTokenKey]) != tokenJWTBytes || string(s.Data[corev1.ServiceAccountNamespaceKey]) != s.Namespace {
				t.Errorf("%s: data %d token bytes, namespace %q", s.Name, len(s.Data[corev1.ServiceAccountTokenKey]), s.Data[corev1.ServiceAccountNamespaceKey])
			}
		}
	}
	want := map[corev1.SecretType]int{"helm.sh/release.v1": 600, corev1.SecretTypeServiceAccountToken: 200, "": 40}
	for typ, n := range want {
		if byType[typ] != n {
			t.Errorf("%d Secrets of type %q, want %d (all: %v)", byType[typ], typ, n, byType)
		}
	}
	if deployed != 600/helmHistory {
		t.Errorf("%d deployed Helm releases, want one per release, %d", deployed, 600/helmHistory)
	}
	if len(namespaces) != 10 {
		t.Errorf("Secrets in %d namespaces, want 10", len(namespaces))
	}
	cms, err := client.CoreV1().ConfigMaps("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deps, err := client.AppsV1().Deployments("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != 160 || len(deps.Items) != 40 {
		t.Errorf("%d ConfigMaps and %d Deployments, want 160 and 40", len(cms.Items), len(deps.Items))
	}
}
