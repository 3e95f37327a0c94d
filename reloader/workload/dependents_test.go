package workload

import (
	"slices"
	"testing"
	"unsafe"
)

func TestTheIndexOfDependentsFollowsEachWorkloadsKeys(t *testing.T) {
	a, b := Key{"ConfigMap", "ns", "a"}, Key{"ConfigMap", "ns", "b"}
	p := Key{"ConfigMap", "ns", ""} // a pattern key: no config has an empty name
	d := NewDependents()
	d.Move("ns/w1", nil, []Key{a, b})
	d.Move("ns/w2", nil, []Key{a, p})
	if got := d.Of(a); !slices.Equal(got, []string{"ns/w1", "ns/w2"}) {
		t.Fatalf("a's workloads %v, want both", got)
	}
	d.Move("ns/w1", []Key{a, b}, []Key{a, b}) // a status update
	d.Move("ns/w1", []Key{a, b}, []Key{b})    // stopped reading a
	if got := d.Of(a); !slices.Equal(got, []string{"ns/w2"}) {
		t.Errorf("a's workloads %v after w1 stopped reading it, want [ns/w2]", got)
	}
	if !d.Any(b) || !d.Any(p) || d.Any(Key{"Secret", "ns", "a"}) {
		t.Errorf("any: b %v, pattern %v, a Secret of a's name %v; want true, true, false", d.Any(b), d.Any(p), d.Any(Key{"Secret", "ns", "a"}))
	}
	if elsewhere := (Key{"ConfigMap", "other", "b"}); d.Any(elsewhere) || d.Of(elsewhere) != nil {
		t.Errorf("b's name in another namespace has workloads %v", d.Of(elsewhere))
	}
	d.Move("ns/w1", []Key{b}, nil)
	d.Move("ns/w2", []Key{a, p}, nil)
	if len(d.on) != 0 {
		t.Errorf("entries left after every workload was removed: %v", d.on)
	}
}

// The index keeps an entry per config that has a dependent.
func TestAnIndexKeyTakes32Bytes(t *testing.T) {
	if size := unsafe.Sizeof(indexKey{}); size != 32 {
		t.Errorf("an index key takes %d bytes, want 32", size)
	}
}

func TestAWorkloadIsIndexedOnceUnderAKeyItReadsTwice(t *testing.T) {
	a := Key{"ConfigMap", "ns", "a"}
	d := NewDependents()
	d.Move("ns/w", nil, []Key{a, a})
	if got := d.Of(a); !slices.Equal(got, []string{"ns/w"}) {
		t.Fatalf("a's workloads %v, want [ns/w]", got)
	}
	d.Move("ns/w", []Key{a, a}, []Key{a})
	d.Move("ns/w", []Key{a}, nil)
	if d.Any(a) {
		t.Error("a still names the removed workload")
	}
}
