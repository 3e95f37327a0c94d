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
	if len(items) == 0 {
		return nil
	}
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

// How a pod spec reads a config (Reference.How).
const (
	ReadEnvFrom   = "envFrom"
	ReadEnvKey    = "env key ref"
	ReadVolume    = "volume"
	ReadProjected = "projected volume"
)

// Reference is one place where a pod spec reads a config: how, in which container or volume,
// whether it is optional, and which keys (none: all of them).
type Reference struct {
	How       string   `json:"how"`
	Container string   `json:"container,omitempty"` // envFrom and env key refs
	Init      bool     `json:"init,omitempty"`      // the container is an init container
	Env       string   `json:"env,omitempty"`       // an env key ref's variable
	Volume    string   `json:"volume,omitempty"`    // volumes and projected volumes
	Optional  bool     `json:"optional"`
	Keys      []string `json:"keys,omitempty"`
}

// ReferencesTo lists every place where spec reads config r, volumes first, then containers
// (init containers first) in order; what UsesOf sums up per config.
func ReferencesTo(spec *corev1.PodSpec, r ConfigRef) []Reference {
	var out []Reference
	is := func(kind, name string) bool { return kind == r.Kind && name == r.Name }
	opt := func(o *bool) bool { return o != nil && *o }
	for _, v := range spec.Volumes {
		switch {
		case v.ConfigMap != nil && is(KindConfigMap, v.ConfigMap.Name):
			out = append(out, Reference{How: ReadVolume, Volume: v.Name, Optional: opt(v.ConfigMap.Optional), Keys: itemKeys(v.ConfigMap.Items)})
		case v.Secret != nil && is(KindSecret, v.Secret.SecretName):
			out = append(out, Reference{How: ReadVolume, Volume: v.Name, Optional: opt(v.Secret.Optional), Keys: itemKeys(v.Secret.Items)})
		}
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			switch {
			case s.ConfigMap != nil && is(KindConfigMap, s.ConfigMap.Name):
				out = append(out, Reference{How: ReadProjected, Volume: v.Name, Optional: opt(s.ConfigMap.Optional), Keys: itemKeys(s.ConfigMap.Items)})
			case s.Secret != nil && is(KindSecret, s.Secret.Name):
				out = append(out, Reference{How: ReadProjected, Volume: v.Name, Optional: opt(s.Secret.Optional), Keys: itemKeys(s.Secret.Items)})
			}
		}
	}
	for i, c := range AllContainers(spec) {
		init := i < len(spec.InitContainers)
		for _, e := range c.EnvFrom {
			switch {
			case e.ConfigMapRef != nil && is(KindConfigMap, e.ConfigMapRef.Name):
				out = append(out, Reference{How: ReadEnvFrom, Container: c.Name, Init: init, Optional: opt(e.ConfigMapRef.Optional)})
			case e.SecretRef != nil && is(KindSecret, e.SecretRef.Name):
				out = append(out, Reference{How: ReadEnvFrom, Container: c.Name, Init: init, Optional: opt(e.SecretRef.Optional)})
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			switch cm, sec := e.ValueFrom.ConfigMapKeyRef, e.ValueFrom.SecretKeyRef; {
			case cm != nil && is(KindConfigMap, cm.Name):
				out = append(out, Reference{How: ReadEnvKey, Container: c.Name, Init: init, Env: e.Name, Optional: opt(cm.Optional), Keys: []string{cm.Key}})
			case sec != nil && is(KindSecret, sec.Name):
				out = append(out, Reference{How: ReadEnvKey, Container: c.Name, Init: init, Env: e.Name, Optional: opt(sec.Optional), Keys: []string{sec.Key}})
			}
		}
	}
	return out
}
