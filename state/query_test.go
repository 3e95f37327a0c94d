package state

import "testing"

func TestParseKeyReversesKey(t *testing.T) {
	for _, tt := range []struct{ kind, ns, name string }{
		{"ConfigMap", "", "app-config"},
		{"Secret", "team-a", "db.creds"},
	} {
		kind, ns, name, ok := ParseKey(Key(tt.kind, tt.ns, tt.name))
		if !ok || kind != tt.kind || ns != tt.ns || name != tt.name {
			t.Errorf("ParseKey(Key(%v)) = %q %q %q %v", tt, kind, ns, name, ok)
		}
	}
	for _, k := range []string{KeyOf(Key("ConfigMap", "", "x"), "k"), "other", Key("ConfigMap", "ns", string(make([]byte, 300)))} {
		if _, _, _, ok := ParseKey(k); ok {
			t.Errorf("ParseKey(%q) reported ok", k)
		}
	}
}
