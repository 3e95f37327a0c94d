//go:build tools

// Package golangcilint only pins golangci-lint, which `make lint` builds and runs.
package golangcilint

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
