package confighash

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// The expected values are SHA1s of the strings Collaborne's calculateHash feeds its hash, written
// out by hand from its source (hash.ts: "key=value" per Object.entries, no separator).
func TestCollaborneHashes(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"one key", CollaborneConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "A"}}), sha1Hex("v=A")},
		{"byte order, no separator", CollaborneConfigMap(&corev1.ConfigMap{Data: map[string]string{"b": "2", "a": "1", "B": "3"}}), sha1Hex("B=3a=1b=2")},
		{"array-index keys first, numerically", CollaborneConfigMap(&corev1.ConfigMap{Data: map[string]string{"x": "1", "10": "a", "2": "b", "02": "c"}}), sha1Hex("2=b10=a02=cx=1")},
		{"binaryData does not count", CollaborneConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "A"}, BinaryData: map[string][]byte{"z": {1}}}), sha1Hex("v=A")},
		{"empty", CollaborneConfigMap(&corev1.ConfigMap{}), sha1Hex("")},
		{"a Secret's values base64", CollaborneSecret(&corev1.Secret{Data: map[string][]byte{"password": []byte("hunter2")}}), sha1Hex("password=aHVudGVyMg==")},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, tc.got, tc.want)
		}
	}
}

// The buffer encodes 384 bytes at a time: values shorter, as long and longer than a chunk, at
// every remainder of 3, must hash as their encoded string does.
func TestBase64ThroughTheBufferHashesAsTheEncodedString(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 4, 383, 384, 385, 386, 767, 768, 769, 10_000} {
		v := make([]byte, n)
		for i := range v {
			v[i] = byte(i*7 + n)
		}
		h := newHasher()
		h.writeBase64(v)
		if got, want := hex.EncodeToString(h.Sum(nil)), sha1Hex(base64.StdEncoding.EncodeToString(v)); got != want {
			t.Errorf("%d bytes: %s, want %s", n, got, want)
		}
	}
}
