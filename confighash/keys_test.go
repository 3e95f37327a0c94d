package confighash

import (
	"crypto/sha1"
	"encoding/hex"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

func TestSubsetIgnoresOtherKeys(t *testing.T) {
	before := ConfigMapKeys(cm(map[string]string{"x": "1", "y": "1"}, nil))
	tests := []struct {
		name    string
		after   *corev1.ConfigMap
		keys    []string
		changed bool
	}{
		{"other key changed", cm(map[string]string{"x": "1", "y": "2"}, nil), []string{"x"}, false},
		{"used key changed", cm(map[string]string{"x": "2", "y": "1"}, nil), []string{"x"}, true},
		{"used key removed", cm(map[string]string{"y": "1"}, nil), []string{"x"}, true},
		{"key order does not matter", cm(map[string]string{"x": "1", "y": "1"}, nil), []string{"y", "x"}, false},
		{"value moved to binaryData", cm(map[string]string{"y": "1"}, map[string][]byte{"x": []byte("1")}), []string{"x"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			was := Subset(before, tt.keys)
			now := Subset(ConfigMapKeys(tt.after), tt.keys)
			if (was != now) != tt.changed {
				t.Fatalf("subset hash changed = %v, want %v", was != now, tt.changed)
			}
		})
	}
}

func TestStakaterHashMatchesItsDocumentedForm(t *testing.T) {
	sum := func(s string) string { h := sha1.Sum([]byte(s)); return hex.EncodeToString(h[:]) }
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"configmap pairs sorted and joined", StakaterConfigMap(cm(map[string]string{"b": "2", "a": "1"}, nil)), sum("a=1;b=2")},
		{"binaryData base64", StakaterConfigMap(cm(nil, map[string][]byte{"k": {0xff}})), sum("k=/w==")},
		{"secret values decoded", StakaterSecret(&corev1.Secret{Data: map[string][]byte{"pw": []byte("s3cret")}}), sum("pw=s3cret")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Fatalf("hash = %s, want %s", tt.got, tt.want)
			}
		})
	}
}

func TestKeyValueTellsAbsentFromPresentKeys(t *testing.T) {
	sums := ConfigMapKeys(&corev1.ConfigMap{Data: map[string]string{"a": "1"}})
	present, absent := KeyValue(sums, "a"), KeyValue(sums, "b")
	if present == absent || len(present) != 40 || len(absent) != 40 {
		t.Fatalf("present %q, absent %q: want two distinct 40-hex values", present, absent)
	}
	if again := KeyValue(ConfigMapKeys(&corev1.ConfigMap{Data: map[string]string{"a": "2"}}), "b"); again != absent {
		t.Fatalf("an absent key's value changed with another key: %q → %q", absent, again)
	}
	if changed := KeyValue(ConfigMapKeys(&corev1.ConfigMap{Data: map[string]string{"a": "2"}}), "a"); changed == present {
		t.Fatal("a changed key kept its value")
	}
}

// Configs kept for long share one copy of each key name: two ConfigMaps decoded apart, and a
// Secret, hold the same bytes for "config.yaml".
func TestKeySumsOfDifferentConfigsShareTheirKeyNames(t *testing.T) {
	name := func() string { return string([]byte("config.yaml")) } // a fresh copy, as a decode makes
	a := ConfigMapKeys(&corev1.ConfigMap{Data: map[string]string{name(): "a"}})
	b := ConfigMapKeys(&corev1.ConfigMap{Data: map[string]string{name(): "b"}})
	s := SecretKeys(&corev1.Secret{Data: map[string][]byte{name(): []byte("s")}})
	if a[0].Key() != "config.yaml" || a[0].Sum == b[0].Sum {
		t.Fatalf("sums %q %x and %x: want config.yaml's, different for different values", a[0].Key(), a[0].Sum, b[0].Sum)
	}
	if unsafe.StringData(a[0].Key()) != unsafe.StringData(b[0].Key()) || unsafe.StringData(a[0].Key()) != unsafe.StringData(s[0].Key()) {
		t.Error("the sums of two configs keep two copies of the same key name")
	}
}
