package policy

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Config kinds, as they appear in state keys, queue keys, markers and Events.
const (
	KindConfigMap = "ConfigMap"
	KindSecret    = "Secret"
)

// UsesOf returns every config the pod spec mounts or reads into its environment, with how.
func UsesOf(spec *corev1.PodSpec) map[ConfigRef]Use {
	uses := map[ConfigRef]Use{}
	add := func(kind, name string, keys ...string) {
		u := uses[ConfigRef{kind, name}]
		if len(keys) == 0 {
			u.Whole = true
		}
		for _, k := range keys {
			if !slices.Contains(u.Keys, k) {
				u.Keys = append(u.Keys, k)
			}
		}
		uses[ConfigRef{kind, name}] = u
	}
	for i := range spec.Volumes {
		volumeUses(&spec.Volumes[i], add)
	}
	for _, c := range AllContainers(spec) {
		envUses(c, add)
	}
	for r, u := range uses {
		slices.Sort(u.Keys)
		uses[r] = u
	}
	return uses
}

func AllContainers(spec *corev1.PodSpec) []*corev1.Container {
	var out []*corev1.Container
	for i := range spec.InitContainers {
		out = append(out, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		out = append(out, &spec.Containers[i])
	}
	return out
}

func itemKeys(items []corev1.KeyToPath) []string {
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = it.Key
	}
	return keys
}

func volumeUses(v *corev1.Volume, add func(kind, name string, keys ...string)) {
	if s := v.ConfigMap; s != nil {
		add(KindConfigMap, s.Name, itemKeys(s.Items)...)
	}
	if s := v.Secret; s != nil {
		add(KindSecret, s.SecretName, itemKeys(s.Items)...)
	}
	if v.Projected == nil {
		return
	}
	for _, s := range v.Projected.Sources {
		if s.ConfigMap != nil {
			add(KindConfigMap, s.ConfigMap.Name, itemKeys(s.ConfigMap.Items)...)
		}
		if s.Secret != nil {
			add(KindSecret, s.Secret.Name, itemKeys(s.Secret.Items)...)
		}
	}
}

func envUses(c *corev1.Container, add func(kind, name string, keys ...string)) {
	for _, e := range c.EnvFrom {
		if e.ConfigMapRef != nil {
			add(KindConfigMap, e.ConfigMapRef.Name)
		}
		if e.SecretRef != nil {
			add(KindSecret, e.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			add(KindConfigMap, r.Name, r.Key)
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			add(KindSecret, r.Name, r.Key)
		}
	}
}

// ContainerUses reports whether container c reads config r, through its environment or a
// mounted volume.
func ContainerUses(spec *corev1.PodSpec, c *corev1.Container, r ConfigRef) bool {
	found := false
	mark := func(kind, name string, _ ...string) {
		if kind == r.Kind && name == r.Name {
			found = true
		}
	}
	envUses(c, mark)
	for _, m := range c.VolumeMounts {
		for i := range spec.Volumes {
			if spec.Volumes[i].Name == m.Name {
				volumeUses(&spec.Volumes[i], mark)
			}
		}
	}
	return found
}

// Waits reports whether pods of spec wait for config r while it does not exist: some reference
// to it (a volume, a projected source, envFrom or a key ref) is not optional. They start on the
// content it has when it reappears.
func Waits(spec *corev1.PodSpec, r ConfigRef) bool {
	required := func(kind, name string, optional *bool) bool {
		return kind == r.Kind && name == r.Name && (optional == nil || !*optional)
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if v.ConfigMap != nil && required(KindConfigMap, v.ConfigMap.Name, v.ConfigMap.Optional) ||
			v.Secret != nil && required(KindSecret, v.Secret.SecretName, v.Secret.Optional) {
			return true
		}
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ConfigMap != nil && required(KindConfigMap, s.ConfigMap.Name, s.ConfigMap.Optional) ||
				s.Secret != nil && required(KindSecret, s.Secret.Name, s.Secret.Optional) {
				return true
			}
		}
	}
	for _, c := range AllContainers(spec) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil && required(KindConfigMap, e.ConfigMapRef.Name, e.ConfigMapRef.Optional) ||
				e.SecretRef != nil && required(KindSecret, e.SecretRef.Name, e.SecretRef.Optional) {
				return true
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			cm, sec := e.ValueFrom.ConfigMapKeyRef, e.ValueFrom.SecretKeyRef
			if cm != nil && required(KindConfigMap, cm.Name, cm.Optional) || sec != nil && required(KindSecret, sec.Name, sec.Optional) {
				return true
			}
		}
	}
	return false
}
