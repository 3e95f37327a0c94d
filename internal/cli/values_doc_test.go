package cli

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/policy"
)

// docs/values.md is the one statement of what every annotation and flag accepts. These tests
// hold it to the code: each example goes through the code that reads the value, and every key
// the code knows has exactly one row, so neither can change without the other.

const valuesDocPath = "../../docs/values.md"

// valuesRow is one row of a values table: an annotation or flag, or (in the boolean table) a
// group of flags that share their examples.
type valuesRow struct {
	section  string // the "## " heading above the table
	line     int
	keys     []string // one key, but for the boolean table's rows
	anchor   string   // the row's <a id>, "" in the boolean table
	accepted []string // nil: "—", none
	refused  []string
}

var (
	rowKey   = regexp.MustCompile("^<a id=\"([^\"]+)\"></a>`([^`]+)`$")
	linkFrag = regexp.MustCompile(`\]\(([^)#]*values\.md)?#([^)]+)\)`)
)

// readValuesDoc parses every table of docs/values.md that has accepted and refused columns.
func readValuesDoc(t *testing.T) []valuesRow {
	t.Helper()
	doc, err := os.ReadFile(valuesDocPath)
	if err != nil {
		t.Fatal(err)
	}
	var rows []valuesRow
	var section string
	var header []string // the current table's columns; nil outside a table
	for i, line := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
		}
		if !strings.HasPrefix(line, "|") {
			header = nil
			continue
		}
		cells := tableCells(line)
		switch {
		case header == nil:
			header = cells
			continue
		case strings.Trim(line, "|- ") == "":
			continue // the separator under the header
		}
		col := func(name string) string {
			j := slices.Index(header, name)
			if j < 0 || j >= len(cells) {
				return ""
			}
			return cells[j]
		}
		if !slices.Contains(header, "accepted") || !slices.Contains(header, "refused") {
			continue // a table of another kind
		}
		if len(cells) != len(header) {
			t.Fatalf("%s:%d: %d cells, want %d as the header has", valuesDocPath, i+1, len(cells), len(header))
		}
		r := valuesRow{section: section, line: i + 1}
		switch {
		case slices.Contains(header, "key"):
			m := rowKey.FindStringSubmatch(col("key"))
			if m == nil {
				t.Fatalf("%s:%d: key cell %q is not <a id=\"...\"></a>`key`", valuesDocPath, i+1, col("key"))
			}
			r.anchor, r.keys = m[1], []string{m[2]}
		case slices.Contains(header, "flags"):
			keys, err := exampleList(col("flags"))
			if err != nil || len(keys) == 0 {
				t.Fatalf("%s:%d: flags cell: %v", valuesDocPath, i+1, err)
			}
			r.keys = keys
		default:
			t.Fatalf("%s:%d: a table with examples needs a key or flags column", valuesDocPath, i+1)
		}
		for _, c := range []struct {
			name string
			into *[]string
		}{{"accepted", &r.accepted}, {"refused", &r.refused}} {
			if col(c.name) == "—" {
				continue
			}
			if *c.into, err = exampleList(col(c.name)); err != nil {
				t.Fatalf("%s:%d: %s cell: %v", valuesDocPath, i+1, c.name, err)
			}
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no tables with accepted and refused columns", valuesDocPath)
	}
	return rows
}

// tableCells splits a table row on the pipes that are not escaped, trimmed.
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cell.WriteString(`\|`)
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

// exampleList reads a cell of examples: backquoted values, (empty) or (blank), separated by
// ", ". Anything else is an error, so that a typo in the page cannot silently drop an example.
func exampleList(cell string) ([]string, error) {
	var out []string
	for rest := cell; ; {
		switch {
		case strings.HasPrefix(rest, "(empty)"):
			out, rest = append(out, ""), rest[len("(empty)"):]
		case strings.HasPrefix(rest, "(blank)"):
			out, rest = append(out, "  "), rest[len("(blank)"):]
		case strings.HasPrefix(rest, "`"):
			end := strings.IndexByte(rest[1:], '`')
			if end < 0 {
				return nil, fmt.Errorf("unclosed backquote in %q", cell)
			}
			v := strings.ReplaceAll(rest[1:end+1], `\|`, "|")
			if v == "(empty)" || v == "(blank)" {
				return nil, fmt.Errorf("%q: write %s without backquotes", cell, v)
			}
			out, rest = append(out, v), rest[end+2:]
		default:
			return nil, fmt.Errorf("%q: want `value`, (empty) or (blank) at %q", cell, rest)
		}
		if rest == "" {
			return out, nil
		}
		var ok bool
		if rest, ok = strings.CutPrefix(rest, ", "); !ok {
			return nil, fmt.Errorf("%q: want \", \" between examples, at %q", cell, rest)
		}
	}
}

// anchorOf is the id a row's key gets: lower case, each run of other characters one '-'.
func anchorOf(key string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(key) {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// flagValue checks a value of flag key, given after the args it depends on.
func flagValue(key string, context ...string) func(string) error {
	return func(v string) error {
		_, err := parseFlags(append(context, key+"="+v)...)
		return err
	}
}

func problems(ps []string) error {
	if len(ps) == 0 {
		return nil
	}
	return errors.New(strings.Join(ps, "; "))
}

// valueChecks maps every key of docs/values.md to the code that reads its value: nil error for
// a value the code takes as written, an error for one it refuses. A nil func marks a key the
// reloader writes and never parses (or parses only in code this package cannot reach): its row
// may show what is written, but refuses nothing.
func valueChecks() map[string]func(string) error {
	a := policy.DefaultAnnotations()
	reloadAnnotation := func(key string) func(string) error {
		return func(v string) error { return problems(a.Of(map[string]string{key: v}, nil).Problems) }
	}
	gate := func(key string) func(string) error {
		return func(v string) error {
			return problems(a.GateOf(map[string]string{key: v}, nil, policy.GateDefaults{}).Problems)
		}
	}
	follow := func(key string) func(string) error {
		return func(v string) error {
			_, ps := policy.FollowOf(map[string]string{key: v}, nil, policy.Follow{})
			return problems(ps)
		}
	}
	isTrue := func(ok bool, what string) error {
		if !ok {
			return errors.New("not read as " + what)
		}
		return nil
	}
	// stakater's keys of features the reloader lacks: every value is said to do nothing.
	unsupported := func(key string) func(string) error {
		return func(v string) error {
			for _, u := range a.UnknownKeys(a.KnownKeys(), map[string]string{key: v}) {
				if u.Unsupported != "" {
					return errors.New(u.String())
				}
			}
			return nil
		}
	}
	const hashes = "reloader/config-hashes"
	const lastReloadedFrom = "reloader.stakater.com/last-reloaded-from"
	checks := map[string]func(string) error{
		// Annotations people set.
		a.Auto:                reloadAnnotation(a.Auto),
		a.ConfigMapAuto:       reloadAnnotation(a.ConfigMapAuto),
		a.SecretAuto:          reloadAnnotation(a.SecretAuto),
		a.Search:              reloadAnnotation(a.Search),
		a.ConfigMap:           reloadAnnotation(a.ConfigMap),
		a.Secret:              reloadAnnotation(a.Secret),
		a.ConfigMapExclude:    reloadAnnotation(a.ConfigMapExclude),
		a.SecretExclude:       reloadAnnotation(a.SecretExclude),
		policy.KindAnnotation: reloadAnnotation(policy.KindAnnotation),
		"secretproviderclass.reloader.stakater.com/auto":             unsupported("secretproviderclass.reloader.stakater.com/auto"),
		"secretproviderclass.reloader.stakater.com/reload":           unsupported("secretproviderclass.reloader.stakater.com/reload"),
		"secretproviderclasses.exclude.reloader.stakater.com/reload": unsupported("secretproviderclasses.exclude.reloader.stakater.com/reload"),
		a.Match: func(v string) error { return isTrue(a.Matches(map[string]string{a.Match: v}), "a match") },
		a.Ignore: func(v string) error {
			return isTrue(a.Ignores(map[string]string{a.Ignore: v}), "ignore")
		},
		a.RolloutStrategy: func(v string) error {
			return isTrue(a.RestartsAt(map[string]string{a.RolloutStrategy: v}), "the restart strategy")
		},
		a.PausePeriod:                gate(a.PausePeriod),
		policy.WindowAnnotation:      gate(policy.WindowAnnotation),
		policy.MinIntervalAnnotation: gate(policy.MinIntervalAnnotation),
		policy.TrackAnnotation:       follow(policy.TrackAnnotation),
		policy.RollbackAnnotation:    follow(policy.RollbackAnnotation),
		policy.TimeoutAnnotation:     follow(policy.TimeoutAnnotation),
		policy.ValidateAnnotation: func(v string) error {
			_, err := policy.ParseFormats(v)
			return err
		},
		// Annotations the reloader writes and reads back.
		policy.LastReloadAnnotation: func(v string) error {
			g := a.GateOf(map[string]string{policy.MinIntervalAnnotation: "1m", policy.LastReloadAnnotation: v}, nil, policy.GateDefaults{})
			return isTrue(!g.LastReload.IsZero(), "a time")
		},
		a.PausedAt: func(v string) error {
			g := a.GateOf(map[string]string{a.PausePeriod: "1m", a.PausedAt: v}, nil, policy.GateDefaults{})
			return isTrue(!g.PausedAt.IsZero(), "a time")
		},
		policy.HistoryAnnotation: func(v string) error {
			return isTrue(len(policy.ParseHistory(v)) == 1, "one history line")
		},
		policy.RestoreAnnotation: func(v string) error {
			_, err := policy.ParseRestore(v)
			return err
		},
		hashes: func(v string) error {
			return isTrue(len(policy.AppliedHashes(map[string]string{hashes: v})) > 0, "applied hashes")
		},
		lastReloadedFrom: func(v string) error {
			tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{lastReloadedFrom: v}}}
			r, _ := policy.Target{Strategy: policy.StrategyAnnotations}.RestoreOf(tmpl,
				[]policy.Change{{Ref: policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app"}, Value: "h"}})
			kept := r.Annotations[lastReloadedFrom]
			return isTrue(kept != nil && *kept == v, "a value a rollback puts back")
		},
		policy.RestartedAt:      nil, // written, never read
		"reloader/state-writer": nil, // written, never read (state/fence.go)
		"reloader/description":  nil, // written on the hash-key Secret, never read
		"reloader/pending-job":  nil, // read by reloader/jobs.go as a Job name, signed (cronjobrun.go)
		// Flags.
		"--webhook-url": func(v string) error {
			c, err := parseFlags("--webhook-url=" + v)
			if err != nil {
				return err
			}
			return CheckWebhookURL(c.WebhookURL)
		},
	}
	leader := []string{"--leader-elect"}
	for _, f := range []string{"--leader-election-lease", "--leader-election-renew-deadline", "--leader-election-retry-period"} {
		checks[f] = flagValue(f, leader...)
	}
	for _, f := range []string{"--namespace", "--namespaces", "--configmap", "--state-namespace", "--hash-key-secret",
		"--port", "--coalesce-period", "--coalesce-max-wait", "--shutdown-grace", "--kubeconfig", "--reload-strategy",
		"--log-format", "--log-level", "--kube-api-qps", "--kube-api-burst", "--leader-election-id",
		"--leader-election-namespace", "--alternative-configmap-annotation", "--alternative-secret-annotation",
		"--auto-annotation", "--configmap-auto-annotation", "--secret-auto-annotation", "--auto-search-annotation",
		"--search-match-annotation", "--configmap-annotation", "--secret-annotation", "--ignore-annotation",
		"--pause-deployment-annotation", "--pause-deployment-time-annotation", "--ignored-workload-types",
		"--namespaces-to-ignore", "--namespace-selector", "--resource-label-selector", "--resources-to-ignore", "--ignore-secret-types",
		"--rollout-timeout", "--reload-window", "--min-reload-interval", "--is-Argo-Rollouts", "--pprof-addr"} {
		checks[f] = flagValue(f)
	}
	return checks
}

// probes stand for "any value" where a row says no value is refused (or none accepted).
var probes = []string{"", "  ", "Not a value, at all!"}

func TestEveryDocumentedValueExampleParsesAsTheDocsSay(t *testing.T) {
	checks := valueChecks()
	for _, r := range readValuesDoc(t) {
		for _, key := range r.keys {
			check, known := checks[key]
			if len(r.keys) > 1 || strings.HasPrefix(r.section, "Boolean") {
				check, known = flagValue(key), true
			}
			t.Run(key, func(t *testing.T) {
				if !known {
					t.Fatalf("%s:%d: no check for %s in valueChecks", valuesDocPath, r.line, key)
				}
				if len(r.accepted)+len(r.refused) == 0 {
					t.Fatalf("%s:%d: no example at all", valuesDocPath, r.line)
				}
				if check == nil {
					if r.refused != nil {
						t.Fatalf("%s:%d: examples refused, but nothing in reach reads %s: its refused column must be —", valuesDocPath, r.line, key)
					}
					t.Logf("%s is written and not parsed in reach of this test: its accepted examples show what is written", key)
					return
				}
				accepted, refused := r.accepted, r.refused
				if accepted == nil {
					refused = append(slices.Clip(refused), probes...) // "—": no value is taken
				}
				if refused == nil {
					accepted = append(slices.Clip(accepted), probes...) // "—": any value is taken
				}
				for _, v := range accepted {
					t.Run("accepted "+strconv.Quote(v), func(t *testing.T) {
						if err := check(v); err != nil {
							t.Errorf("%s:%d says %q is accepted; the code refuses it: %v", valuesDocPath, r.line, v, err)
						}
					})
				}
				for _, v := range refused {
					t.Run("refused "+strconv.Quote(v), func(t *testing.T) {
						if check(v) == nil {
							t.Errorf("%s:%d says %q is refused; the code accepts it", valuesDocPath, r.line, v)
						}
					})
				}
			})
		}
	}
}

// annotationKeysInCode are the annotation keys the code names: those of DefaultAnnotations, and
// every string literal in the module's non-test Go files that has the form of a reloader key
// ("reloader/..." or "...reloader.stakater.com/..."), unexported constants of other packages
// included.
func annotationKeysInCode(t *testing.T) map[string]string {
	t.Helper()
	keys := map[string]string{}
	def := reflect.ValueOf(policy.DefaultAnnotations())
	for i := range def.NumField() {
		if f := def.Field(i); f.Kind() == reflect.String && f.String() != "" {
			keys[f.String()] = "policy.DefaultAnnotations()." + def.Type().Field(i).Name
		}
	}
	keyForm := regexp.MustCompile(`^(reloader/[a-z][a-z0-9-]*|([a-z0-9-]+\.)*reloader\.stakater\.com/[a-z][a-z0-9-]*)$`)
	fset := token.NewFileSet()
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "../.." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && keyForm.MatchString(s) {
				if _, seen := keys[s]; !seen {
					keys[s] = fset.Position(lit.Pos()).String()
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// flagsInCode are the flags of Flags by name, and whether each is a boolean; --help and
// --version act on their own and take no documented value.
func flagsInCode(t *testing.T) map[string]bool {
	t.Helper()
	var c Flags
	p, err := kong.New(&c, ParserOptions("test")...)
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]bool{}
	for _, f := range p.Model.Flags {
		if f.Name != "help" && f.Name != "version" {
			flags["--"+f.Name] = f.IsBool()
		}
	}
	return flags
}

func TestEveryAnnotationAndFlagHasExactlyOneValuesRow(t *testing.T) {
	annotations, flags := annotationKeysInCode(t), flagsInCode(t)
	if len(annotations) < 20 || len(flags) < 40 {
		t.Fatalf("found %d annotation keys and %d flags in the code: the search is broken", len(annotations), len(flags))
	}
	rows := map[string][]int{}
	anchors := map[string]string{}
	for _, r := range readValuesDoc(t) {
		for _, key := range r.keys {
			rows[key] = append(rows[key], r.line)
			isBool, isFlag := flags[key]
			_, isAnnotation := annotations[key]
			switch {
			case !isFlag && !isAnnotation:
				t.Errorf("%s:%d: %s is neither an annotation the code names nor a flag", valuesDocPath, r.line, key)
			case isFlag && isBool != strings.HasPrefix(r.section, "Boolean"):
				t.Errorf("%s:%d: %s is in section %q, but it is a boolean flag: %v", valuesDocPath, r.line, key, r.section, isBool)
			case isAnnotation && !strings.HasPrefix(r.section, "Annotations"):
				t.Errorf("%s:%d: annotation %s is in section %q", valuesDocPath, r.line, key, r.section)
			}
		}
		if r.anchor == "" {
			continue
		}
		if want := anchorOf(r.keys[0]); r.anchor != want {
			t.Errorf("%s:%d: %s has anchor %q, want %q", valuesDocPath, r.line, r.keys[0], r.anchor, want)
		}
		if other, dup := anchors[r.anchor]; dup {
			t.Errorf("%s:%d: anchor %q of %s is also %s's", valuesDocPath, r.line, r.anchor, r.keys[0], other)
		}
		anchors[r.anchor] = r.keys[0]
	}
	for key, where := range annotations {
		if len(rows[key]) != 1 {
			t.Errorf("annotation %s (%s) has %d rows in %s %v, want 1", key, where, len(rows[key]), valuesDocPath, rows[key])
		}
	}
	for flag := range flags {
		if len(rows[flag]) != 1 {
			t.Errorf("flag %s has %d rows in %s %v, want 1", flag, len(rows[flag]), valuesDocPath, rows[flag])
		}
	}
	checks := valueChecks()
	for key := range checks {
		if len(rows[key]) == 0 {
			t.Errorf("valueChecks has %s, which %s has no row for", key, valuesDocPath)
		}
	}
}

// TestLinksToValuesRowsResolve keeps the links the other pages make to values.md's rows (and
// the page's own) pointing at a row or heading that exists.
func TestLinksToValuesRowsResolve(t *testing.T) {
	targets := map[string]bool{}
	for _, r := range readValuesDoc(t) {
		if r.anchor != "" {
			targets[r.anchor] = true
		}
	}
	doc, err := os.ReadFile(valuesDocPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			targets[anchorOf(strings.TrimLeft(h, "#"))] = true
		}
	}
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	links := 0
	for _, page := range append(pages, "../../README.md") {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		own := filepath.Base(page) == "values.md"
		for _, m := range linkFrag.FindAllStringSubmatch(string(b), -1) {
			if m[1] == "" && !own {
				continue // a link within another page
			}
			links++
			if !targets[m[2]] {
				t.Errorf("%s links to values.md#%s, which is no row or heading", page, m[2])
			}
		}
	}
	if links == 0 {
		t.Error("no page links to values.md's rows")
	}
}
