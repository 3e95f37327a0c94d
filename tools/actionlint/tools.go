//go:build tools

// Package actionlint only pins actionlint, which `make lint` runs on .github/workflows.
package actionlint

import _ "github.com/rhysd/actionlint/cmd/actionlint"
