package checker

import (
	"reflect"
	"regexp"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Generator version 8: half the workloads whose reload annotations name their configs name them
// by regular expressions instead (modePattern), drawn from a ninth stream. The reloader finds
// the configs a pattern matches through client-go's namespace index, which it adds to a config
// cache on first use (reloader/caches.go): these workloads are what uses it, mixed with every
// other action and fault of the sequences.

func TestAPatternMatchesTheConfigsItWasMadeOfAndNoOther(t *testing.T) {
	t.Parallel()
	for _, names := range [][]string{{"cm-0"}, {"cm--2"}, {"sec-0"}, {"cm-0", "cm--2"}, {"cm-1", "cm-0", "cm--2"}} {
		p := patternOf(names)
		if len(validation.IsDNS1123Subdomain(p)) == 0 {
			t.Errorf("pattern %q of %v is a valid config name: the reloader would read it as a name", p, names)
		}
		re := regexp.MustCompile("^" + p + "$") // as the reloader anchors it
		for _, c := range slices.Concat(ConfigNames, []string{"cm-00", "xcm-0", "cm-"}) {
			if want := slices.Contains(names, c); re.MatchString(c) != want {
				t.Errorf("pattern %q of %v matches %q: %t, want %t", p, names, c, !want, want)
			}
		}
	}
}

// Version 8 changes only which named workloads name their configs by patterns: each of its
// sequences, patterns read as names, is version 7's.
func TestVersion8NamesConfigsByPatternsAndChangesNothingElse(t *testing.T) {
	t.Parallel()
	patterns := 0
	for seed := range uint64(60) {
		seq := Generate(seed, 8, 40, true)
		for i, a := range seq.Actions {
			if a.Mode == modePattern {
				patterns++
				seq.Actions[i].Mode = modeNamed
			}
		}
		seq.Gen = 7
		if want := Generate(seed, 7, 40, true); !reflect.DeepEqual(seq, want) {
			t.Fatalf("seed %d: version 8, patterns read as names, is not version 7's sequence:\n%s\nwant\n%s", seed, seq, want)
		}
	}
	if patterns < 30 {
		t.Errorf("60 seeds of version 8 name configs by patterns in %d actions, want at least 30", patterns)
	}
}
