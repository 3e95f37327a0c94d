package configs

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/policy"
)

// The transform records which declared key of a config's content does not parse, for a
// ConfigMap's data and binary data and a Secret's data, never the value itself; an annotation
// that does not parse is itself the problem, and valid content records none.
func TestTheTransformRecordsWhichDeclaredKeyOfAConfigDoesNotParse(t *testing.T) {
	key, err := confighash.NewKey([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	c := &Records{annotations: policy.DefaultAnnotations(), hashKey: fixedKey{key}}
	meta := func(spec string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "app", Namespace: "team", Annotations: map[string]string{policy.ValidateAnnotation: spec}}
	}
	const secretValue = `{"password": "hunter2"`
	tests := []struct {
		name    string
		obj     any
		invalid string // a part of the problem, "" for none
	}{
		{"valid ConfigMap", &corev1.ConfigMap{ObjectMeta: meta("conf=json"), Data: map[string]string{"conf": `{"a": 1}`}}, ""},
		{"ConfigMap data", &corev1.ConfigMap{ObjectMeta: meta("conf=json"), Data: map[string]string{"conf": `{"a": `}}, "conf"},
		{"ConfigMap binary data", &corev1.ConfigMap{ObjectMeta: meta("bin=yaml"), BinaryData: map[string][]byte{"bin": []byte("a: [")}}, "bin"},
		{"Secret data", &corev1.Secret{ObjectMeta: meta("conf=json"), Data: map[string][]byte{"conf": []byte(secretValue)}}, "conf"},
		{"annotation", &corev1.ConfigMap{ObjectMeta: meta("conf=xml"), Data: map[string]string{"conf": "<a/>"}}, policy.ValidateAnnotation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := c.Transform(tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			got := obj.(*Record).Invalid()
			if tt.invalid == "" && got != "" || tt.invalid != "" && !strings.Contains(got, tt.invalid) {
				t.Errorf("invalid %q, want it to name %q", got, tt.invalid)
			}
			if strings.Contains(got, "hunter2") {
				t.Errorf("invalid %q holds the value", got)
			}
		})
	}
}
