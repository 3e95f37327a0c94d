package reloader

import (
	"slices"
	"testing"
)

func TestTheIndexOfDependentsFollowsEachWorkloadsKeys(t *testing.T) {
	a, b, p := key{"ConfigMap", "ns", "a"}, key{"ConfigMap", "ns", "b"}, patternKey("ConfigMap", "ns")
	d := newDependents()
	d.move("ns/w1", nil, []key{a, b})
	d.move("ns/w2", nil, []key{a, p})
	if got := d.of(a); !slices.Equal(got, []string{"ns/w1", "ns/w2"}) {
		t.Fatalf("a's workloads %v, want both", got)
	}
	d.move("ns/w1", []key{a, b}, []key{a, b}) // a status update
	d.move("ns/w1", []key{a, b}, []key{b})    // stopped reading a
	if got := d.of(a); !slices.Equal(got, []string{"ns/w2"}) {
		t.Errorf("a's workloads %v after w1 stopped reading it, want [ns/w2]", got)
	}
	if !d.any(b) || !d.any(p) || d.any(key{"Secret", "ns", "a"}) {
		t.Errorf("any: b %v, pattern %v, a Secret of a's name %v; want true, true, false", d.any(b), d.any(p), d.any(key{"Secret", "ns", "a"}))
	}
	d.move("ns/w1", []key{b}, nil)
	d.move("ns/w2", []key{a, p}, nil)
	if len(d.on) != 0 {
		t.Errorf("entries left after every workload was removed: %v", d.on)
	}
}

func TestAWorkloadIsIndexedOnceUnderAKeyItReadsTwice(t *testing.T) {
	a := key{"ConfigMap", "ns", "a"}
	d := newDependents()
	d.move("ns/w", nil, []key{a, a})
	if got := d.of(a); !slices.Equal(got, []string{"ns/w"}) {
		t.Fatalf("a's workloads %v, want [ns/w]", got)
	}
	d.move("ns/w", []key{a, a}, []key{a})
	d.move("ns/w", []key{a}, nil)
	if d.any(a) {
		t.Error("a still names the removed workload")
	}
}
