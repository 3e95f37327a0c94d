package main

import (
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseMetrics(t *testing.T) {
	text := `# HELP reloader_api_requests_total Requests.
# TYPE reloader_api_requests_total counter
reloader_api_requests_total{resource="configmaps",verb="patch"} 3
reloader_api_requests_total{resource="deployments",verb="patch"} 2
reloader_build_info{version="v1 \"x\""} 1
go_goroutines 70
process_resident_memory_bytes 7.3e+07
`
	m, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.sum("reloader_api_requests_total", map[string]string{"verb": "patch"}); got != 5 {
		t.Errorf("patch requests = %v, want 5", got)
	}
	if got := m.get("process_resident_memory_bytes"); got != 7.3e7 {
		t.Errorf("RSS = %v, want 7.3e7", got)
	}
	by := m.byLabels("reloader_api_requests_total", "verb", "resource")
	if by["patch deployments"] != 2 {
		t.Errorf("byLabels = %v", by)
	}
	if v := m[2].labels["version"]; v != `v1 "x"` {
		t.Errorf("escaped label = %q", v)
	}
}

func TestDelta(t *testing.T) {
	got := delta(map[string]float64{"a": 1, "b": 2}, map[string]float64{"a": 1, "b": 5, "c": 1})
	if len(got) != 2 || got["b"] != 3 || got["c"] != 1 {
		t.Errorf("delta = %v", got)
	}
}

func TestPercentile(t *testing.T) {
	var sorted []time.Duration
	for i := 1; i <= 100; i++ {
		sorted = append(sorted, time.Duration(i)*time.Millisecond)
	}
	for p, want := range map[float64]time.Duration{50: 50 * time.Millisecond, 99: 99 * time.Millisecond, 100: 100 * time.Millisecond, 0: time.Millisecond} {
		if got := percentile(sorted, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if got := percentile(nil, 99); got != 0 {
		t.Errorf("p99 of nothing = %v", got)
	}
}

func TestClusterWideHasTenThousandWorkloadsAtFiftyThousandConfigs(t *testing.T) {
	p := population{ConfigMapKiB: 10, SecretKiB: 2}.clusterWide(50000, 50)
	if p.ConfigMaps != 40000 || p.Secrets != 10000 || p.Deployments != 10000 || p.validate() != nil {
		t.Errorf("clusterWide = %+v", p)
	}
	// A Deployment's ConfigMaps and Secret live in its namespace; unused ConfigMaps spread too.
	for _, i := range []int{0, 49, 50, 9999} {
		ns := p.namespaceOf("bench", i)
		for _, k := range []int{2 * i, 2*i + 1} {
			if got := p.namespaceOf("bench", p.configMapSlot(k)); got != ns {
				t.Errorf("ConfigMap %d in %s, its Deployment %d in %s", k, got, i, ns)
			}
		}
	}
	if got := p.namespaceOf("bench", p.configMapSlot(39999)); got != "bench-49" {
		t.Errorf("unused ConfigMap 39999 in %s", got)
	}
	if len(p.namespaces("bench")) != 50 || p.watched("bench") != "" {
		t.Errorf("namespaces %v, watched %q", p.namespaces("bench"), p.watched("bench"))
	}
}

func TestGrowthPlotReadsBackResultsAndWritesAPNG(t *testing.T) {
	dir := t.TempDir()
	var lines []byte
	for _, n := range []int{20000, 5000} {
		r := &result{Scenario: fmt.Sprintf("%s-%d", scGrowth, n), Params: population{}.clusterWide(n, 50),
			Checks: []check{info("RSS settled", float64(n)/1000, unitMiB), info("latency p99", 5, unitMs)}}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(append(lines, b...), '\n')
	}
	in, out := filepath.Join(dir, "r.jsonl"), filepath.Join(dir, "growth.png")
	if err := os.WriteFile(in, lines, 0o644); err != nil {
		t.Fatal(err)
	}
	results, err := readResults([]string{in})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := growthRows(results)
	if err != nil || len(rows) != 2 || rows[0].configs != 5000 || rows[1].values["RSS settled"] != 20 {
		t.Fatalf("rows = %+v, %v", rows, err)
	}
	if err := plotFrom([]string{in}, out); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("growth.png: %v", err)
	}
}

func TestGCTraceKeepsTheLargestHeapBetweenCollectionsAndIgnoresOtherLines(t *testing.T) {
	log := `{"level":"WARN","msg":"x"}
gc 1 @0.012s 1%: 0.010+0.5+0.003 ms clock, 0.02+0.1/0.4/0.1+0.007 ms cpu, 3->4->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 2 @1.500s 3%: 0.010+2.1+0.003 ms clock, 0.02+0.1/0.4/0.1+0.007 ms cpu, 41->43->22 MB, 42 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 3 @4.250s 2%: 0.010+1.0+0.003 ms clock, 0.02+0.1/0.4/0.1+0.007 ms cpu, 30->30->25 MB, 44 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)
`
	path := filepath.Join(t.TempDir(), "reloader.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readGCTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	want := gcTrace{GCs: 3, MaxHeapMB: 41, MaxLiveMB: 25, MaxGoalMB: 44, MaxHeapAtSec: 1.5}
	if got != want {
		t.Errorf("readGCTrace = %+v, want %+v", got, want)
	}
}

func TestStartupProfileAddsGctraceToAGivenGODEBUGWithoutDroppingIt(t *testing.T) {
	got := withGODEBUG([]string{"A=1", "GODEBUG=memprofilerate=1"}, "gctrace=1")
	if want := []string{"A=1", "GODEBUG=memprofilerate=1,gctrace=1"}; !slices.Equal(got, want) {
		t.Errorf("with a GODEBUG: %q, want %q", got, want)
	}
	if got := withGODEBUG([]string{"A=1"}, "gctrace=1"); !slices.Equal(got, []string{"A=1", "GODEBUG=gctrace=1"}) {
		t.Errorf("without one: %q", got)
	}
}

// A slow sample is the reloader's or the cluster's: the reloader's own reloads above 20 ms are
// counted from its latency histogram, and its slow PATCH requests from client-go's, between the
// two scrapes only.
func TestAPICostCountsTheReloadersSlowReloadsAndItsSlowPatches(t *testing.T) {
	scrape := func(text string) snapshot {
		m, err := parseMetrics(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return snapshot{metrics: m}
	}
	before := scrape(`reloader_reload_latency_seconds_bucket{le="0.02"} 5
reloader_reload_latency_seconds_bucket{le="+Inf"} 6
reloader_reload_latency_seconds_count 6
reloader_reload_latency_seconds_sum 0.2
rest_client_request_duration_seconds_bucket{verb="PATCH",host="h",le="0.016"} 4
rest_client_request_duration_seconds_count{verb="PATCH",host="h"} 4
rest_client_request_duration_seconds_sum{verb="PATCH",host="h"} 0.01
rest_client_request_duration_seconds_bucket{verb="POST",host="h",le="0.016"} 1
rest_client_request_duration_seconds_count{verb="POST",host="h"} 9
`)
	after := scrape(`reloader_reload_latency_seconds_bucket{le="0.02"} 12
reloader_reload_latency_seconds_bucket{le="+Inf"} 16
reloader_reload_latency_seconds_count 16
reloader_reload_latency_seconds_sum 0.5
rest_client_request_duration_seconds_bucket{verb="PATCH",host="h",le="0.016"} 12
rest_client_request_duration_seconds_count{verb="PATCH",host="h"} 14
rest_client_request_duration_seconds_sum{verb="PATCH",host="h"} 0.06
rest_client_request_duration_seconds_bucket{verb="POST",host="h",le="0.016"} 1
rest_client_request_duration_seconds_count{verb="POST",host="h"} 19
`)
	r := &result{Details: map[string]any{}}
	apiCost(r, before, after, 10)
	got := map[string]float64{}
	for _, c := range r.Checks {
		got[c.Name] = c.Measured
	}
	if v, ok := got["reloader's own reloads slower than 20 ms"]; !ok || v != 3 {
		t.Errorf("own reloads slower than 20 ms = %v (%v), want 3 (10 reloads, 7 within 20 ms)", v, ok)
	}
	if v, ok := got["its PATCH requests slower than 16 ms"]; !ok || v != 2 {
		t.Errorf("PATCH requests slower than 16 ms = %v (%v), want 2 (10 patches, 8 within; POSTs not counted)", v, ok)
	}
	if v, ok := got["its PATCH requests' mean"]; !ok || math.Abs(v-5) > 1e-9 {
		t.Errorf("PATCH mean = %v (%v), want 5 ms (50 ms over 10 patches)", v, ok)
	}
}

func TestSamplePathsSplitEachSampleAtTheReloadersLogLinesAndCountItsCollections(t *testing.T) {
	started := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return started.Add(time.Duration(ms) * time.Millisecond) }
	line := func(ms int, msg, name string) string {
		return fmt.Sprintf(`{"time":%q,"level":"INFO","msg":%q,"name":%q}`, at(ms).Format(time.RFC3339Nano), msg, name)
	}
	log := strings.Join([]string{
		line(900, msgChanged, "cm-1"), // an earlier change of cm-1: before the sample's update
		line(1003, msgChanged, "cm-1"),
		line(1004, msgChanged, "cm-2"),
		"gc 9 @1.005s 2%: 0.010+4.0+0.010 ms clock, 0.02+0.1/0.4/0.1+0.007 ms cpu, 30->31->15 MB, 32 MB goal, 0 MB stacks, 0 MB globals, 2 P",
		line(1012, msgReloaded, "d-0"),
		line(2001, msgChanged, "cm-3"),
		line(2005, msgReloaded, "d-1"),
	}, "\n")
	path := filepath.Join(t.TempDir(), "reloader.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	seen := []seenReload{
		{reload{config: "cm-1", deployment: "d-0", updated: at(1001)}, at(1015)},
		{reload{config: "cm-3", deployment: "d-1", updated: at(2002)}, at(2007)}, // judged 1 ms before the update returned
		{reload{config: "cm-4", deployment: "d-2", updated: at(3000)}, at(3009)}, // no log lines: left out
	}
	got, err := samplePaths(path, started, seen)
	if err != nil {
		t.Fatal(err)
	}
	want := []samplePath{
		{Config: "cm-1", TotalMs: 14, ToReloader: 2, InReloader: 9, ToBench: 3, GCMs: 4.02},
		{Config: "cm-3", TotalMs: 5, ToReloader: -1, InReloader: 4, ToBench: 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("samplePaths =\n%+v, want\n%+v", got, want)
	}
}

func TestAPIServerCostReadsItsOwnPatchLatencyCPUAndCollections(t *testing.T) {
	parse := func(text string) metricSet {
		m, err := parseMetrics(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := parse(`apiserver_request_duration_seconds_sum{verb="PATCH",resource="deployments",scope="resource"} 1
apiserver_request_duration_seconds_count{verb="PATCH",resource="deployments",scope="resource"} 100
apiserver_request_duration_seconds_sum{verb="PATCH",resource="configmaps",scope="resource"} 1
apiserver_request_duration_seconds_count{verb="PATCH",resource="configmaps",scope="resource"} 10
process_cpu_seconds_total 40
go_gc_duration_seconds_count 7
`)
	after := parse(`apiserver_request_duration_seconds_sum{verb="PATCH",resource="deployments",scope="resource"} 1.08
apiserver_request_duration_seconds_count{verb="PATCH",resource="deployments",scope="resource"} 110
apiserver_request_duration_seconds_sum{verb="PATCH",resource="configmaps",scope="resource"} 9
apiserver_request_duration_seconds_count{verb="PATCH",resource="configmaps",scope="resource"} 20
process_cpu_seconds_total 40.2
go_gc_duration_seconds_count 9
`)
	r := &result{Details: map[string]any{}}
	apiServerCost(r, before, after, 10)
	got := map[string]float64{}
	for _, c := range r.Checks {
		got[c.Name] = c.Measured
	}
	want := map[string]float64{
		"API server's PATCH of Deployments, mean": 8,  // 80 ms over 10 patches; the ConfigMaps' are not counted
		"API server CPU time / changes":           20, // 200 ms over 10 changes
		"API server collections":                  2,
	}
	for name, w := range want {
		if v, ok := got[name]; !ok || math.Abs(v-w) > 1e-6 {
			t.Errorf("%s = %v (%v), want %v", name, v, ok, w)
		}
	}
}

func TestGrowthPerConfigComparesNeighbouringSizesAgainstTheTarget(t *testing.T) {
	var results []*result
	// RSS settled in MiB by size; the 20,000 size failed and is left out.
	for n, rss := range map[int]float64{5000: 15, 20000: 0, 35000: 45, 50000: 59} {
		r := &result{Scenario: fmt.Sprintf("%s-%d", scGrowth, n), Params: population{}.clusterWide(n, 50),
			Checks: []check{info("RSS settled", rss, unitMiB)}}
		if n == 20000 {
			r.Error = "setup failed"
		}
		results = append(results, r)
	}
	r := &result{}
	if err := growthPerConfig(results, r); err != nil {
		t.Fatal(err)
	}
	want := []check{
		atMost("RSS settled per extra config, 5000 → 35000", 30*1024.0/30000, 1, unitPerCfg),  // 1.02: a miss
		atMost("RSS settled per extra config, 35000 → 50000", 14*1024.0/15000, 1, unitPerCfg), // 0.96
		info("RSS settled per extra config, 5000 → 50000", 44*1024.0/45000, unitPerCfg),
	}
	if !reflect.DeepEqual(r.Checks, want) {
		t.Errorf("checks =\n%+v, want\n%+v", r.Checks, want)
	}
	if r.Checks[0].Verdict != verdictMiss || r.Checks[1].Verdict != verdictPass {
		t.Errorf("verdicts %s, %s; want MISS, PASS", r.Checks[0].Verdict, r.Checks[1].Verdict)
	}
	if err := growthPerConfig(results[:1], &result{}); err == nil {
		t.Error("one size: no error")
	}
}

func TestSamplerSplitsThePeakIntoAnonymousAndFilePages(t *testing.T) {
	s := startSampler(os.Getpid(), time.Millisecond)
	for {
		if _, n := s.peak(); n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	s.close()
	anon, file := s.split()
	rss, _ := s.peak()
	if anon <= 0 || file <= 0 || anon > rss || file > rss {
		t.Fatalf("split = anon %d, file %d of a peak RSS %d: want both positive and within it", anon, file, rss)
	}
	s.reset()
	if anon, file := s.split(); anon != 0 || file != 0 {
		t.Fatalf("split after reset = %d, %d, want 0, 0", anon, file)
	}
}
