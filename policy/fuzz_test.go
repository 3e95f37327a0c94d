package policy

import (
	"regexp"
	"strings"
	"testing"
)

// FuzzAnnotationValues: any value of the boolean and list annotations parses without panicking;
// a boolean is true only for "true", a malformed one is reported, and every non-empty name of a
// list is named while an empty one is reported.
func FuzzAnnotationValues(f *testing.F) {
	for _, s := range []string{"true", "false", "True", "yes please", "", "a,b", " a , b ", "a,,b", ",", "a\x00b", "ä,ö"} {
		f.Add(s)
	}
	a := DefaultAnnotations()
	f.Fuzz(func(t *testing.T, v string) {
		p := a.Of(map[string]string{a.Auto: v, a.ConfigMap: v}, nil)
		if p.auto != (v == "true") {
			t.Fatalf("auto=%q parsed as %v", v, p.auto)
		}
		wantProblems := 0
		if v != "true" && v != "false" {
			wantProblems++
		}
		named := map[string]bool{}
		for _, r := range p.Named() {
			named[r.Name] = true
		}
		for _, n := range strings.Split(v, ",") {
			switch n = strings.TrimSpace(n); {
			case n == "":
				wantProblems++
			case !named[n]:
				t.Fatalf("name %q of %q is not named", n, v)
			}
		}
		if len(p.Problems) != wantProblems {
			t.Fatalf("value %q: %d problems %q, want %d", v, len(p.Problems), p.Problems, wantProblems)
		}
	})
}

var stakaterName = regexp.MustCompile(`^STAKATER_[A-Z0-9_]*_(CONFIGMAP|SECRET)$`)

// FuzzStakaterVar: any config name gives a valid variable in stakater's form, without runs of '_'
// in the part made from the name except one before the suffix.
func FuzzStakaterVar(f *testing.F) {
	for _, s := range []string{"app-config", "app--config", "-app", "x-", "db.creds", "", "a..b--c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		for _, kind := range []string{KindConfigMap, KindSecret} {
			v := StakaterVar(ConfigRef{Kind: kind, Name: name})
			if !stakaterName.MatchString(v) {
				t.Fatalf("StakaterVar(%q) = %q", name, v)
			}
			middle := strings.TrimSuffix(strings.TrimPrefix(v, "STAKATER_"), "_"+strings.ToUpper(kind))
			if strings.Contains(strings.TrimSuffix(middle, "_"), "__") || strings.HasPrefix(middle, "_") {
				t.Fatalf("StakaterVar(%q) = %q: a run of '_' from the name", name, v)
			}
		}
	})
}
