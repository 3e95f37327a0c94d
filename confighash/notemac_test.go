package confighash

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A note's MAC verifies for its key, purpose and bytes only; a MAC naming another key says so,
// and one that is not a MAC is no key's.
func TestANoteMACVerifiesOnlyForItsKeyPurposeAndBytes(t *testing.T) {
	key, _ := NewKey(bytes.Repeat([]byte{1}, MinKeyLen))
	other, _ := NewKey(bytes.Repeat([]byte{2}, MinKeyLen))
	msg := []byte("ns_job\x00{}")
	mac := key.NoteMAC("job-recreation", msg)
	if !strings.HasPrefix(mac, key.ID()+"-") || len(mac) != len(key.ID())+1+64 {
		t.Fatalf("MAC %q, want <key id>-<64 hex>", mac)
	}
	for _, tc := range []struct {
		name           string
		key            Key
		purpose        string
		msg            []byte
		mac            string
		ok, otherKeyed bool
	}{
		{"as made", key, "job-recreation", msg, mac, true, false},
		{"other bytes", key, "job-recreation", []byte("ns_job\x00{ }"), mac, false, false},
		{"other purpose", key, "other", msg, mac, false, false},
		{"other key", other, "job-recreation", msg, mac, false, true},
		{"not hex", key, "job-recreation", msg, key.ID() + "-" + strings.Repeat("g", 64), false, false},
		{"short", key, "job-recreation", msg, mac[:len(mac)-2], false, false},
		{"empty", key, "job-recreation", msg, "", false, false},
		{"a content hash", key, "job-recreation", msg, key.Secret(&corev1.Secret{}), false, false},
	} {
		ok, otherKeyed := tc.key.VerifyNote(tc.purpose, tc.msg, tc.mac)
		if ok != tc.ok || otherKeyed != tc.otherKeyed {
			t.Errorf("%s: VerifyNote = %v, %v; want %v, %v", tc.name, ok, otherKeyed, tc.ok, tc.otherKeyed)
		}
	}
}
