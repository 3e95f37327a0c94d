package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// trackingWindow is how long the tracking scenario watches the reloader while every Deployment's
// rollout is in progress: any request it sent per followed workload would show here.
const trackingWindow = 20 * time.Second

// trackingScenario measures rollout tracking with every Deployment of a population followed.
type trackingScenario struct{ *kit }

// pop is the tracking scenario's population: the configured Deployments, each with its
// two ConfigMaps and one Secret, of 1 KiB, so that creating it takes seconds.
func (ts *trackingScenario) pop() population {
	d := ts.cfg.pop.Deployments
	return population{ConfigMaps: 2 * d, Secrets: d, Deployments: d, ConfigMapKiB: 1, SecretKiB: 1}
}

// run measures rollout tracking (--track-rollouts) with every Deployment followed at once.
// First a reloader without tracking reloads every Deployment once, for the RSS to compare with.
// The bench's control plane runs no controller manager, so no rollout progresses by itself: after
// one more reload each, with tracking, all of them stay in progress for the tracking window, in
// which the reloader must send no request at all. Then the bench writes each Deployment's status
// as the deployment controller would on completion, and counts the requests per finished rollout
// (its outcome).
func (ts *trackingScenario) run(ctx context.Context, e *env, r *result) error {
	if err := ts.untracked(ctx, e, r); err != nil {
		return err
	}
	p, err := ts.procs.startSettled(ctx, e, scTracking, 0, "--track-rollouts")
	if err != nil {
		return err
	}
	defer p.stop()
	start, err := trackingSample(ctx, p, r, "before any reload")
	if err != nil {
		return err
	}
	if err := ts.reloadAll(ctx, e, r); err != nil {
		return err
	}
	if err := quiet(ctx, p); err != nil { // the reloads' Events and state writes drain first
		return err
	}
	tracked, err := trackingSample(ctx, p, r, fmt.Sprintf("%d rollouts followed", e.pop.Deployments))
	if err != nil {
		return err
	}
	if err := sleep(ctx, trackingWindow); err != nil {
		return err
	}
	after, err := trackingSample(ctx, p, r, fmt.Sprintf("%d rollouts followed, %s later", e.pop.Deployments, trackingWindow))
	if err != nil {
		return err
	}
	r.add(exactly(fmt.Sprintf("requests while %d rollouts are followed, %s (excl. watch)", e.pop.Deployments, trackingWindow),
		requests(tracked, after, notWatch), 0, unitCount))
	addRequestsByKind(r, "  ", tracked, after, notWatch)
	if err := completeRollouts(ctx, e); err != nil {
		return err
	}
	done, err := awaitOutcomes(ctx, p, float64(e.pop.Deployments))
	if err != nil {
		return err
	}
	r.add(exactly("LIST requests after start", requests(start, done, isList), 0, unitCount))
	perRollout := delta(after.metrics.byLabels("reloader_api_requests_total", "verb", "resource"), done.metrics.byLabels("reloader_api_requests_total", "verb", "resource"))
	for _, k := range slices.Sorted(maps.Keys(perRollout)) {
		if notWatch(k) {
			r.add(info("requests per finished rollout: "+k, perRollout[k]/float64(e.pop.Deployments), unitCount))
		}
	}
	r.add(info("outcomes succeeded", done.metrics.sum("reloader_rollouts_total", map[string]string{"outcome": "succeeded"}), unitCount))
	if _, err := trackingSample(ctx, p, r, fmt.Sprintf("%d rollouts succeeded", e.pop.Deployments)); err != nil {
		return err
	}
	return stopGracefully(p, r)
}

// untracked reloads every Deployment once with a reloader that does not follow rollouts, and
// records its RSS afterwards.
func (ts *trackingScenario) untracked(ctx context.Context, e *env, r *result) error {
	p, err := ts.procs.startSettled(ctx, e, scTracking+"-off", 0)
	if err != nil {
		return err
	}
	defer p.stop()
	if _, err := trackingSample(ctx, p, r, "tracking off, before any reload"); err != nil {
		return err
	}
	if err := ts.reloadAll(ctx, e, r); err != nil {
		return err
	}
	if err := sleep(ctx, 2*time.Second); err != nil {
		return err
	}
	if _, err := trackingSample(ctx, p, r, fmt.Sprintf("tracking off, %d reloads done", e.pop.Deployments)); err != nil {
		return err
	}
	return stopGracefully(p, r)
}

// quiet waits until the reloader has sent no request but watches for 3 s in a row: the Events of
// a thousand reloads leave at the client's rate limit, seconds after the reloads.
func quiet(ctx context.Context, p *reloaderProc) error {
	prev, err := takeSnapshot(ctx, p)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		if err := sleep(ctx, 3*time.Second); err != nil {
			return err
		}
		cur, err := takeSnapshot(ctx, p)
		if err != nil {
			return err
		}
		if requests(prev, cur, notWatch) == 0 {
			return nil
		}
		prev = cur
	}
	return fmt.Errorf("the reloader kept sending requests for 2 minutes after the reloads")
}

// trackingSample is a snapshot with its RSS recorded under label.
func trackingSample(ctx context.Context, p *reloaderProc, r *result, label string) (snapshot, error) {
	s, err := takeSnapshot(ctx, p)
	if err != nil {
		return s, err
	}
	m, err := p.memory()
	if err != nil {
		return s, err
	}
	r.add(info("RSS, "+label, mib(m.RSS), unitMiB), info("heap in use, "+label, mib(int64(s.metrics.get("go_memstats_heap_inuse_bytes"))), unitMiB))
	return s, nil
}

// reloadAll changes the first ConfigMap of every Deployment and waits for every reload.
func (ts *trackingScenario) reloadAll(ctx context.Context, e *env, r *result) error {
	reloads := make([]reload, e.pop.Deployments)
	err := forEach(ctx, e.pop.Deployments, ts.cfg.workers, func(ctx context.Context, i int) error {
		rl, err := e.updateConfigMap(ctx, 2*i)
		reloads[i] = rl
		return err
	})
	if err != nil {
		return err
	}
	lt := awaitReloads(ctx, e, reloads, time.Minute)
	r.add(exactly("reloads not seen within a minute", float64(lt.missed), 0, unitCount))
	return ctx.Err()
}

// completeRollouts writes each Deployment's status as the deployment controller does when a
// rollout of zero replicas completes.
func completeRollouts(ctx context.Context, e *env) error {
	deps := e.client.AppsV1().Deployments(e.ns)
	return forEach(ctx, e.pop.Deployments, 8, func(ctx context.Context, i int) error {
		d, err := deps.Get(ctx, deploymentName(i), metav1.GetOptions{})
		if err != nil {
			return wrap(err, "get Deployment %s", deploymentName(i))
		}
		d.Status.ObservedGeneration = d.Generation
		d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue,
			Reason: "NewReplicaSetAvailable", LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		_, err = deps.UpdateStatus(ctx, d, metav1.UpdateOptions{})
		return wrap(err, "complete the rollout of %s", d.Name)
	})
}

// awaitOutcomes waits until the reloader has reported n succeeded rollouts.
func awaitOutcomes(ctx context.Context, p *reloaderProc, n float64) (snapshot, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		s, err := takeSnapshot(ctx, p)
		if err != nil {
			return s, err
		}
		got := s.metrics.sum("reloader_rollouts_total", map[string]string{"outcome": "succeeded"})
		if got >= n {
			return s, sleep(ctx, time.Second)
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("%v of %v rollouts reported succeeded after 2 minutes", got, n)
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return s, err
		}
	}
}

// requests sums the reloader's requests between two snapshots whose "<verb> <resource>" key
// keep accepts.
func requests(a, b snapshot, keep func(key string) bool) float64 {
	const name = "reloader_api_requests_total"
	var n float64
	for k, v := range delta(a.metrics.byLabels(name, "verb", "resource"), b.metrics.byLabels(name, "verb", "resource")) {
		if keep(k) {
			n += v
		}
	}
	return n
}

// addRequestsByKind adds an info row per verb and resource that keep counts between a and b, so
// that a count above its target names its requests (the state's check is a "get configmaps").
func addRequestsByKind(r *result, indent string, a, b snapshot, keep func(key string) bool) {
	const name = "reloader_api_requests_total"
	d := delta(a.metrics.byLabels(name, "verb", "resource"), b.metrics.byLabels(name, "verb", "resource"))
	for _, k := range slices.Sorted(maps.Keys(d)) {
		if keep(k) {
			r.add(info(indent+k, d[k], unitCount))
		}
	}
}

func notWatch(k string) bool { return !strings.HasPrefix(k, "watch ") }
func isList(k string) bool   { return strings.HasPrefix(k, "list ") }
