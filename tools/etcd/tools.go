//go:build tools

// Package etcd only pins the etcd server for the local test cluster.
package etcd

import _ "go.etcd.io/etcd/server/v3"
