package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
)

// sample is one line of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// metricSet is a scrape of /metrics.
type metricSet []sample

// parseMetrics reads the Prometheus text exposition format; comments are skipped.
func parseMetrics(r io.Reader) (metricSet, error) {
	var out metricSet
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	return out, nil
}

func parseSample(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	var rest string
	if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
		s.name = line[:i]
		end, err := parseLabels(line[i+1:], s.labels)
		if err != nil {
			return s, fmt.Errorf("metrics line %q: %w", line, err)
		}
		rest = line[i+1+end:]
	} else {
		s.name, rest, _ = strings.Cut(line, " ")
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return s, fmt.Errorf("metrics line %q: no value", line)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("metrics line %q: %w", line, err)
	}
	s.value = v
	return s, nil
}

// parseLabels reads `a="x",b="y"}` into dst and returns the index just past the '}'.
func parseLabels(s string, dst map[string]string) (int, error) {
	i := 0
	for {
		for i < len(s) && (s[i] == ',' || s[i] == ' ') {
			i++
		}
		if i < len(s) && s[i] == '}' {
			return i + 1, nil
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 || i+eq+1 >= len(s) || s[i+eq+1] != '"' {
			return 0, fmt.Errorf("malformed labels")
		}
		name := s[i : i+eq]
		value, n, err := unquote(s[i+eq+2:])
		if err != nil {
			return 0, err
		}
		dst[name] = value
		i += eq + 2 + n
	}
}

// unquote reads an escaped label value up to its closing quote and returns it and the bytes
// consumed, the quote included.
func unquote(s string) (string, int, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return b.String(), i + 1, nil
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] == 'n' {
				b.WriteByte('\n')
			} else {
				b.WriteByte(s[i]) // \\ and \"
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated label value")
}

// sum adds the values of every sample named name whose labels include match.
func (m metricSet) sum(name string, match map[string]string) float64 {
	var total float64
	for _, s := range m {
		if s.name == name && hasLabels(s.labels, match) {
			total += s.value
		}
	}
	return total
}

// get returns the value of the first sample named name, or 0.
func (m metricSet) get(name string) float64 {
	return m.sum(name, nil)
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// byLabels returns the samples named name keyed by the values of the given labels, joined
// with a space.
func (m metricSet) byLabels(name string, labels ...string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m {
		if s.name != name {
			continue
		}
		parts := make([]string, len(labels))
		for i, l := range labels {
			parts[i] = s.labels[l]
		}
		out[strings.Join(parts, " ")] += s.value
	}
	return out
}

// delta returns after minus before, key by key, dropping zero differences.
func delta(before, after map[string]float64) map[string]float64 {
	out := maps.Clone(after)
	for k, v := range before {
		out[k] -= v
	}
	maps.DeleteFunc(out, func(_ string, v float64) bool { return v == 0 })
	return out
}
