package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/internal/dev/testcluster"
)

const (
	burstNamespace  = "burst"
	burstDeployment = "burst-app"
	burstWindow     = time.Second // all changes land within this
	burstConfigKiB  = 1
)

// burstScenario checks that a burst of changes to one Deployment's configs is coalesced into
// one reload.
type burstScenario struct{ *kit }

func (bs *burstScenario) params() map[string]any {
	return map[string]any{"configmaps": bs.cfg.burstConfigMaps, "secrets": bs.cfg.burstSecrets,
		"window": burstWindow.String(), "coalesce_period": bs.cfg.burstPeriod.String()}
}

// burstConfig is one config the burst Deployment uses.
type burstConfig struct {
	kind string // "configmap" or "secret", as in the env var
	name string
}

// run updates every config of one Deployment within a second; with coalescing, the
// Deployment's pod template must change exactly once.
func (bs *burstScenario) run(ctx context.Context, c *testcluster.Cluster, r *result) error {
	e, configs, err := bs.makeEnv(ctx, c)
	if err != nil {
		return err
	}
	defer e.close()
	p, err := bs.procs.start(e, scBurst, bs.cfg.burstPeriod)
	if err != nil {
		return err
	}
	defer p.stop()
	if _, err := bs.procs.ready(ctx, p); err != nil {
		return err
	}
	if err := sleep(ctx, restartSettle); err != nil {
		return err
	}
	before, err := e.deployments(ctx)
	if err != nil {
		return err
	}
	reloads, err := burstUpdates(ctx, e, configs)
	if err != nil {
		return err
	}
	return bs.outcome(ctx, e, p, r, reloads, before[burstDeployment].generation)
}

// makeEnv creates the burst namespace, its configs and the one Deployment using them all.
func (bs *burstScenario) makeEnv(ctx context.Context, c *testcluster.Cluster) (*env, []burstConfig, error) {
	client, err := bulkClient(c)
	if err != nil {
		return nil, nil, err
	}
	if err := createNamespace(ctx, client, burstNamespace); err != nil {
		return nil, nil, err
	}
	body := filler(burstConfigKiB << 10)
	var configs []burstConfig
	var cmNames, secretNames []string
	for i := range bs.cfg.burstConfigMaps {
		name := fmt.Sprintf("burst-cm-%d", i)
		if _, err := client.CoreV1().ConfigMaps(burstNamespace).Create(ctx, newConfigMap(name, body), metav1.CreateOptions{}); err != nil {
			return nil, nil, fmt.Errorf("create ConfigMap %s: %w", name, err)
		}
		cmNames, configs = append(cmNames, name), append(configs, burstConfig{"configmap", name})
	}
	for i := range bs.cfg.burstSecrets {
		name := fmt.Sprintf("burst-secret-%d", i)
		if _, err := client.CoreV1().Secrets(burstNamespace).Create(ctx, newSecret(name, []byte(body)), metav1.CreateOptions{}); err != nil {
			return nil, nil, fmt.Errorf("create Secret %s: %w", name, err)
		}
		secretNames, configs = append(secretNames, name), append(configs, burstConfig{"secret", name})
	}
	d := newDeployment(burstDeployment, cmNames, secretNames)
	if _, err := client.AppsV1().Deployments(burstNamespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return nil, nil, fmt.Errorf("create Deployment %s: %w", d.Name, err)
	}
	t, err := startTracker(ctx, client, burstNamespace)
	if err != nil {
		return nil, nil, err
	}
	return &env{cluster: c, client: client, ns: burstNamespace, tracker: t}, configs, nil
}

// burstUpdates changes every config, evenly spread over burstWindow.
func burstUpdates(ctx context.Context, e *env, configs []burstConfig) ([]reload, error) {
	begin := time.Now()
	var out []reload
	for i, cfg := range configs {
		if err := sleep(ctx, time.Until(begin.Add(burstWindow*time.Duration(i)/time.Duration(len(configs))))); err != nil {
			return nil, err
		}
		patch := patchConfigMap
		if cfg.kind == "secret" {
			patch = patchSecret
		}
		hash, err := patch(ctx, e.client, e.ns, cfg.name, e.version.Add(1))
		if err != nil {
			return nil, err
		}
		out = append(out, reload{config: cfg.name, deployment: burstDeployment, envVar: envVar(cfg.kind, cfg.name), hash: hash, updated: time.Now()})
	}
	return out, nil
}

// outcome waits for every change to reach the template, then for one more coalescing
// period, and counts the template revisions.
func (bs *burstScenario) outcome(ctx context.Context, e *env, p *reloaderProc, r *result, reloads []reload, genBefore int64) error {
	maxWait := 5 * bs.cfg.burstPeriod // the reloader's default --coalesce-max-wait
	lt := awaitReloads(ctx, e, reloads, maxWait+bs.cfg.timeout)
	if err := sleep(ctx, bs.cfg.burstPeriod+restartSettle); err != nil {
		return err
	}
	after, err := e.deployments(ctx)
	if err != nil {
		return err
	}
	met, err := p.metrics(ctx)
	if err != nil {
		return err
	}
	first, last := reloads[0].updated, reloads[len(reloads)-1].updated
	r.add(exactly(fmt.Sprintf("template revisions for %d changes", len(reloads)), float64(after[burstDeployment].generation-genBefore), 1, unitCount),
		exactly("changes not applied", float64(lt.missed), 0, unitCount),
		info("changes spread over", ms(last.Sub(first)), unitMs),
		info("last change to template change", ms(lt.percentile(0)), unitMs),
		info("reloader_coalesced_total", met.get("reloader_coalesced_total"), unitCount))
	r.detail("watched_revisions", e.tracker.revisionsOf(burstDeployment))
	r.detail("reloads_by_result", met.byLabels("reloader_reloads_total", "result"))
	return stopGracefully(p, r)
}
