package deploy_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// targetLabels are the labels Prometheus attaches to every series of a target: the alerts and
// the dashboard may select on these and nothing else of the scrape configuration.
var targetLabels = map[string]bool{"job": true, "namespace": true, "pod": true, "instance": true, "service": true, "endpoint": true, "container": true}

// scrapes are the target labels a reloader pod in ns gets from the two usual ways of scraping
// it: the chart's ServiceMonitor (job is the Service's name), and the prometheus.io annotations
// with the kubernetes-pods job of Prometheus's example configuration and community chart.
func scrapes(ns string) map[string]map[string]string {
	return map[string]map[string]string{
		"ServiceMonitor": {"job": fullname, "namespace": ns, "service": fullname, "endpoint": "http",
			"pod": fullname + "-7d4b9c-x2x9z", "container": "reloader", "instance": "10.0.0.7:8080"},
		"prometheus.io annotations": {"job": "kubernetes-pods", "namespace": ns,
			"pod": fullname + "-7d4b9c-x2x9z", "instance": "10.0.0.7:8080"},
	}
}

// matcher is one PromQL label matcher.
type matcher struct{ label, op, value string }

var (
	promSelector = regexp.MustCompile(`([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}`)
	promMatcher  = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"`)
)

// selectors returns, per metric selected with braces in expr, its label matchers.
func selectors(expr string) map[string][]matcher {
	out := map[string][]matcher{}
	for _, s := range promSelector.FindAllStringSubmatch(expr, -1) {
		var ms []matcher
		for _, m := range promMatcher.FindAllStringSubmatch(s[2], -1) {
			ms = append(ms, matcher{m[1], m[2], m[3]})
		}
		out[s[1]] = append(out[s[1]], ms...)
	}
	return out
}

// selectsTarget reports whether every matcher on a target label accepts a series with these
// target labels (a missing label has the empty value, as in Prometheus; regexes are anchored).
// Matchers on the metric's own labels are not judged.
func selectsTarget(ms []matcher, target map[string]string) error {
	for _, m := range ms {
		if !targetLabels[m.label] {
			continue
		}
		v := target[m.label]
		var ok bool
		switch m.op {
		case "=":
			ok = v == m.value
		case "!=":
			ok = v != m.value
		default:
			re, err := regexp.Compile("^(?:" + m.value + ")$")
			if err != nil {
				return fmt.Errorf("matcher %s%s%q: %v", m.label, m.op, m.value, err)
			}
			ok = re.MatchString(v) == (m.op == "=~")
		}
		if !ok {
			return fmt.Errorf("%s%s%q does not match %s=%q", m.label, m.op, m.value, m.label, v)
		}
	}
	return nil
}

// checkSelectsEveryScrape fails unless each selector of expr matches the reloader's series in
// ns however it is scraped, and, when own is set, matches none of another namespace's.
func checkSelectsEveryScrape(t *testing.T, what, expr, ns string, own bool) {
	t.Helper()
	for metric, ms := range selectors(expr) {
		for how, target := range scrapes(ns) {
			if err := selectsTarget(ms, target); err != nil {
				t.Errorf("%s: %s scraped by %s is not selected: %v\n%s", what, metric, how, err, expr)
			}
		}
		if own {
			if selectsTarget(ms, scrapes("elsewhere")["prometheus.io annotations"]) == nil {
				t.Errorf("%s: %s selects another namespace's reloader too: %s", what, metric, expr)
			}
		}
	}
}

func TestSelectorMatching(t *testing.T) {
	target := map[string]string{"job": "kubernetes-pods", "namespace": "a"}
	for expr, want := range map[string]bool{
		`x{namespace="a",result="failure"}`:  true,
		`x{job="rl-reloader",namespace="a"}`: false,
		`x{namespace=~"a|b",job=~".*"}`:      true,
		`x{namespace=~"b.*"}`:                false,
		`x{pod!="",namespace!="b"}`:          false, // no pod label here
	} {
		if got := selectsTarget(selectors(expr)["x"], target) == nil; got != want {
			t.Errorf("%s selects %v: %v, want %v", expr, target, got, want)
		}
	}
	if n := len(selectors(`sum(rate(a{x="1"}[5m])) / b{y=~"2"}`)); n != 2 {
		t.Errorf("found %d selectors, want 2", n)
	}
}

// prometheusRule.selector replaces the namespace matcher in every alert.
func TestChartAlertSelectorOverride(t *testing.T) {
	out, err := render(t, "team-a", "prometheusRule.enabled=true", `prometheusRule.selector=namespace="team-a"\,pod=~"rl-reloader-.*"`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	exprs := regexp.MustCompile(`(?m)^\s+expr: (.*)$`).FindAllStringSubmatch(string(out), -1)
	if len(exprs) == 0 {
		t.Fatalf("no alert expressions rendered:\n%s", out)
	}
	for _, e := range exprs {
		if !strings.Contains(e[1], `namespace="team-a",pod=~"rl-reloader-.*"`) {
			t.Errorf("alert expression without the selector: %s", e[1])
		}
	}
}
