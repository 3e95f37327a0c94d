package reloader

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// envVarName is the variable that carries a config's hash in the pod template, in Collaborne's
// form _RELOADER_-<configmap|secret>-<name>. Config names are DNS subdomains ([a-z0-9.-]), all
// valid in an env var name, so the name is used verbatim and distinct configs never share a
// variable: app-config and app.config stay apart.
func envVarName(r configRef) string {
	return "_RELOADER_-" + strings.ToLower(r.Kind) + "-" + r.Name
}

// targetContainers are the containers that read r, or the first container if none does.
func targetContainers(spec *corev1.PodSpec, r configRef) []string {
	var names []string
	for i := range spec.Containers {
		if containerUses(spec, &spec.Containers[i], r) {
			names = append(names, spec.Containers[i].Name)
		}
	}
	if len(names) == 0 && len(spec.Containers) > 0 {
		names = append(names, spec.Containers[0].Name)
	}
	return names
}

// envPatch builds a strategic merge patch that sets, on the target containers of each config,
// the env var to its hash. Containers and variables already current are left out; an empty
// result means the template already holds every hash.
func envPatch(spec *corev1.PodSpec, hashes map[configRef]string) ([]byte, error) {
	type envVar struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	type container struct {
		Name string   `json:"name"`
		Env  []envVar `json:"env"`
	}
	byName := map[string]*container{}
	var order []string
	for r, hash := range hashes {
		for _, cname := range targetContainers(spec, r) {
			if envValue(spec, cname, envVarName(r)) == hash {
				continue
			}
			if byName[cname] == nil {
				byName[cname] = &container{Name: cname}
				order = append(order, cname)
			}
			byName[cname].Env = append(byName[cname].Env, envVar{envVarName(r), hash})
		}
	}
	if len(order) == 0 {
		return nil, nil
	}
	containers := make([]*container, 0, len(order))
	for _, n := range order {
		containers = append(containers, byName[n])
	}
	patch := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": containers}}}}
	b, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("encode env patch: %w", err)
	}
	return b, nil
}

func envValue(spec *corev1.PodSpec, container, name string) string {
	for _, c := range spec.Containers {
		if c.Name != container {
			continue
		}
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value
			}
		}
	}
	return ""
}
