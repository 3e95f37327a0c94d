package reloader

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
