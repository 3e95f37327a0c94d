//go:build tools

// The crane CLI, pinned with the library that writes the images: internal/dev/release's test pushes
// the OCI layout with it into crane's own in-memory registry and validates the tarballs.
package main

import _ "github.com/google/go-containerregistry/cmd/crane"
