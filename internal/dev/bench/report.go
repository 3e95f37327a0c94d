package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
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

func (l *lab) writeJSON(r *result) {
	b, err := json.Marshal(r)
	if err == nil {
		_, err = fmt.Fprintf(l.jsonl, "%s\n", b)
	}
	if err != nil {
		l.logf("write %s: %v", l.jsonlPath, err)
	}
}

// printReport prints every check, then the growth table and the profile summaries.
func (l *lab) printReport(w io.Writer) {
	fmt.Fprintf(w, "\nreloader %s benchmark, %s, %s wall time\n\n", l.version, time.Now().Format("2006-01-02"), time.Since(l.begin).Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tMEASURE\tMEASURED\tTARGET\tRESULT")
	for _, r := range l.results {
		for _, c := range r.Checks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Scenario, c.Name, format(c.Measured, c.Unit), c.Target, c.Verdict)
		}
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\tERROR\t%s\t\t\n", r.Scenario, r.Error)
		}
	}
	tw.Flush()
	l.printGrowth(w)
	l.printProfiles(w)
	fmt.Fprintf(w, "\nresults: %s\nlogs and profiles: %s\n", l.jsonlPath, l.dir)
}

// printGrowth prints the growth scenarios as one table, a row per size.
func (l *lab) printGrowth(w io.Writer) {
	var rows []*result
	for _, r := range l.results {
		if strings.HasPrefix(r.Scenario, scGrowth+"-") && r.Error == "" {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	cols := []string{"time to /readyz", "CPU to /readyz", "RSS settled", "VmHWM at settle", "heap in use settled", "latency p50", "latency p99", "reloads missed", "API requests per change (excl. list/watch)", "reloader CPU time / changes"}
	fmt.Fprintf(w, "\ngrowth (%d latency samples per size)\n\n", l.cfg.growthSamples)
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
func (l *lab) printProfiles(w io.Writer) {
	for _, r := range l.results {
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

// failed counts scenarios that ended in an error.
func (l *lab) failed() int {
	n := 0
	for _, r := range l.results {
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
