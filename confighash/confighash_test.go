package confighash

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cm(data map[string]string, bin map[string][]byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{Data: data, BinaryData: bin}
}

func TestConfigMapHashDistinguishesContent(t *testing.T) {
	tests := []struct {
		name string
		a, b *corev1.ConfigMap
	}{
		{"joined pairs are not one value", cm(map[string]string{"a": "1", "b": "2"}, nil), cm(map[string]string{"a": "1;b=2"}, nil)},
		{"key and value boundary", cm(map[string]string{"ab": "c"}, nil), cm(map[string]string{"a": "bc"}, nil)},
		{"data versus binaryData", cm(map[string]string{"a": "1"}, nil), cm(nil, map[string][]byte{"a": []byte("1")})},
		{"changed value", cm(map[string]string{"a": "1"}, nil), cm(map[string]string{"a": "2"}, nil)},
		{"added key", cm(map[string]string{"a": "1"}, nil), cm(map[string]string{"a": "1", "b": ""}, nil)},
		{"empty value versus no key", cm(map[string]string{"a": ""}, nil), cm(nil, nil)},
		{"newline in value", cm(map[string]string{"a": "1\nb=2"}, nil), cm(map[string]string{"a": "1", "b": "2"}, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ConfigMap(tt.a) == ConfigMap(tt.b) {
				t.Fatalf("hash collision: %v and %v both hash to %s", tt.a, tt.b, ConfigMap(tt.a))
			}
		})
	}
}

func TestConfigMapHashIgnoresMetadataAndOrder(t *testing.T) {
	base := cm(map[string]string{"a": "1", "b": "2"}, map[string][]byte{"z": {0, 1}})
	tests := []struct {
		name  string
		other *corev1.ConfigMap
	}{
		{"same content", cm(map[string]string{"b": "2", "a": "1"}, map[string][]byte{"z": {0, 1}})},
		{"labels and annotations", &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"l": "v"}, Annotations: map[string]string{"a": "v"}},
			Data:       map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"z": {0, 1}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := ConfigMap(tt.other), ConfigMap(base); got != want {
				t.Fatalf("hash = %s, want %s", got, want)
			}
		})
	}
}

func TestHashIsDocumentedFormat(t *testing.T) {
	// sha1 of 'd' 00..01 'a' 00..01 '1', computed independently with: printf 'd\0\0\0\0\0\0\0\1a\0\0\0\0\0\0\0\0011' | sha1sum
	const want = "c47c3d9eac5cb0663f6e31b8f34ef1dbd7f59721"
	if got := ConfigMap(cm(map[string]string{"a": "1"}, nil)); got != want {
		t.Fatalf("ConfigMap{a:1} hash = %s, want %s", got, want)
	}
	if got := ConfigMap(cm(nil, nil)); got != "da39a3ee5e6b4b0d3255bfef95601890afd80709" {
		t.Fatalf("empty ConfigMap hash = %s, want the SHA1 of the empty stream", got)
	}
	if ConfigMap(cm(nil, map[string][]byte{"a": []byte("1")})) != Secret(&corev1.Secret{Data: map[string][]byte{"a": []byte("1")}}) {
		t.Fatal("a Secret's data and a ConfigMap's binaryData share the 'b' tag, so equal bytes must hash alike")
	}
}
