package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reloader/reloader/metrics"
)

// metricSet knows which metric names the reloader serves and which docs/metrics.md documents.
type metricSet struct {
	served     map[string]bool // every name metrics.New (every option) and ClientGo register, Go and process collectors included
	histograms map[string]bool
	documented map[string]bool // docs/metrics.md's tables
}

// knownMetrics collects the names metrics.New registers (through the registry's descriptors,
// so vectors without children count) and the names in docs/metrics.md's tables.
func knownMetrics(t *testing.T) metricSet {
	t.Helper()
	ms := metricSet{served: map[string]bool{}, histograms: map[string]bool{}, documented: map[string]bool{}}
	// With every option and client-go's adapters, so the metrics served only then count too.
	m := metrics.New("test", metrics.ByNamespace())
	m.ClientGo()
	descs := make(chan *prometheus.Desc)
	go func() { m.Registry.Describe(descs); close(descs) }()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		if sub := fqName.FindStringSubmatch(d.String()); sub != nil {
			ms.served[sub[1]] = true
		}
	}
	m.Latency.WithLabelValues("x", "ns").Observe(1) // so Gather reports the histogram's type (kind, namespace)
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetType().String() == "HISTOGRAM" {
			ms.histograms[f.GetName()] = true
		}
	}
	page, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range regexp.MustCompile("(?m)^\\| (`[^|]+)\\|").FindAllStringSubmatch(string(page), -1) {
		documentRow(ms.documented, row[1])
	}
	if len(ms.documented) == 0 || len(ms.served) == 0 {
		t.Fatalf("found %d documented and %d served metrics; has docs/metrics.md moved?", len(ms.documented), len(ms.served))
	}
	return ms
}

// documentRow adds the names of a Metrics table row's first cell to documented. A name
// written `_x` after another keeps that one's namespace and subsystem (its first two
// segments): `reloader_workqueue_depth`, `_adds_total` is also reloader_workqueue_adds_total.
func documentRow(documented map[string]bool, cell string) {
	var stem string
	for _, sub := range regexp.MustCompile("`([a-z_:]+)`").FindAllStringSubmatch(cell, -1) {
		name := sub[1]
		if strings.HasPrefix(name, "_") {
			name = stem + name
		} else if parts := strings.SplitN(name, "_", 3); len(parts) == 3 {
			stem = parts[0] + "_" + parts[1]
		}
		documented[name] = true
	}
}

// check reports why a queried name is not a metric the reloader serves and documents. The
// Go and process collectors' names count as documented ("the standard go_* and process_*
// collectors"); up is Prometheus's own.
func (ms metricSet) check(name string) error {
	base := name
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, suffix); ok && ms.histograms[b] {
			base = b
		}
	}
	switch {
	case base == "up":
		return nil
	case !ms.served[base]:
		return fmt.Errorf("queries %s, which the reloader does not serve", name)
	case strings.HasPrefix(base, "go_") || strings.HasPrefix(base, "process_"):
		return nil
	case ms.histograms[base] && base == name:
		return fmt.Errorf("queries histogram %s without _bucket, _sum or _count", name)
	case !ms.documented[base]:
		return fmt.Errorf("queries %s, which docs/metrics.md does not list", name)
	}
	return nil
}

var (
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true,
		"group_right": true, "bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true}
)

// metricNames returns the metric names a PromQL expression selects: identifiers that are not
// functions, aggregations, keywords, label names or numbers. It is no parser, but enough for
// the expressions of the dashboard and the alerts.
func metricNames(expr string) []string {
	s := promString.ReplaceAllString(expr, " ")
	s = promMatchers.ReplaceAllString(s, " ")
	s = promRange.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range promIdent.FindAllStringIndex(s, -1) {
		id := s[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsAny(s[loc[0]-1:loc[0]], "0123456789.$") {
			continue // 1e3, or a Grafana variable
		}
		if promKeywords[strings.ToLower(id)] || strings.HasPrefix(strings.TrimLeft(s[loc[1]:], " \t\n"), "(") {
			continue
		}
		out = append(out, id)
	}
	return out
}

// TestMetricsDocListsEveryMetricServed holds docs/metrics.md's tables to what metrics.New
// registers, both ways, so a user's queries built from the table select something.
func TestMetricsDocListsEveryMetricServed(t *testing.T) {
	ms := knownMetrics(t)
	for name := range ms.served {
		if !ms.documented[name] && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			t.Errorf("the reloader serves %s, which docs/metrics.md does not list", name)
		}
	}
	for name := range ms.documented {
		if !ms.served[name] {
			t.Errorf("docs/metrics.md lists %s, which the reloader does not serve", name)
		}
	}
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (kind, result) (rate(reloader_reloads_total{namespace=~"$namespace",result="failure"}[$__rate_interval]))`: {"reloader_reloads_total"},
		`histogram_quantile(0.99, sum by (le) (rate(a_bucket{x="y"}[5m]))) / on(pod) group_left b`:                         {"a_bucket", "b"},
		`absent(up{job="r"} == 1) or max(c) > 0.9 * 1048576 unless count(d offset 1h) >= 1e3`:                              {"up", "c", "d"},
	} {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("metricNames(%s) = %v, want %v", expr, got, want)
		}
	}
}

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // of a collapsed row
}

// TestGrafanaDashboard parses the dashboard and checks that every query selects metrics the
// reloader serves and docs/metrics.md documents, and that the panels cover the metrics that matter.
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile("grafana/reloader-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("reloader-dashboard.json: %v", err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard needs a title, a uid and panels")
	}
	known := knownMetrics(t)
	queried := map[string]bool{}
	ids := map[int]bool{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 || p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q needs targets and the ${datasource} data source", p.Title)
			}
			for _, target := range p.Targets {
				checkDashboardSelects(t, p.Title, target.Expr)
				for _, name := range metricNames(target.Expr) {
					queried[name] = true
					if err := known.check(name); err != nil {
						t.Errorf("panel %q: %v", p.Title, err)
					}
				}
			}
		}
	}
	walk(d.Panels)
	labelValues := regexp.MustCompile(`label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)`)
	for _, v := range d.Templating.List {
		q, _ := json.Marshal(v.Query)
		for _, sub := range labelValues.FindAllStringSubmatch(string(q), -1) {
			if err := known.check(sub[1]); err != nil {
				t.Errorf("variable %s: %v", v.Name, err)
			}
		}
	}
	for _, want := range []string{"reloader_reloads_total", "reloader_reload_latency_seconds_bucket",
		"reloader_pending_reloads", "reloader_config_changes_total", "reloader_coalesced_total",
		"reloader_state_entries", "reloader_state_bytes", "reloader_state_writes_total",
		"reloader_api_requests_total", "reloader_leader", "process_resident_memory_bytes"} {
		if !queried[want] {
			t.Errorf("no panel queries %s", want)
		}
	}
}

// checkDashboardSelects fails unless a panel's query selects the reloader's series however it is
// scraped, with the variables at All (their allValue, .*) and at the values their
// label_values queries list for that scrape.
func checkDashboardSelects(t *testing.T, panel, expr string) {
	t.Helper()
	const ns = "team-a"
	all := strings.NewReplacer("$namespace", ".*", "$job", ".*").Replace(expr)
	checkSelectsEveryScrape(t, "panel "+panel+" (All)", all, ns, false)
	for how, target := range scrapes(ns) {
		listed := strings.NewReplacer("$namespace", target["namespace"], "$job", target["job"]).Replace(expr)
		for metric, ms := range selectors(listed) {
			if err := selectsTarget(ms, target); err != nil {
				t.Errorf("panel %s: %s scraped by %s is not selected with the variables at its values: %v", panel, metric, how, err)
			}
		}
	}
}
