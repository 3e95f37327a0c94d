package reloader

import (
	"slices"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTheIndexOfDependentsFollowsEachWorkloadsKeys(t *testing.T) {
	a, b, p := key{"ConfigMap", "ns", "a"}, key{"ConfigMap", "ns", "b"}, patternKey("ConfigMap", "ns")
	d := NewDependents()
	d.Move("ns/w1", nil, []key{a, b})
	d.Move("ns/w2", nil, []key{a, p})
	if got := d.Of(a); !slices.Equal(got, []string{"ns/w1", "ns/w2"}) {
		t.Fatalf("a's workloads %v, want both", got)
	}
	d.Move("ns/w1", []key{a, b}, []key{a, b}) // a status update
	d.Move("ns/w1", []key{a, b}, []key{b})    // stopped reading a
	if got := d.Of(a); !slices.Equal(got, []string{"ns/w2"}) {
		t.Errorf("a's workloads %v after w1 stopped reading it, want [ns/w2]", got)
	}
	if !d.Any(b) || !d.Any(p) || d.Any(key{"Secret", "ns", "a"}) {
		t.Errorf("any: b %v, pattern %v, a Secret of a's name %v; want true, true, false", d.Any(b), d.Any(p), d.Any(key{"Secret", "ns", "a"}))
	}
	if elsewhere := (key{"ConfigMap", "other", "b"}); d.Any(elsewhere) || d.Of(elsewhere) != nil {
		t.Errorf("b's name in another namespace has workloads %v", d.Of(elsewhere))
	}
	d.Move("ns/w1", []key{b}, nil)
	d.Move("ns/w2", []key{a, p}, nil)
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
	a := key{"ConfigMap", "ns", "a"}
	d := NewDependents()
	d.Move("ns/w", nil, []key{a, a})
	if got := d.Of(a); !slices.Equal(got, []string{"ns/w"}) {
		t.Fatalf("a's workloads %v, want [ns/w]", got)
	}
	d.Move("ns/w", []key{a, a}, []key{a})
	d.Move("ns/w", []key{a}, nil)
	if d.Any(a) {
		t.Error("a still names the removed workload")
	}
}

// An update is decisive when it may change what the index holds or a decision: a new
// generation, a reloader annotation, or another object of the same name (deleted and created
// again during a watch gap, which the relist shows as an update at the same generation).
func TestAnUpdateIsDecisiveForANewGenerationAnAnnotationOrAnotherObject(t *testing.T) {
	base := metav1.ObjectMeta{UID: "u1", Generation: 1, Annotations: map[string]string{"other": "x"}}
	for _, tc := range []struct {
		name string
		edit func(*metav1.ObjectMeta)
		want bool
	}{
		{"status only", func(*metav1.ObjectMeta) {}, false},
		{"another annotation", func(m *metav1.ObjectMeta) { m.Annotations = map[string]string{"other": "y"} }, false},
		{"new generation", func(m *metav1.ObjectMeta) { m.Generation = 2 }, true},
		{"reload annotation set", func(m *metav1.ObjectMeta) { m.Annotations = map[string]string{"other": "x", "r": ""} }, true},
		{"recreated", func(m *metav1.ObjectMeta) { m.UID = "u2" }, true},
	} {
		n := *base.DeepCopy()
		tc.edit(&n)
		if got := decisive([]string{"r"}, &base, &n); got != tc.want {
			t.Errorf("%s: decisive %v, want %v", tc.name, got, tc.want)
		}
	}
}
