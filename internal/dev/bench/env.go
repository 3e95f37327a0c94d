package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/internal/dev/testcluster"
	"github.com/reloader/reloader/reloader"
)

// bulkQPS and bulkBurst let the bench create tens of thousands of objects quickly.
const (
	bulkQPS   = 500
	bulkBurst = 1000
)

// env is one namespace of a running control plane holding a population, watched by a tracker.
type env struct {
	cluster *testcluster.Cluster
	client  kubernetes.Interface
	ns      string
	pop     population
	setup   time.Duration // time to create the population
	tracker *tracker

	nextCM  atomic.Int64 // rotates over the ConfigMaps that have a dependent
	version atomic.Int64 // makes every update's content new
}

// bulkClient returns an admin client with high rate limits that speaks protobuf.
func bulkClient(c *testcluster.Cluster) (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = bulkQPS, bulkBurst
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("build bulk client: %w", err)
	}
	return client, nil
}

// newEnv creates the namespaces of pop named after ns, fills them and starts watching their
// Deployments.
func newEnv(ctx context.Context, c *testcluster.Cluster, ns string, pop population, workers int) (*env, error) {
	client, err := bulkClient(c)
	if err != nil {
		return nil, err
	}
	for _, n := range pop.namespaces(ns) {
		if err := createNamespace(ctx, client, n); err != nil {
			return nil, err
		}
	}
	begin := time.Now()
	if err := pop.create(ctx, client, ns, workers); err != nil {
		return nil, fmt.Errorf("create population in %s: %w", ns, err)
	}
	e := &env{cluster: c, client: client, ns: ns, pop: pop, setup: time.Since(begin)}
	if e.tracker, err = startTracker(ctx, client, pop.watched(ns)); err != nil {
		return nil, err
	}
	return e, nil
}

func createNamespace(ctx context.Context, client kubernetes.Interface, ns string) error {
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	return wrap(err, "create namespace %s", ns)
}

func (e *env) close() { e.tracker.stop() }

// reload is a config update whose effect on one Deployment the bench waits for.
type reload struct {
	config     string // name of the updated config
	deployment string
	envVar     string
	hash       string    // the config's new content hash
	updated    time.Time // when the update call returned
}

// key is the tracker key of the reload's outcome.
func (rl reload) key() string { return trackerKey(rl.deployment, rl.envVar, rl.hash) }

// pickConfigMap returns the next ConfigMap that has a dependent, round robin.
func (e *env) pickConfigMap() int {
	return int(e.nextCM.Add(1)-1) % (2 * e.pop.Deployments)
}

// updateConfigMap changes ConfigMap k's content and returns what its dependent should show.
func (e *env) updateConfigMap(ctx context.Context, k int) (reload, error) {
	hash, err := patchConfigMap(ctx, e.client, e.pop.namespaceOf(e.ns, e.pop.configMapSlot(k)), configMapName(k), e.version.Add(1))
	if err != nil {
		return reload{}, err
	}
	return reload{config: configMapName(k), deployment: deploymentName(k / 2), envVar: envVar("configmap", configMapName(k)), hash: hash, updated: time.Now()}, nil
}

// patchConfigMap sets the "version" key of a ConfigMap and returns its new content hash.
func patchConfigMap(ctx context.Context, client kubernetes.Interface, ns, name string, version int64) (string, error) {
	body := fmt.Sprintf(`{"data":{"version":%q}}`, strconv.FormatInt(version, 10))
	cm, err := client.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
	if err != nil {
		return "", fmt.Errorf("update ConfigMap %s/%s: %w", ns, name, err)
	}
	return confighash.ConfigMap(cm), nil
}

// patchSecret sets the "version" key of a Secret and returns its new content hash, keyed as the
// reloader watching ns writes it (the key is read first, so as not to delay the change's time).
func patchSecret(ctx context.Context, client kubernetes.Interface, ns, name string, version int64) (string, error) {
	keySecret, err := client.CoreV1().Secrets(ns).Get(ctx, reloader.DefaultHashKeySecret, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read the reloader's hash key in %s: %w", ns, err)
	}
	key, err := reloader.HashKeyOf(keySecret)
	if err != nil {
		return "", err
	}
	body := fmt.Sprintf(`{"stringData":{"version":%q}}`, strconv.FormatInt(version, 10))
	s, err := client.CoreV1().Secrets(ns).Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
	if err != nil {
		return "", fmt.Errorf("update Secret %s/%s: %w", ns, name, err)
	}
	return key.Secret(s), nil
}

// deploymentState is what the restart checks compare: the generation and the reloader's env vars.
type deploymentState struct {
	generation int64
	env        map[string]string
}

// deployments lists every Deployment of the namespace from the API server.
func (e *env) deployments(ctx context.Context) (map[string]deploymentState, error) {
	list, err := e.client.AppsV1().Deployments(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Deployments in %s: %w", e.ns, err)
	}
	out := make(map[string]deploymentState, len(list.Items))
	for i := range list.Items {
		d := &list.Items[i]
		out[d.Name] = deploymentState{generation: d.Generation, env: reloaderEnv(&d.Spec.Template.Spec)}
	}
	return out, nil
}

// reloaderEnv returns the reloader's variables of every container.
func reloaderEnv(spec *corev1.PodSpec) map[string]string {
	out := map[string]string{}
	for _, c := range spec.Containers {
		for _, v := range c.Env {
			if strings.HasPrefix(v.Name, envVarPrefix) {
				out[v.Name] = v.Value
			}
		}
	}
	return out
}

// changedGenerations returns the Deployments whose generation differs between two listings.
func changedGenerations(before, after map[string]deploymentState) map[string]int64 {
	out := map[string]int64{}
	for name, a := range after {
		if d := a.generation - before[name].generation; d != 0 {
			out[name] = d
		}
	}
	return out
}
