//go:build tools

// Package govulncheck only pins govulncheck, which the GitHub CI workflow runs (it needs the
// vulnerability database online, which this repository's own CI cannot reach).
package govulncheck

import _ "golang.org/x/vuln/cmd/govulncheck"
