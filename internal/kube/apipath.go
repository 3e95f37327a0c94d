package kube

import "strings"

// APIPath is a request path of the Kubernetes API, /api/v1/... or /apis/GROUP/VERSION/...,
// parsed into what it names: [namespaces/NAMESPACE/]RESOURCE[/NAME[/SUBRESOURCE]].
type APIPath struct {
	Namespace string // "" for a cluster-scoped resource
	Resource  string // "" when the path names no resource (discovery)
	Name      string // "" for a collection
}

// ParseAPIPath parses p; ok is false for a path outside /api and /apis.
func ParseAPIPath(p string) (path APIPath, ok bool) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return APIPath{}, false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		path.Namespace, parts = parts[1], parts[2:]
	}
	if len(parts) > 0 {
		path.Resource = parts[0]
	}
	if len(parts) > 1 {
		path.Name = parts[1]
	}
	return path, true
}
