package policy

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The seed corpora are in testdata/fuzz/<FuzzName>/; `go test` runs each of them as a test.

// FuzzAnnotationValues: any value of the boolean and list annotations parses without panicking,
// wherever it is set (the workload, its pod template, an alternative key); a boolean reads as
// strconv.ParseBool reads it, as stakater's does ("True" and "1" are true, "yes" is reported as
// malformed and read as false); every non-empty, space-trimmed item of a list that is a valid
// name is named literally for its kind only, any other item is a pattern (anchored "^item$") or,
// if it does not compile, reported; each empty name is reported. A value on the workload hides
// the pod template's.
func FuzzAnnotationValues(f *testing.F) {
	a := DefaultAnnotations()
	a.AlternativeSecret = []string{"example.com/secrets"}
	f.Fuzz(func(t *testing.T, v string) {
		onWorkload := map[string]string{a.Auto: v, a.ConfigMap: v, a.AlternativeSecret[0]: v}
		p := a.Of(onWorkload, map[string]string{a.Auto: "true", a.ConfigMap: "hidden"})
		b, err := strconv.ParseBool(v)
		if p.auto != (err == nil && b) {
			t.Fatalf("auto=%q parsed as %v", v, p.auto)
		}
		wantProblems := 0
		if err != nil {
			wantProblems++
		}
		named := map[ConfigRef]bool{}
		for _, r := range p.Named() {
			named[r] = true
		}
		want := map[ConfigRef]bool{}
		for _, n := range strings.Split(v, ",") {
			n = strings.TrimSpace(n)
			switch {
			case n == "":
				wantProblems += 2 // once under the ConfigMap key, once under the alternative Secret key
			case len(validation.IsDNS1123Subdomain(n)) == 0:
				want[ConfigRef{KindConfigMap, n}], want[ConfigRef{KindSecret, n}] = true, true
			default:
				re, err := regexp.Compile("^" + n + "$")
				if err != nil {
					wantProblems += 2
					continue
				}
				if probe := "probe-name"; re.MatchString(probe) && !p.NamedBy(ConfigRef{KindSecret, probe}) {
					t.Fatalf("pattern %q matches %q, but NamedBy says no", n, probe)
				}
			}
		}
		if !maps.Equal(named, want) {
			t.Fatalf("value %q names %v, want %v", v, p.Named(), want)
		}
		if len(p.Problems) != wantProblems {
			t.Fatalf("value %q: %d problems %q, want %d", v, len(p.Problems), p.Problems, wantProblems)
		}
		// The same value on the pod template alone reads the same.
		fromTemplate := a.Of(nil, onWorkload)
		if fromTemplate.auto != p.auto || !slices.Equal(fromTemplate.Named(), p.Named()) || !slices.Equal(fromTemplate.Problems, p.Problems) {
			t.Fatalf("value %q reads differently on the pod template: %+v vs %+v", v, fromTemplate, p)
		}
	})
}

// FuzzAppliedHashesAnnotation: any value of the hashes annotation, mangled JSON and "null"
// included, is read without panicking (a mangled one as empty), and the annotations strategy
// still reloads without panicking: the value it writes holds every hash read plus the change.
func FuzzAppliedHashesAnnotation(f *testing.F) {
	r := ConfigRef{KindConfigMap, "app-config"}
	f.Fuzz(func(t *testing.T, v string) {
		tmpl := &corev1.PodTemplateSpec{}
		tmpl.Annotations = map[string]string{hashesAnnotation: v}
		tmpl.Spec.Containers = []corev1.Container{{Name: "app"}}
		before := AppliedHashes(tmpl.Annotations)
		var decoded map[string]string
		if err := json.Unmarshal([]byte(v), &decoded); err != nil && len(before) > 0 {
			t.Fatalf("mangled hashes %q (%v) read as %v, want empty", v, err, before)
		}
		const hash = "0123456789abcdef0123456789abcdef01234567"
		ops, err := AnnotationOps("ns", tmpl, []Change{{Ref: r, Value: hash}}, time.Unix(0, 0))
		if err != nil {
			t.Fatalf("hashes %q: %v", v, err)
		}
		if before[hashKey(r)] == hash {
			if ops != nil {
				t.Fatalf("hashes %q already hold the change, yet ops %v", v, ops)
			}
			return
		}
		var written string
		for _, op := range ops {
			if op.Path == pointer("spec", "template", "metadata", "annotations", hashesAnnotation) {
				written = op.Value.(string)
			}
		}
		after := AppliedHashes(map[string]string{hashesAnnotation: written})
		want := maps.Clone(before)
		want[hashKey(r)] = hash
		if !maps.Equal(after, want) {
			t.Fatalf("hashes %q: wrote %q, which reads %v, want %v", v, written, after, want)
		}
	})
}

var stakaterName = regexp.MustCompile(`^STAKATER_[A-Z0-9_]*_(CONFIGMAP|SECRET)$`)

// FuzzStakaterVar: any config name gives a valid variable in stakater's form, without runs of '_'
// in the part made from the name except one before the suffix.
func FuzzStakaterVar(f *testing.F) {
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

// configName turns fuzz input into a candidate config name: lower case, every byte outside
// [a-z0-9.-] made '-', at most 253 bytes. The caller still checks it is a DNS subdomain.
func configName(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			b[i] = '-'
		}
	}
	return string(b[:min(len(b), validation.DNS1123SubdomainMaxLength)])
}

// FuzzEnvVarName: for any config name the API server accepts (a DNS-1123 subdomain), EnvVarName
// is a valid strict (C-identifier-like) env var name, the same on every call, and injective:
// two distinct refs (another name, or the same name of the other kind) never share a variable.
func FuzzEnvVarName(f *testing.F) {
	f.Fuzz(func(t *testing.T, a, b string) {
		na, nb := configName(a), configName(b)
		if len(validation.IsDNS1123Subdomain(na)) > 0 || len(validation.IsDNS1123Subdomain(nb)) > 0 {
			return // not a name a config can have
		}
		var refs []ConfigRef
		for _, kind := range []string{KindConfigMap, KindSecret} {
			refs = append(refs, ConfigRef{kind, na}, ConfigRef{kind, nb})
		}
		for i, x := range refs {
			v := EnvVarName(x)
			if errs := validation.IsEnvVarName(v); len(errs) > 0 {
				t.Fatalf("EnvVarName(%v) = %q, not a valid env var name: %v", x, v, errs)
			}
			if again := EnvVarName(x); again != v {
				t.Fatalf("EnvVarName(%v) = %q, then %q", x, v, again)
			}
			for _, y := range refs[i+1:] {
				if x != y && EnvVarName(y) == v {
					t.Fatalf("EnvVarName(%v) = EnvVarName(%v) = %q", x, y, v)
				}
			}
		}
	})
}
