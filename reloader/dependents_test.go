package reloader

import (
	"slices"
	"testing"
)

func TestTheIndexOfDependentsFollowsEachWorkloadsKeys(t *testing.T) {
	a, b, p := key{"ConfigMap", "ns", "a"}, key{"ConfigMap", "ns", "b"}, patternKey("ConfigMap", "ns")
	d := newDependents()
	d.set("ns/w1", []key{a, b})
	d.set("ns/w2", []key{a, p})
	if got := d.of(a); !slices.Equal(got, []string{"ns/w1", "ns/w2"}) {
		t.Fatalf("a's workloads %v, want both", got)
	}
	held := d.reads["ns/w1"]
	d.set("ns/w1", []key{a, b}) // a status update
	if &d.reads["ns/w1"][0] != &held[0] {
		t.Error("the same keys set again were replaced: the strings held are duplicated")
	}
	d.set("ns/w1", []key{b}) // stopped reading a
	if got := d.of(a); !slices.Equal(got, []string{"ns/w2"}) {
		t.Errorf("a's workloads %v after w1 stopped reading it, want [ns/w2]", got)
	}
	if !d.any(b) || !d.any(p) || d.any(key{"Secret", "ns", "a"}) {
		t.Errorf("any: b %v, pattern %v, a Secret of a's name %v; want true, true, false", d.any(b), d.any(p), d.any(key{"Secret", "ns", "a"}))
	}
	if got := d.reads["ns/w2"]; !slices.Equal(got, []key{a, p}) {
		t.Errorf("w2's keys %v, want [a pattern]", got)
	}
	d.remove("ns/w1")
	d.remove("ns/w2")
	d.remove("ns/w3") // never indexed
	if len(d.on) != 0 || len(d.reads) != 0 {
		t.Errorf("entries left after every workload was removed: %v, %v", d.on, d.reads)
	}
}

func TestAWorkloadIsIndexedOnceUnderAKeyItReadsTwice(t *testing.T) {
	a := key{"ConfigMap", "ns", "a"}
	d := newDependents()
	d.set("ns/w", []key{a, a})
	if got := d.of(a); !slices.Equal(got, []string{"ns/w"}) {
		t.Fatalf("a's workloads %v, want [ns/w]", got)
	}
	d.set("ns/w", []key{a})
	d.remove("ns/w")
	if d.any(a) {
		t.Error("a still names the removed workload")
	}
}
