//go:build tools

// Package helm only pins the helm CLI that renders deploy/helm/reloader in the deploy tests.
package helm

import _ "helm.sh/helm/v3/cmd/helm"
