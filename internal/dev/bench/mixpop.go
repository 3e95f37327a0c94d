package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The mix population (issue 52): of n configs, mixReadPct% are read by workloads, laid out as
// the growth population's (clusterWide); mixTokenPct% are service-account token Secrets and
// the rest, 60%, Helm release Secrets. Nothing reads the last two: a cluster's Secrets are
// mostly such, Helm keeping up to helmHistory revisions of every release.
const (
	mixReadPct  = 20
	mixTokenPct = 20
	helmHistory = 10 // Helm's default --history-max
)

// Helm release Secret sizes: the length of the "release" value, a base64 gzip of the release
// (chart, values, manifest). helmTiers draws them: most releases of small charts, a tail of
// charts with many templates or CRDs and a few, like kube-prometheus-stack, near the 1 MiB
// limit. Within a tier the size is log-uniform. The mean is about 34 KiB, the median 14 KiB.
var helmTiers = []struct {
	upTo     float64 // cumulative share of the releases
	min, max int     // bytes
}{
	{0.85, 4 << 10, 32 << 10},
	{0.99, 32 << 10, 300 << 10},
	{1, 300 << 10, 960 << 10},
}

// Service-account token Secret contents as the token controller writes them: a legacy JWT
// (RS256, about 950 bytes), the cluster CA in PEM (about 1.1 KiB) and the namespace.
const (
	tokenJWTBytes = 950
	tokenCABytes  = 1100
)

// mix returns the mix population of n configs over namespaces.
func (p population) mix(n, namespaces int) population {
	q := p.clusterWide(n*mixReadPct/100, namespaces)
	q.Tokens = n * mixTokenPct / 100
	q.HelmReleases = max(0, n-q.ConfigMaps-q.Secrets-q.Tokens)
	return q
}

// configs counts the ConfigMaps and Secrets of every kind.
func (p population) configs() int { return p.ConfigMaps + p.Secrets + p.HelmReleases + p.Tokens }

// objects counts what create makes.
func (p population) objects() int { return p.configs() + p.Deployments }

// mixSeed keeps the sizes and contents of Helm release Secrets the same from run to run.
const mixSeed = 52

// unitFloat maps k to [0, 1), the same for the same k.
func unitFloat(k int) float64 {
	return rand.New(rand.NewPCG(mixSeed, uint64(k))).Float64()
}

// helmReleaseSize is the size of Helm release Secret k's "release" value.
func helmReleaseSize(k int) int {
	u := unitFloat(k)
	lo := 0.0
	for _, t := range helmTiers {
		if u < t.upTo || t.upTo == 1 {
			f := (u - lo) / (t.upTo - lo)
			return int(float64(t.min) * math.Pow(float64(t.max)/float64(t.min), f))
		}
		lo = t.upTo
	}
	panic("unreachable")
}

// randomText is base64 text of random bytes, as long as the largest Helm release: gzip output
// looks random, and slices of it stand for any release's or token's value.
var randomText = sync.OnceValue(func() []byte {
	raw := make([]byte, helmTiers[len(helmTiers)-1].max*3/4+3)
	r := rand.New(rand.NewPCG(mixSeed, 0))
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	return []byte(base64.StdEncoding.EncodeToString(raw))
})

// textOf returns n bytes of randomText, starting at a place that depends on k.
func textOf(k, n int) []byte {
	t := randomText()
	off := (k * 7919) % (len(t) - n + 1)
	return t[off : off+n]
}

// helmRelease is where Helm release Secret k belongs: its release, revision and status.
type helmRelease struct {
	name     string // the release's name
	index    int    // the release's number, which picks its namespace
	revision int
	status   string
}

func (p population) helmReleaseOf(k int) helmRelease {
	r := helmRelease{name: fmt.Sprintf("rel-%06d", k/helmHistory), index: k / helmHistory, revision: k%helmHistory + 1, status: "superseded"}
	if r.revision == helmHistory || k == p.HelmReleases-1 {
		r.status = "deployed"
	}
	return r
}

// newHelmReleaseSecret returns Helm release Secret k as Helm 3 stores it: named after the
// release and revision, labelled with them and the status, the release in one value.
func (p population) newHelmReleaseSecret(k int) *corev1.Secret {
	r := p.helmReleaseOf(k)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", r.name, r.revision),
			Labels: map[string]string{
				"owner": "helm", "name": r.name, "version": strconv.Itoa(r.revision), "status": r.status,
			},
		},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": textOf(k, helmReleaseSize(k))},
	}
}

// newTokenSecret returns service-account token Secret k. The API server requires only the
// service-account.name annotation; the token controller of kube-controller-manager, which
// the bench's control plane does not run, adds the UID and the data, so the bench writes
// them itself. Nothing checks that the ServiceAccount exists.
func newTokenSecret(ns string, k int) *corev1.Secret {
	sa := fmt.Sprintf("sa-%06d", k)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: sa + "-token-" + strconv.FormatInt(int64(k%60466176)+60466176, 36)[1:],
			Annotations: map[string]string{
				corev1.ServiceAccountNameKey: sa,
				corev1.ServiceAccountUIDKey:  fmt.Sprintf("00000000-0000-4000-8000-%012d", k),
			},
		},
		Type: corev1.SecretTypeServiceAccountToken,
		Data: map[string][]byte{
			corev1.ServiceAccountTokenKey:     textOf(k, tokenJWTBytes),
			corev1.ServiceAccountRootCAKey:    textOf(k+1, tokenCABytes),
			corev1.ServiceAccountNamespaceKey: []byte(ns),
		},
	}
}

// createUnread makes the Helm release and service-account token Secrets of p.
func (p population) createUnread(ctx context.Context, client kubernetes.Interface, base string, workers int) error {
	err := forEach(ctx, p.HelmReleases, workers, func(ctx context.Context, k int) error {
		s := p.newHelmReleaseSecret(k)
		_, err := client.CoreV1().Secrets(p.namespaceOf(base, p.helmReleaseOf(k).index)).Create(ctx, s, metav1.CreateOptions{})
		return wrap(err, "create Secret %s", s.Name)
	})
	if err != nil {
		return err
	}
	return forEach(ctx, p.Tokens, workers, func(ctx context.Context, k int) error {
		ns := p.namespaceOf(base, k)
		s := newTokenSecret(ns, k)
		_, err := client.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
		return wrap(err, "create Secret %s", s.Name)
	})
}

// dataBytes sums the values of the population's configs by kind: what etcd and the API
// server's watch cache hold besides metadata.
func (p population) dataBytes() map[string]int64 {
	out := map[string]int64{
		"configmaps": int64(p.ConfigMaps) * int64(p.ConfigMapKiB<<10+1),
		"secrets":    int64(p.Secrets) * int64(p.SecretKiB<<10+1),
		"sa_tokens":  int64(p.Tokens) * (tokenJWTBytes + tokenCABytes + int64(len(populationNamespace)+3)),
	}
	var helm int64
	for k := range p.HelmReleases {
		helm += int64(helmReleaseSize(k))
	}
	out["helm_releases"] = helm
	return out
}
