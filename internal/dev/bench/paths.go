package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// The reloader's log lines that mark a reload's path (--log-level info or lower): a change
// judged, and a workload patched.
const (
	msgChanged  = "config changed"
	msgReloaded = "reloaded workload"
)

// samplePath splits one latency sample at the reloader's log lines: from the update returning
// to the reloader judging the change, then to its patch returning, then to the bench's watch
// showing the template. The log's times have millisecond precision.
type samplePath struct {
	Config     string  `json:"config"`
	TotalMs    float64 `json:"total_ms"`
	ToReloader float64 `json:"to_reloader_ms"`
	InReloader float64 `json:"in_reloader_ms"`
	ToBench    float64 `json:"to_bench_ms"`
	// GCMs is how long the reloader's collections overlapped the sample, from its gctrace
	// (GODEBUG=gctrace=1), whose times count from the process's start.
	GCMs float64 `json:"gc_ms,omitempty"`
}

// gcSpan is one collection of the reloader, as offsets from its start.
type gcSpan struct{ from, to time.Duration }

// gcClock matches "gc 7 @2.345s 1%: 0.01+3.2+0.02 ms clock": the start and the wall time of
// each phase.
var gcClock = regexp.MustCompile(`^gc \d+ @([0-9.]+)s \d+%: ([0-9.]+)\+([0-9.]+)\+([0-9.]+) ms clock`)

// parseGCTrace reads a gctrace line's span.
func parseGCTrace(line string) (gcSpan, bool) {
	m := gcClock.FindStringSubmatch(line)
	if m == nil {
		return gcSpan{}, false
	}
	var v [4]float64
	for i := range v {
		v[i], _ = strconv.ParseFloat(m[i+1], 64)
	}
	from := time.Duration(v[0] * float64(time.Second))
	return gcSpan{from, from + time.Duration((v[1]+v[2]+v[3])*float64(time.Millisecond))}, true
}

// overlap is how long the collections overlapped [from, to].
func overlap(gcs []gcSpan, from, to time.Duration) time.Duration {
	var d time.Duration
	for _, g := range gcs {
		d += max(0, min(g.to, to)-max(g.from, from))
	}
	return d
}

// logTimes are, per object name, the times of one kind of log line, in the log's order.
type logTimes map[string][]time.Time

// after returns the first time of name at or after t.
func (lt logTimes) after(name string, t time.Time) (time.Time, bool) {
	for _, at := range lt[name] {
		if !at.Before(t) {
			return at, true
		}
	}
	return time.Time{}, false
}

// readPathLog collects the times of the reloader's "config changed" and "reloaded workload"
// lines from its JSON log.
func readPathLog(path string) (changed, reloaded logTimes, gcs []gcSpan, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read reloader log: %w", err)
	}
	defer f.Close()
	changed, reloaded = logTimes{}, logTimes{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
			Name string    `json:"name"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			if g, ok := parseGCTrace(sc.Text()); ok {
				gcs = append(gcs, g)
			}
			continue
		}
		switch line.Msg {
		case msgChanged:
			changed[line.Name] = append(changed[line.Name], line.Time)
		case msgReloaded:
			reloaded[line.Name] = append(reloaded[line.Name], line.Time)
		}
	}
	return changed, reloaded, gcs, sc.Err()
}

// samplePaths matches each sample to the reloader's log lines. A sample whose lines are missing
// (the log level above info) is left out.
func samplePaths(logPath string, started time.Time, seen []seenReload) ([]samplePath, error) {
	changed, reloaded, gcs, err := readPathLog(logPath)
	if err != nil {
		return nil, err
	}
	var out []samplePath
	for _, s := range seen {
		// The log's millisecond precision may put the judgement before the update returned.
		judged, ok := changed.after(s.config, s.updated.Truncate(time.Millisecond).Add(-time.Millisecond))
		if !ok {
			continue
		}
		patched, ok := reloaded.after(s.deployment, judged)
		if !ok {
			continue
		}
		out = append(out, samplePath{
			Config: s.config, TotalMs: round2ms(s.at.Sub(s.updated)),
			ToReloader: round2ms(judged.Sub(s.updated)), InReloader: round2ms(patched.Sub(judged)),
			ToBench: round2ms(s.at.Sub(patched)),
			GCMs:    round2ms(overlap(gcs, s.updated.Sub(started), s.at.Sub(started))),
		})
	}
	return out, nil
}

// round2ms is d in milliseconds to two decimals.
func round2ms(d time.Duration) float64 { return math.Round(ms(d)*100) / 100 }

// addPaths records the samples' paths and the slowest one's parts, if the log holds them.
func (k *kit) addPaths(r *result, p *reloaderProc, lt latencies) {
	paths, err := samplePaths(p.logPath, p.started, lt.seen)
	if err != nil {
		k.logf("sample paths: %v", err)
		return
	}
	if len(paths) == 0 {
		return
	}
	r.detail("sample_paths", paths)
	slowest := slices.MaxFunc(paths, func(a, b samplePath) int { return cmp.Compare(a.TotalMs, b.TotalMs) })
	r.add(info("slowest sample: update → reloader judged", slowest.ToReloader, unitMs),
		info("slowest sample: judged → patched", slowest.InReloader, unitMs),
		info("slowest sample: patched → bench saw it", slowest.ToBench, unitMs))
}
