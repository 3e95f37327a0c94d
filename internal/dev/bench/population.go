package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Annotation keys the population uses, stakater Reloader's.
const (
	annotationConfigMaps = "configmap.reloader.stakater.com/reload"
	annotationSecrets    = "secret.reloader.stakater.com/reload"
	envVarPrefix         = "_RELOADER_-"
)

// population is the set of objects a scenario's namespace holds. Deployment i uses ConfigMaps
// 2i and 2i+1 and Secret i, through envFrom, a volume and env.valueFrom and through the named
// annotations, so ConfigMap k has exactly one dependent, Deployment k/2, when k < 2*Deployments.
type population struct {
	ConfigMaps   int `json:"configmaps"`
	Secrets      int `json:"secrets"`
	Deployments  int `json:"deployments"`
	ConfigMapKiB int `json:"configmap_kib"`
	SecretKiB    int `json:"secret_kib"`
	// Namespaces spreads the population over this many namespaces, <base>-00 and so on, and the
	// reloader then watches all namespaces; 0 keeps it in the one namespace <base>.
	Namespaces int `json:"namespaces,omitempty"`
	// HelmReleases and Tokens are Secrets that no workload reads (mix.go): helm.sh/release.v1
	// Secrets of helmReleaseSize's sizes and kubernetes.io/service-account-token Secrets.
	HelmReleases int `json:"helm_releases,omitempty"`
	Tokens       int `json:"sa_tokens,omitempty"`
}

func (p population) validate() error {
	switch {
	case p.Deployments < 1:
		return fmt.Errorf("-deployments: need at least 1, got %d", p.Deployments)
	case p.ConfigMaps < 2*p.Deployments:
		return fmt.Errorf("-configmaps: need at least 2 per Deployment (%d), got %d", 2*p.Deployments, p.ConfigMaps)
	case p.Secrets < p.Deployments:
		return fmt.Errorf("-secrets: need at least 1 per Deployment (%d), got %d", p.Deployments, p.Secrets)
	case p.ConfigMapKiB < 1 || p.SecretKiB < 1:
		return fmt.Errorf("-configmap-kib and -secret-kib: must be at least 1")
	}
	return nil
}

// clusterWide returns the population of the growth scenario at n configs over namespaces:
// four fifths ConfigMaps, one fifth Secrets, and one Deployment per five configs (50,000
// configs, 10,000 workloads), each Deployment using two ConfigMaps and one Secret.
func (p population) clusterWide(n, namespaces int) population {
	q := p
	q.Deployments = max(1, n/5)
	q.Secrets = q.Deployments
	q.ConfigMaps = max(2*q.Deployments, n-q.Secrets)
	q.Namespaces = namespaces
	return q
}

func (p population) String() string {
	s := fmt.Sprintf("%d ConfigMaps of %d KiB, %d Secrets of %d KiB, %d Deployments",
		p.ConfigMaps, p.ConfigMapKiB, p.Secrets, p.SecretKiB, p.Deployments)
	if p.HelmReleases+p.Tokens > 0 {
		s += fmt.Sprintf(", %d Helm release Secrets, %d service-account tokens", p.HelmReleases, p.Tokens)
	}
	if p.Namespaces > 0 {
		s += fmt.Sprintf(" over %d namespaces", p.Namespaces)
	}
	return s
}

// namespaces lists the namespaces the population lives in.
func (p population) namespaces(base string) []string {
	if p.Namespaces == 0 {
		return []string{base}
	}
	out := make([]string, p.Namespaces)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", base, i)
	}
	return out
}

// namespaceOf returns the namespace of the object in slot i: a Deployment's index, which its
// ConfigMaps and Secret share, or the index of a config no Deployment uses.
func (p population) namespaceOf(base string, slot int) string {
	if p.Namespaces == 0 {
		return base
	}
	return fmt.Sprintf("%s-%02d", base, slot%p.Namespaces)
}

// configMapSlot is the slot of ConfigMap k: that of its Deployment, if it has one.
func (p population) configMapSlot(k int) int {
	if k < 2*p.Deployments {
		return k / 2
	}
	return k
}

// watched is the namespace a reloader and tracker watch: "" (all) for a spread population.
func (p population) watched(base string) string {
	if p.Namespaces > 0 {
		return ""
	}
	return base
}

func configMapName(k int) string  { return fmt.Sprintf("cm-%05d", k) }
func secretName(k int) string     { return fmt.Sprintf("secret-%05d", k) }
func deploymentName(i int) string { return fmt.Sprintf("app-%05d", i) }

// envVar is the variable the reloader sets for a config of kind "configmap" or "secret".
func envVar(kind, name string) string { return envVarPrefix + kind + "-" + name }

// filler returns n bytes of YAML-like text.
func filler(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "setting-%06d: some configuration value for the application\n", i)
	}
	return b.String()[:n]
}

func newConfigMap(name, body string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string]string{"config.yaml": body, "version": "0"},
	}
}

func newSecret(name string, body []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string][]byte{"password": body, "version": []byte("0")},
	}
}

// newDeployment returns a Deployment with 0 replicas whose one container uses the configs
// through envFrom (first ConfigMap), a volume (the other ConfigMaps) and env.valueFrom (the
// Secrets), and which names them all in the reload annotations.
func newDeployment(name string, configMaps, secrets []string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	c := corev1.Container{Name: "app", Image: "registry.example/app:1"}
	var volumes []corev1.Volume
	for i, cm := range configMaps {
		if i == 0 {
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}})
			continue
		}
		vol := fmt.Sprintf("config-%d", i)
		volumes = append(volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: vol, MountPath: "/etc/" + vol})
	}
	for i, s := range secrets {
		c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("PASSWORD_%d", i), ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: s}, Key: "password"}}})
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			annotationConfigMaps: strings.Join(configMaps, ","),
			annotationSecrets:    strings.Join(secrets, ","),
		}},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{c}, Volumes: volumes},
			},
		},
	}
}

// create makes every object of p in the namespaces named after base, workers requests at a
// time. The namespaces must exist.
func (p population) create(ctx context.Context, client kubernetes.Interface, base string, workers int) error {
	cmBody, secretBody := filler(p.ConfigMapKiB<<10), []byte(filler(p.SecretKiB<<10))
	err := forEach(ctx, p.ConfigMaps, workers, func(ctx context.Context, k int) error {
		cms := client.CoreV1().ConfigMaps(p.namespaceOf(base, p.configMapSlot(k)))
		_, err := cms.Create(ctx, newConfigMap(configMapName(k), cmBody), metav1.CreateOptions{})
		return wrap(err, "create ConfigMap %s", configMapName(k))
	})
	if err != nil {
		return err
	}
	err = forEach(ctx, p.Secrets, workers, func(ctx context.Context, k int) error {
		secrets := client.CoreV1().Secrets(p.namespaceOf(base, k))
		_, err := secrets.Create(ctx, newSecret(secretName(k), secretBody), metav1.CreateOptions{})
		return wrap(err, "create Secret %s", secretName(k))
	})
	if err != nil {
		return err
	}
	if err := p.createUnread(ctx, client, base, workers); err != nil {
		return err
	}
	return forEach(ctx, p.Deployments, workers, func(ctx context.Context, i int) error {
		d := newDeployment(deploymentName(i), []string{configMapName(2 * i), configMapName(2*i + 1)}, []string{secretName(i)})
		_, err := client.AppsV1().Deployments(p.namespaceOf(base, i)).Create(ctx, d, metav1.CreateOptions{})
		return wrap(err, "create Deployment %s", d.Name)
	})
}

// forEach calls fn for 0..n-1 on up to workers goroutines and returns the first error.
func forEach(ctx context.Context, n, workers int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// wrap adds context to a non-nil error.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}
