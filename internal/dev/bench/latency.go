package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// drainWait lets the reloader finish the state write and Event of the last change before the
// final scrape; the state store lingers 50 ms before writing.
const drainWait = 2 * time.Second

// latencyScenario measures reload latency and the API requests per change on a population.
type latencyScenario struct{ *kit }

// latencies are reload latencies: from an update call returning to the watch showing the new
// hash in the dependent's pod template.
type latencies struct {
	samples []time.Duration
	missed  int
	seen    []seenReload // each sample's reload, in the order taken
}

// seenReload is a sample's reload and when the watch showed it.
type seenReload struct {
	reload
	at time.Time
}

func (lt *latencies) observe(rl reload, at time.Time, ok bool) {
	if !ok {
		lt.missed++
		return
	}
	// The watch event may beat the update's own response; that reload took no measurable time.
	lt.samples = append(lt.samples, max(0, at.Sub(rl.updated)))
	lt.seen = append(lt.seen, seenReload{rl, at})
}

func (lt latencies) percentile(p float64) time.Duration {
	sorted := slices.Clone(lt.samples)
	slices.Sort(sorted)
	return percentile(sorted, p)
}

// millis returns the samples in milliseconds, in the order taken.
func (lt latencies) millis() []float64 {
	out := make([]float64, len(lt.samples))
	for i, d := range lt.samples {
		out[i] = round2ms(d)
	}
	return out
}

// checks reports p50, p90, p99, max and missed reloads; p99 gets the target.
func (lt latencies) checks() []check {
	return []check{
		info("latency p50", ms(lt.percentile(50)), unitMs),
		info("latency p90", ms(lt.percentile(90)), unitMs),
		atMost("latency p99", ms(lt.percentile(99)), targetP99Ms, unitMs),
		info("latency max", ms(lt.percentile(100)), unitMs),
		exactly("reloads missed", float64(lt.missed), 0, unitCount),
	}
}

// awaitReloads waits for each reload until timeout after its update.
func awaitReloads(ctx context.Context, e *env, reloads []reload, timeout time.Duration) latencies {
	var lt latencies
	for _, rl := range reloads {
		at, ok := e.tracker.wait(ctx, rl.key(), rl.updated.Add(timeout))
		lt.observe(rl, at, ok)
	}
	return lt
}

// measureLatency updates n ConfigMaps one at a time, interval apart, each after the previous
// reload was seen or timed out.
func measureLatency(ctx context.Context, e *env, n int, interval, timeout time.Duration) (latencies, error) {
	var lt latencies
	next := time.Now()
	for range n {
		if err := sleep(ctx, time.Until(next)); err != nil {
			return lt, err
		}
		next = next.Add(interval)
		rl, err := e.updateConfigMap(ctx, e.pickConfigMap())
		if err != nil {
			return lt, err
		}
		at, ok := e.tracker.wait(ctx, rl.key(), rl.updated.Add(timeout))
		lt.observe(rl, at, ok)
	}
	return lt, ctx.Err()
}

// firstReload makes the first reload after the start, apart from the samples, and reports its
// latency; the samples begin interval later. The start-up hands the executable's pages back to
// the kernel (main.go), so this reload reads the code of the reload path from disk again, which
// no later one does. The caller counts a miss with the samples' misses.
func (k *kit) firstReload(ctx context.Context, e *env, r *result, interval time.Duration) (latencies, error) {
	first, err := measureLatency(ctx, e, 1, 0, k.cfg.timeout)
	if err != nil {
		return first, err
	}
	if len(first.samples) == 1 {
		r.add(info("first reload after start", ms(first.samples[0]), unitMs))
	}
	return first, sleep(ctx, interval)
}

func (ls *latencyScenario) params(e *env) map[string]any {
	return map[string]any{"population": e.pop, "samples": ls.cfg.samples, "interval": ls.cfg.interval.String(),
		"timeout": ls.cfg.timeout.String(), "coalesce_period": "0s"}
}

// run measures reload latency with --coalesce-period=0 and, from the reloader's request
// counter, the API requests it sends per config change.
func (ls *latencyScenario) run(ctx context.Context, e *env, r *result) error {
	p, err := ls.procs.startSettled(ctx, e, scLatency, 0)
	if err != nil {
		return err
	}
	defer p.stop()
	first, err := ls.firstReload(ctx, e, r, ls.cfg.interval)
	if err != nil {
		return err
	}
	before, err := apiSnapshot(ctx, e, p)
	if err != nil {
		return err
	}
	cpuDone := ls.prof.profileCPU(ctx, p, r)
	ls.logf("latency: %d updates, %s apart", ls.cfg.samples, ls.cfg.interval)
	lt, err := measureLatency(ctx, e, ls.cfg.samples, ls.cfg.interval, ls.cfg.timeout)
	if err != nil {
		return err
	}
	lt.missed += first.missed
	if err := sleep(ctx, drainWait); err != nil {
		return err
	}
	after, err := apiSnapshot(ctx, e, p)
	if err != nil {
		return err
	}
	<-cpuDone
	r.add(lt.checks()...)
	r.detail("latency_ms", lt.millis())
	ls.addPaths(r, p, lt)
	apiCost(r, before, after, ls.cfg.samples)
	return stopGracefully(p, r)
}

// snapshot is a scrape and the CPU time at one moment; api is the API server's scrape, when
// taken (apiSnapshot).
type snapshot struct {
	metrics metricSet
	cpu     float64
	api     metricSet
}

// apiSnapshot is takeSnapshot with the API server's metrics: whether a slow reload was the
// reloader's or the API server's.
func apiSnapshot(ctx context.Context, e *env, p *reloaderProc) (snapshot, error) {
	s, err := takeSnapshot(ctx, p)
	if err != nil {
		return s, err
	}
	raw, err := e.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return s, fmt.Errorf("scrape the API server: %w", err)
	}
	s.api, err = parseMetrics(bytes.NewReader(raw))
	return s, wrap(err, "parse the API server's metrics")
}

// takeSnapshot scrapes the reloader and reads its CPU time.
func takeSnapshot(ctx context.Context, p *reloaderProc) (snapshot, error) {
	m, err := p.metrics(ctx)
	if err != nil {
		return snapshot{}, err
	}
	cpu, err := p.cpu()
	return snapshot{metrics: m, cpu: cpu}, err
}

// latencyBucket is the reloader's reload latency histogram's buckets (metrics/metrics.go).
const latencyBucket = "reloader_reload_latency_seconds_bucket"

// requestCount and requestBucket are client-go's request latency histogram (metrics/clientgo.go).
const (
	requestCount  = "rest_client_request_duration_seconds_count"
	requestSum    = "rest_client_request_duration_seconds_sum"
	requestBucket = "rest_client_request_duration_seconds_bucket"
)

// apiCost adds the requests per change, by verb and resource, and the reloader's own view of
// the changes.
func apiCost(r *result, before, after snapshot, changes int) {
	const requests = "reloader_api_requests_total"
	d := delta(before.metrics.byLabels(requests, "verb", "resource"), after.metrics.byLabels(requests, "verb", "resource"))
	perChange := map[string]float64{}
	var total float64
	for key, v := range d {
		perChange[key] = v / float64(changes)
		if !strings.HasPrefix(key, "watch ") && !strings.HasPrefix(key, "list ") {
			total += v
		}
	}
	r.detail("api_requests_per_change", perChange)
	r.add(atMost("API requests per change (excl. list/watch)", total/float64(changes), targetPerChange, unitPerChg))
	for _, key := range slices.Sorted(maps.Keys(perChange)) {
		r.add(info("  "+key, perChange[key], unitPerChg))
	}
	reloads := after.metrics.byLabels("reloader_reloads_total", "result")
	prev := before.metrics.byLabels("reloader_reloads_total", "result")
	r.detail("reloads_by_result", delta(prev, reloads))
	grown := func(name string, match map[string]string) float64 {
		return grewBy(before.metrics, after.metrics, name, match)
	}
	count := grown("reloader_reload_latency_seconds_count", nil)
	sum := grown("reloader_reload_latency_seconds_sum", nil)
	if count > 0 {
		r.add(info("reloader's own latency mean (observed → patched)", 1000*sum/count, unitMs))
		// Whether a slow sample is the reloader's or the cluster's: its own reloads slower than
		// 20 ms (a bucket bound of the histogram).
		within := grown(latencyBucket, map[string]string{"le": "0.02"})
		r.add(info("reloader's own reloads slower than 20 ms", count-within, unitCount))
		// Its span includes the patch's round trip: the API server's and etcd's share of it.
		patch := map[string]string{"verb": "PATCH"}
		patches := grown(requestCount, patch)
		if patches > 0 {
			r.add(info("its PATCH requests' mean", 1000*grown(requestSum, patch)/patches, unitMs))
		}
		patch["le"] = "0.016"
		fast := grown(requestBucket, patch)
		r.add(info("its PATCH requests slower than 16 ms", patches-fast, unitCount))
	}
	r.add(info("reloader CPU time / changes", 1000*(after.cpu-before.cpu)/float64(changes), unitMs))
	apiServerCost(r, before.api, after.api, changes)
}

// grewBy is how much the samples named name with the labels match grew from before to after.
func grewBy(before, after metricSet, name string, match map[string]string) float64 {
	return after.sum(name, match) - before.sum(name, match)
}

// apiServerCost adds, from the API server's own metrics, the mean of the PATCH requests on
// Deployments it served (the reloader's, mostly), its CPU time per change and how many times it
// collected garbage between the scrapes.
func apiServerCost(r *result, before, after metricSet, changes int) {
	if before == nil || after == nil {
		return
	}
	grown := func(name string, match map[string]string) float64 { return grewBy(before, after, name, match) }
	patch := map[string]string{"verb": "PATCH", "resource": "deployments"}
	if n := grown("apiserver_request_duration_seconds_count", patch); n > 0 {
		r.add(info("API server's PATCH of Deployments, mean", 1000*grown("apiserver_request_duration_seconds_sum", patch)/n, unitMs))
	}
	r.add(info("API server CPU time / changes", 1000*grown("process_cpu_seconds_total", nil)/float64(changes), unitMs),
		info("API server collections", grown("go_gc_duration_seconds_count", nil), unitCount))
}

// logIssues adds the warnings and errors the reloader processes logged, keeping the first few
// of each process in the details.
func logIssues(r *result, procs ...*reloaderProc) error {
	var warnings, errs int
	for _, p := range procs {
		w, e, first, err := scanLog(p.logPath)
		if err != nil {
			return err
		}
		warnings, errs = warnings+w, errs+e
		if len(first) > 0 {
			r.detail("log_issues_"+p.name, first)
		}
	}
	r.add(info("reloader log warnings", float64(warnings), unitCount), info("reloader log errors", float64(errs), unitCount))
	return nil
}

// scanLog counts the warnings and errors of one reloader log and returns the first few.
func scanLog(path string) (warnings, errs int, first []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("read reloader log: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		switch logLevel(sc.Bytes()) {
		case "WARN":
			warnings++
		case "ERROR":
			errs++
		default:
			continue
		}
		if len(first) < 5 {
			first = append(first, sc.Text())
		}
	}
	return warnings, errs, first, wrap(sc.Err(), "read reloader log %s", path)
}

// logLevel returns the level of a slog JSON line; klog lines (client-go) start with their
// level letter; anything else, such as a panic, counts as an error.
func logLevel(line []byte) string {
	var rec struct{ Level string }
	if json.Unmarshal(line, &rec) == nil {
		return rec.Level
	}
	if len(line) > 1 && line[1] >= '0' && line[1] <= '9' {
		switch line[0] {
		case 'I':
			return "INFO"
		case 'W':
			return "WARN"
		}
	}
	if len(strings.TrimSpace(string(line))) == 0 || gcLine.Match(line) { // -startup-profile's GC trace
		return ""
	}
	return "ERROR"
}
