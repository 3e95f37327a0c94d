// Package integration holds the state store's tests that need an API server: fencing, conflicts
// between writers, permissions, the state deleted or edited under a running store, and the
// object size limit. They share one control plane (TestMain). The store's own logic is tested in
// package state, in process.
package integration
