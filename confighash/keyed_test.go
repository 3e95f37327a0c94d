package confighash

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// testSecret is 32 bytes of 'k': the key of the values computed independently below.
var testSecret = []byte(strings.Repeat("k", 32))

func testKey(t testing.TB, secret []byte) Key {
	t.Helper()
	k, err := NewKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func secret(data map[string]string) *corev1.Secret {
	s := &corev1.Secret{Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestKeyedHashIsTheDocumentedForm(t *testing.T) {
	k := testKey(t, testSecret)
	// printf 'reloader hash key id\0kkkk…(32)' | sha1sum
	if got := k.ID(); got != "2b39b88d" {
		t.Fatalf("key id %s, want 2b39b88d", got)
	}
	// printf 'b\0\0\0\0\0\0\0\2pw\0\0\0\0\0\0\0\6s3cret' | openssl dgst -sha1 -hmac kkkk…(32)
	const want = "hmac-2b39b88d-d6977694a4bafa99d117193180cd6c0ddaa384ae"
	if got := k.Secret(secret(map[string]string{"pw": "s3cret"})); got != want {
		t.Fatalf("keyed hash %s, want %s", got, want)
	}
	// A single key's sum is the HMAC of the same entry, so here it equals the whole hash.
	if got := k.KeyValue(k.SecretKeys(secret(map[string]string{"pw": "s3cret", "user": "u"})), "pw"); got != want {
		t.Fatalf("keyed per-key value %s, want %s", got, want)
	}
}

func TestKeyedHashesHideTheContent(t *testing.T) {
	k, other := testKey(t, testSecret), testKey(t, []byte(strings.Repeat("o", 32)))
	s := secret(map[string]string{"pw": "s3cret"})
	tests := []struct {
		name  string
		a, b  string
		equal bool
	}{
		{"same key, same content", k.Secret(s), k.Secret(secret(map[string]string{"pw": "s3cret"})), true},
		{"same key, other content", k.Secret(s), k.Secret(secret(map[string]string{"pw": "s3cre7"})), false},
		{"other key, same content", k.Secret(s), other.Secret(s), false},
		{"keyed sum is not the plain sum", SumOf(k.Secret(s)), Secret(s), false},
		{"keyed per-key value is not the plain one", SumOf(k.KeyValue(k.SecretKeys(s), "pw")), KeyValue(SecretKeys(s), "pw"), false},
		{"keyed absent key is not the plain one", SumOf(k.KeyValue(k.SecretKeys(s), "nope")), KeyValue(SecretKeys(s), "nope"), false},
		{"keyed subset is not the plain one", SumOf(k.Subset(k.SecretKeys(s), []string{"pw"})), Subset(SecretKeys(s), []string{"pw"}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.a == tt.b) != tt.equal {
				t.Fatalf("%s and %s: equal = %v, want %v", tt.a, tt.b, tt.a == tt.b, tt.equal)
			}
		})
	}
}

func TestKeyedSubsetIgnoresOtherKeys(t *testing.T) {
	k := testKey(t, testSecret)
	before := k.SecretKeys(secret(map[string]string{"x": "1", "y": "1"}))
	tests := []struct {
		name    string
		after   map[string]string
		keys    []string
		changed bool
	}{
		{"other key changed", map[string]string{"x": "1", "y": "2"}, []string{"x"}, false},
		{"used key changed", map[string]string{"x": "2", "y": "1"}, []string{"x"}, true},
		{"used key removed", map[string]string{"y": "1"}, []string{"x"}, true},
		{"key order does not matter", map[string]string{"x": "1", "y": "1"}, []string{"y", "x"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			was, now := k.Subset(before, tt.keys), k.Subset(k.SecretKeys(secret(tt.after)), tt.keys)
			if (was != now) != tt.changed {
				t.Fatalf("subset changed = %v, want %v", was != now, tt.changed)
			}
			if _, ok := KeyIDOf(now); !ok {
				t.Fatalf("subset %q is not a keyed value", now)
			}
		})
	}
}

func TestNewKeyRefusesShortKeys(t *testing.T) {
	for _, n := range []int{0, 1, MinKeyLen - 1} {
		if _, err := NewKey(make([]byte, n)); err == nil {
			t.Errorf("NewKey accepted a %d-byte key", n)
		}
	}
}

func TestAKeyNeverPrintsItsSecret(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789ABCDEF")
	k := testKey(t, secret)
	out := fmt.Sprintf("%v %+v %#v %s %q", k, k, k, k, k)
	for _, leak := range []string{string(secret), hex.EncodeToString(secret), "0123"} {
		if strings.Contains(out, leak) {
			t.Fatalf("printing a key shows %q: %s", leak, out)
		}
	}
	if !strings.Contains(out, k.ID()) {
		t.Fatalf("printing a key should name its id: %s", out)
	}
}

func TestValueForms(t *testing.T) {
	const plain = "3f7a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a"
	tests := []struct {
		v      string
		valid  bool
		keyed  bool
		keyID  string
		sumOfV string
	}{
		{plain, true, false, "", plain},
		{"hmac-2b39b88d-" + plain, true, true, "2b39b88d", plain},
		{"", false, false, "", ""},
		{strings.ToUpper(plain), false, false, "", strings.ToUpper(plain)},
		{plain + "0", false, false, "", plain + "0"},
		{"hmac-2b39b88d-" + plain + "0", false, false, "", "hmac-2b39b88d-" + plain + "0"},
		{"hmac-2b39b88d-" + plain[1:], false, false, "", "hmac-2b39b88d-" + plain[1:]},
		{"hmac-2B39b88d-" + plain, false, false, "", "hmac-2B39b88d-" + plain},
		{"hmac-2b39b88d_" + plain, false, false, "", "hmac-2b39b88d_" + plain},
		{"hmac-2b39b88-d" + plain, false, false, "", "hmac-2b39b88-d" + plain},
		{"HMAC-2b39b88d-" + plain, false, false, "", "HMAC-2b39b88d-" + plain},
		{"hmac-2b39b88d-" + strings.ToUpper(plain), false, false, "", "hmac-2b39b88d-" + strings.ToUpper(plain)},
		{"deleted", false, false, "", "deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.v, func(t *testing.T) {
			if err := ParseValue(tt.v); (err == nil) != tt.valid {
				t.Errorf("ParseValue = %v, want valid=%v", err, tt.valid)
			}
			id, ok := KeyIDOf(tt.v)
			if ok != tt.keyed || id != tt.keyID && ok {
				t.Errorf("KeyIDOf = %q, %v; want %q, %v", id, ok, tt.keyID, tt.keyed)
			}
			if IsPlain(tt.v) != (tt.valid && !tt.keyed) {
				t.Errorf("IsPlain = %v", IsPlain(tt.v))
			}
			if got := SumOf(tt.v); got != tt.sumOfV {
				t.Errorf("SumOf = %q, want %q", got, tt.sumOfV)
			}
		})
	}
}

// FuzzParseValue checks that no string crashes the value parser, that every accepted value is
// one of the two exact forms, and that the parts of a keyed value make it up again.
func FuzzParseValue(f *testing.F) {
	k := testKey(f, testSecret)
	f.Add(k.Secret(secret(map[string]string{"pw": "s3cret"})))
	f.Add(Secret(secret(map[string]string{"pw": "s3cret"})))
	f.Add("hmac-2b39b88d-")
	f.Add("hmac-zzzzzzzz-3f7a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a")
	f.Fuzz(func(t *testing.T, v string) {
		err := ParseValue(v)
		id, keyed := KeyIDOf(v)
		if (err == nil) != (IsPlain(v) || keyed) {
			t.Fatalf("ParseValue(%q) = %v, but IsPlain = %v and keyed = %v", v, err, IsPlain(v), keyed)
		}
		if IsPlain(v) && keyed {
			t.Fatalf("%q is both plain and keyed", v)
		}
		if keyed && (len(v) != KeyedLen || "hmac-"+id+"-"+SumOf(v) != v || !IsPlain(SumOf(v))) {
			t.Fatalf("keyed %q does not split into hmac-%s-%s", v, id, SumOf(v))
		}
		if !keyed && SumOf(v) != v {
			t.Fatalf("SumOf(%q) = %q, want the value itself", v, SumOf(v))
		}
	})
}
