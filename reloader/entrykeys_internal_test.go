package reloader

import (
	"strings"
	"testing"
	"time"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/policy"
)

// The keys of the entries the parts keep in the state, in process: the namespace only in
// all-namespaces mode, never past a ConfigMap key's 253 bytes, and the config kind readable.
func TestTheStateKeysOfHoldsStripsAndPendingReloads(t *testing.T) {
	long := strings.Repeat("w", 240)
	w, r := key{Kind: "Deployment", Namespace: "prod", Name: "web"}, policy.ConfigRef{Kind: policy.KindSecret, Name: "db"}
	for _, tc := range []struct {
		got, want string
	}{
		{entryKeys{single: true}.hold(w, r), "hold.Secret.Deployment_web_db"},
		{entryKeys{}.hold(w, r), "hold.Secret.Deployment_prod_web_db"},
		{entryKeys{}.strip(w, r), "strip.Secret.Deployment_prod_web_db"},
		{entryKeys{single: true}.pending(w), "pending.Deployment_web"},
		{entryKeys{}.pending(w), "pending.Deployment_prod_web"},
	} {
		if tc.got != tc.want {
			t.Errorf("key %q, want %q", tc.got, tc.want)
		}
	}
	for _, k := range []string{
		entryKeys{}.hold(key{Kind: "Deployment", Namespace: "prod", Name: long}, policy.ConfigRef{Kind: policy.KindSecret, Name: long}),
		entryKeys{}.strip(key{Kind: "Deployment", Namespace: "prod", Name: long}, policy.ConfigRef{Kind: policy.KindConfigMap, Name: long}),
		entryKeys{}.pending(key{Kind: "Deployment", Namespace: "prod", Name: long}),
	} {
		if len(k) > maxKeyLen {
			t.Errorf("%q is %d bytes, over a ConfigMap key's limit", k, len(k))
		}
	}
	if got := configKindOf(entryKeys{}.hold(key{Kind: "Deployment", Namespace: "prod", Name: long}, r)); got != policy.KindSecret {
		t.Errorf("the config kind of a hashed hold key is %q, want Secret", got)
	}
}

// What a hold, a strip and a pending entry may hold: a content hash, keyed only for a Secret, or
// pending@<unix seconds>[#<digest>]; and never more than the room the state reserves for it.
func TestTheStateEntriesOfThePartsHoldOnlyTheirValues(t *testing.T) {
	plain, keyed := strings.Repeat("a", 40), "hmac-2b39b88d-"+strings.Repeat("a", 40)
	secret, cm := "hold.Secret.Deployment_web_db", "strip.ConfigMap.Deployment_web_app"
	holds, strips, pending := contentEntries(holdPrefix), contentEntries(stripPrefix), pendingEntries()
	for _, tc := range []struct {
		kind  string
		key   string
		value string
		ok    bool
	}{
		{"hold", secret, keyed, true},
		{"hold", secret, plain, true}, // as versions before keyed hashes wrote it
		{"strip", cm, plain, true},
		{"strip", cm, keyed, false},
		{"hold", secret, "pending@1795000000", false},
		{"pending", "pending.Deployment_web", "pending@1795000000", true},
		{"pending", "pending.Deployment_web", "pending@0", true},
		{"pending", "pending.Deployment_web", "pending@01", false},
		{"pending", "pending.Deployment_web", "pending@+1", false},
		{"pending", "pending.Deployment_web", "pending@253402300800", false},
		{"pending", "pending.Deployment_web", plain, false},
		{"pending", "pending.Deployment_web", "pending@253402300799#0a1b2c3d", true},
		{"pending", "pending.Deployment_web", "pending@1795000000#0a1b2c3", false},
		{"pending", "pending.Deployment_web", "pending@1795000000#0a1b2c3g", false},
		{"pending", "pending.Deployment_web", "pending@1795000000#", false},
	} {
		k := map[string]struct {
			valid  func(k, v string) error
			maxLen func(k string) int
		}{"hold": {holds.Valid, holds.MaxLen}, "strip": {strips.Valid, strips.MaxLen}, "pending": {pending.Valid, pending.MaxLen}}[tc.kind]
		err := k.valid(tc.key, tc.value)
		if (err == nil) != tc.ok {
			t.Errorf("%s %s = %q: %v, want ok %v", tc.kind, tc.key, tc.value, err, tc.ok)
		}
		if err == nil && len(tc.value) > k.maxLen(tc.key) {
			t.Errorf("%s %s = %q is longer than the %d bytes reserved", tc.kind, tc.key, tc.value, k.maxLen(tc.key))
		}
	}
	if holds.MaxLen(cm) != confighash.PlainLen || holds.MaxLen(secret) != confighash.KeyedLen {
		t.Error("a ConfigMap's hold does not reserve a plain hash, or a Secret's a keyed one")
	}
	for _, at := range []time.Time{{}, time.Unix(1795000000, 999), time.Date(20000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		for _, digest := range []string{"", messageDigest("Reload for ConfigMap/app deferred")} {
			v := encodePending(at, digest)
			if pending.Valid("pending.Deployment_web", v) != nil {
				t.Errorf("encodePending(%v, %q) = %q, which does not load back", at, digest, v)
			}
			if _, got := decodePending(v); got != digest {
				t.Errorf("decodePending(%q) gives the digest %q, want %q", v, got, digest)
			}
		}
	}
}
