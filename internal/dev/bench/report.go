package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Verdicts of a check. INFO lines have no target.
const (
	verdictPass = "PASS"
	verdictMiss = "MISS"
	verdictInfo = "INFO"
)

// Units of measured values; they decide how a value is printed.
const (
	unitMiB     = "MiB"
	unitMs      = "ms"
	unitSeconds = "s"
	unitCount   = ""
	unitPerChg  = "req/change"
	unitPercent = "%"
	unitPerCfg  = "KiB/config"
)

// check is one measured value, with its target when it has one.
type check struct {
	Name     string  `json:"name"`
	Measured float64 `json:"measured"`
	Unit     string  `json:"unit,omitempty"`
	Target   string  `json:"target,omitempty"`
	Verdict  string  `json:"verdict"`
}

func atMost(name string, v, limit float64, unit string) check {
	return check{Name: name, Measured: v, Unit: unit, Target: "<= " + format(limit, unit), Verdict: verdictOf(v <= limit)}
}

func exactly(name string, v, want float64, unit string) check {
	return check{Name: name, Measured: v, Unit: unit, Target: "= " + format(want, unit), Verdict: verdictOf(v == want)}
}

func info(name string, v float64, unit string) check {
	return check{Name: name, Measured: v, Unit: unit, Verdict: verdictInfo}
}

func verdictOf(ok bool) string {
	if ok {
		return verdictPass
	}
	return verdictMiss
}

// format prints a value in its unit with a sensible precision.
func format(v float64, unit string) string {
	var s string
	switch unit {
	case unitMiB, unitSeconds, unitPercent:
		s = fmt.Sprintf("%.1f", v)
	case unitMs, unitPerChg, unitPerCfg:
		s = fmt.Sprintf("%.2f", v)
	default:
		s = fmt.Sprintf("%g", v)
	}
	if unit == "" {
		return s
	}
	if unit == unitPercent {
		return s + "%"
	}
	return s + " " + unit
}

// result is one scenario's outcome, and one line of the .jsonl file.
type result struct {
	Scenario string         `json:"scenario"`
	Started  time.Time      `json:"started"`
	Seconds  float64        `json:"seconds"`
	Params   any            `json:"params,omitempty"`
	Checks   []check        `json:"checks"`
	Details  map[string]any `json:"details,omitempty"`
	Error    string         `json:"error,omitempty"`
	// LoadAvg is /proc/loadavg at the start and the end: the machine may be shared.
	LoadAvg [2]string `json:"loadavg"`
	Version string    `json:"reloader_version,omitempty"`
}

func (r *result) add(c ...check) { r.Checks = append(r.Checks, c...) }

func (r *result) detail(key string, v any) { r.Details[key] = v }

// report keeps the scenarios' results: each goes to the .jsonl file as it comes, and all are
// printed as one report at the end.
type report struct {
	begin     time.Time
	dir       string // logs and profiles of this run
	jsonlPath string
	jsonl     *os.File
	results   []*result
	// growthSamples is -growth-samples, for the growth table's title.
	growthSamples int
	logf          func(format string, args ...any)
}

// newReport creates dir and the .jsonl file at jsonlPath.
func newReport(dir, jsonlPath string, growthSamples int, begin time.Time, logf func(string, ...any)) (*report, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create results directory: %w", err)
	}
	f, err := os.Create(jsonlPath)
	if err != nil {
		return nil, fmt.Errorf("create results file: %w", err)
	}
	return &report{begin: begin, dir: dir, jsonlPath: jsonlPath, jsonl: f, growthSamples: growthSamples, logf: logf}, nil
}

func (rp *report) close() {
	if err := rp.jsonl.Close(); err != nil {
		rp.logf("close %s: %v", rp.jsonlPath, err)
	}
}

// add keeps r and writes it to the .jsonl file.
func (rp *report) add(r *result) {
	rp.results = append(rp.results, r)
	rp.writeJSON(r)
}

func (rp *report) writeJSON(r *result) {
	b, err := json.Marshal(r)
	if err == nil {
		_, err = fmt.Fprintf(rp.jsonl, "%s\n", b)
	}
	if err != nil {
		rp.logf("write %s: %v", rp.jsonlPath, err)
	}
}

// printReport prints every check of the reloader of version, then the growth table and the
// profile summaries.
func (rp *report) printReport(w io.Writer, version string) {
	fmt.Fprintf(w, "\nreloader %s benchmark, %s, %s wall time\n\n", version, time.Now().Format("2006-01-02"), time.Since(rp.begin).Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tMEASURE\tMEASURED\tTARGET\tRESULT")
	for _, r := range rp.results {
		for _, c := range r.Checks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Scenario, c.Name, format(c.Measured, c.Unit), c.Target, c.Verdict)
		}
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\tERROR\t%s\t\t\n", r.Scenario, r.Error)
		}
	}
	tw.Flush()
	rp.printGrowth(w)
	rp.printProfiles(w)
	fmt.Fprintf(w, "\nresults: %s\nlogs and profiles: %s\n", rp.jsonlPath, rp.dir)
}

// printGrowth prints the growth scenarios as one table, a row per size.
func (rp *report) printGrowth(w io.Writer) {
	var rows []*result
	for _, r := range rp.results {
		if strings.HasPrefix(r.Scenario, scGrowth+"-") && r.Error == "" {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	cols := []string{"time to /readyz", "CPU to /readyz", "RSS settled", "VmHWM at settle", "heap in use settled", "latency p50", "latency p99", "reloads missed", "API requests per change (excl. list/watch)", "reloader CPU time / changes"}
	fmt.Fprintf(w, "\ngrowth (%d latency samples per size)\n\n", rp.growthSamples)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "ConfigMaps\tSecrets\tDeployments\tnamespaces\t%s\t\n", strings.Join(cols, "\t"))
	for _, r := range rows {
		pop, ok := r.Params.(population)
		if !ok {
			continue
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t", pop.ConfigMaps, pop.Secrets, pop.Deployments, pop.Namespaces)
		for _, col := range cols {
			fmt.Fprintf(tw, "%s\t", r.value(col))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// value formats the check named name, or "-".
func (r *result) value(name string) string {
	i := slices.IndexFunc(r.Checks, func(c check) bool { return c.Name == name })
	if i < 0 {
		return "-"
	}
	return format(r.Checks[i].Measured, r.Checks[i].Unit)
}

// printProfiles prints the profile summaries the scenarios kept.
func (rp *report) printProfiles(w io.Writer) {
	for _, r := range rp.results {
		if strings.HasPrefix(r.Scenario, scGrowth) {
			continue // the growth profiles are in the results directory
		}
		for _, key := range []string{"heap_top", "cpu_top"} {
			lines, ok := r.Details[key].([]string)
			if !ok {
				continue
			}
			fmt.Fprintf(w, "\n%s: %s (%s)\n", r.Scenario, key, r.Details[strings.TrimSuffix(key, "_top")+"_profile"])
			for _, line := range lines {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
	}
}

// plotGrowth draws this run's growth results, if it has any, into its results directory.
func (rp *report) plotGrowth() {
	rows, err := growthRows(rp.results)
	if err != nil || len(rows) == 0 {
		return
	}
	path := filepath.Join(rp.dir, "growth.png")
	if err := writeGrowthPlot(rows, path); err != nil {
		rp.logf("growth plot: %v", err)
		return
	}
	fmt.Printf("growth plot: %s\n", path)
}

// failed counts scenarios that ended in an error.
func (rp *report) failed() int {
	n := 0
	for _, r := range rp.results {
		if r.Error != "" {
			n++
		}
	}
	return n
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// percentile returns the nearest-rank p-th percentile (0 < p <= 100) of sorted values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// loadAvg returns the 1, 5 and 15 minute load averages, or "" if they cannot be read.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
