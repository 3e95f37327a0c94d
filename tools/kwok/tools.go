//go:build tools

// Package kwok only pins kwok for the local test cluster.
package kwok

import _ "sigs.k8s.io/kwok/cmd/kwok"
