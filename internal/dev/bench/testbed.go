package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/reloader/reloader/internal/dev/testcluster"
)

// testbed starts control planes and fills them with populations. What it cannot set up is
// recorded, through fail, as the failure of the results named.
type testbed struct {
	workers int // concurrent requests while creating a population
	// mixQuota is etcd's backend quota for a population with Secrets no workload reads (mix);
	// 0 keeps etcd's default.
	mixQuota int64
	logf     func(format string, args ...any)
	fail     func(err error, names ...string)
}

// withPopulation runs fn on a fresh control plane holding pop; names are the results to mark
// failed if that cannot be set up.
func (b *testbed) withPopulation(ctx context.Context, pop population, names []string, fn func(*env)) {
	var quota int64
	if pop.HelmReleases+pop.Tokens > 0 {
		quota = b.mixQuota
	}
	c, err := b.startCluster(ctx, quota)
	if err != nil {
		b.fail(err, names...)
		return
	}
	defer b.stopCluster(c)
	b.inNamespace(ctx, c, pop, names, fn)
}

// inNamespace creates pop in the population namespace of c and runs fn on it.
func (b *testbed) inNamespace(ctx context.Context, c *testcluster.Cluster, pop population, names []string, fn func(*env)) {
	b.logf("creating %s", pop)
	e, err := newEnv(ctx, c, populationNamespace, pop, b.workers)
	if err != nil {
		b.fail(err, names...)
		return
	}
	defer e.close()
	objects := pop.objects()
	b.logf("created %d objects in %s (%.0f/s)", objects, e.setup.Round(100*time.Millisecond), float64(objects)/e.setup.Seconds())
	fn(e)
}

// startCluster starts a control plane; etcdQuota, if positive, is etcd's backend quota.
func (b *testbed) startCluster(ctx context.Context, etcdQuota int64) (*testcluster.Cluster, error) {
	c, err := testcluster.Start(ctx, testcluster.Options{Log: os.Stderr, EtcdQuotaBytes: etcdQuota})
	if err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	return c, nil
}

func (b *testbed) stopCluster(c *testcluster.Cluster) {
	if err := c.Stop(); err != nil {
		b.logf("stop control plane: %v", err)
	}
}
