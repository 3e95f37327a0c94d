package reloader

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Annotations names the annotation keys the reloader reads. The defaults are stakater Reloader's.
type Annotations struct {
	Auto          string // reload on any referenced config
	ConfigMapAuto string // reload on any referenced ConfigMap
	SecretAuto    string // reload on any referenced Secret
	ConfigMap     string // comma-separated ConfigMap names
	Secret        string // comma-separated Secret names
	Ignore        string // on a config: never trigger
	// Extra keys with the ConfigMap / Secret semantics (Collaborne's --alternative-*-annotation).
	AlternativeConfigMap []string
	AlternativeSecret    []string
}

// DefaultAnnotations returns stakater Reloader's annotation keys.
func DefaultAnnotations() Annotations {
	return Annotations{
		Auto:          "reloader.stakater.com/auto",
		ConfigMapAuto: "configmap.reloader.stakater.com/auto",
		SecretAuto:    "secret.reloader.stakater.com/auto",
		ConfigMap:     "configmap.reloader.stakater.com/reload",
		Secret:        "secret.reloader.stakater.com/reload",
		Ignore:        "reloader.stakater.com/ignore",
	}
}

// onConfig lists the annotations read from ConfigMaps and Secrets, which the cache keeps.
func (a Annotations) onConfig() []string {
	return []string{a.Ignore}
}

// configRef names a config in the workload's namespace.
type configRef struct {
	Kind string
	Name string
}

// dependencies returns the configs whose change restarts a workload with these annotations and
// pod template, sorted and without duplicates.
func (a Annotations) dependencies(annotations map[string]string, tmpl *corev1.PodTemplateSpec) []configRef {
	get := func(key string) string {
		if v, ok := annotations[key]; ok {
			return v
		}
		return tmpl.Annotations[key]
	}
	var refs []configRef
	for _, key := range append([]string{a.ConfigMap}, a.AlternativeConfigMap...) {
		refs = appendNames(refs, kindConfigMap, get(key))
	}
	for _, key := range append([]string{a.Secret}, a.AlternativeSecret...) {
		refs = appendNames(refs, kindSecret, get(key))
	}
	auto := get(a.Auto) == "true"
	for _, r := range referencedConfigs(&tmpl.Spec) {
		if auto || r.Kind == kindConfigMap && get(a.ConfigMapAuto) == "true" || r.Kind == kindSecret && get(a.SecretAuto) == "true" {
			refs = append(refs, r)
		}
	}
	slices.SortFunc(refs, func(x, y configRef) int { return strings.Compare(x.Kind+"/"+x.Name, y.Kind+"/"+y.Name) })
	return slices.Compact(refs)
}

func appendNames(refs []configRef, kind, list string) []configRef {
	for n := range strings.SplitSeq(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			refs = append(refs, configRef{Kind: kind, Name: n})
		}
	}
	return refs
}

// referencedConfigs returns every config the pod spec mounts or reads into its environment.
func referencedConfigs(spec *corev1.PodSpec) []configRef {
	var refs []configRef
	for _, v := range spec.Volumes {
		refs = append(refs, volumeRefs(&v)...)
	}
	for _, c := range allContainers(spec) {
		refs = append(refs, containerEnvRefs(c)...)
	}
	return refs
}

func allContainers(spec *corev1.PodSpec) []*corev1.Container {
	var out []*corev1.Container
	for i := range spec.InitContainers {
		out = append(out, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		out = append(out, &spec.Containers[i])
	}
	return out
}

func volumeRefs(v *corev1.Volume) []configRef {
	var refs []configRef
	if v.ConfigMap != nil {
		refs = append(refs, configRef{kindConfigMap, v.ConfigMap.Name})
	}
	if v.Secret != nil {
		refs = append(refs, configRef{kindSecret, v.Secret.SecretName})
	}
	if v.Projected != nil {
		for _, s := range v.Projected.Sources {
			if s.ConfigMap != nil {
				refs = append(refs, configRef{kindConfigMap, s.ConfigMap.Name})
			}
			if s.Secret != nil {
				refs = append(refs, configRef{kindSecret, s.Secret.Name})
			}
		}
	}
	return refs
}

func containerEnvRefs(c *corev1.Container) []configRef {
	var refs []configRef
	for _, e := range c.EnvFrom {
		if e.ConfigMapRef != nil {
			refs = append(refs, configRef{kindConfigMap, e.ConfigMapRef.Name})
		}
		if e.SecretRef != nil {
			refs = append(refs, configRef{kindSecret, e.SecretRef.Name})
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			refs = append(refs, configRef{kindConfigMap, r.Name})
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			refs = append(refs, configRef{kindSecret, r.Name})
		}
	}
	return refs
}

// containerUses reports whether container c reads config r, through its environment or a
// mounted volume.
func containerUses(spec *corev1.PodSpec, c *corev1.Container, r configRef) bool {
	if slices.Contains(containerEnvRefs(c), r) {
		return true
	}
	for _, m := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name == m.Name && slices.Contains(volumeRefs(&v), r) {
				return true
			}
		}
	}
	return false
}
