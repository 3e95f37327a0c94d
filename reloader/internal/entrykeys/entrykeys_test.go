package entrykeys

import (
	"strings"
	"testing"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/workload"
)

// The keys of the entries the parts keep in the state, in process: the namespace only in
// all-namespaces mode, never past a ConfigMap key's 253 bytes, and the config kind readable.
func TestTheStateKeysOfHoldsStripsAndPendingReloads(t *testing.T) {
	long := strings.Repeat("w", 240)
	w, r := workload.Key{Kind: "Deployment", Namespace: "prod", Name: "web"}, policy.ConfigRef{Kind: policy.KindSecret, Name: "db"}
	for _, tc := range []struct {
		got, want string
	}{
		{Names{Single: true}.Hold(w, r), "hold.Secret.Deployment_web_db"},
		{Names{}.Hold(w, r), "hold.Secret.Deployment_prod_web_db"},
		{Names{}.Strip(w, r), "strip.Secret.Deployment_prod_web_db"},
		{Names{Single: true}.Pending(w), "pending.Deployment_web"},
		{Names{}.Pending(w), "pending.Deployment_prod_web"},
	} {
		if tc.got != tc.want {
			t.Errorf("key %q, want %q", tc.got, tc.want)
		}
	}
	for _, k := range []string{
		Names{}.Hold(workload.Key{Kind: "Deployment", Namespace: "prod", Name: long}, policy.ConfigRef{Kind: policy.KindSecret, Name: long}),
		Names{}.Strip(workload.Key{Kind: "Deployment", Namespace: "prod", Name: long}, policy.ConfigRef{Kind: policy.KindConfigMap, Name: long}),
		Names{}.Pending(workload.Key{Kind: "Deployment", Namespace: "prod", Name: long}),
	} {
		if len(k) > maxKeyLen {
			t.Errorf("%q is %d bytes, over a ConfigMap key's limit", k, len(k))
		}
	}
	if got := ConfigKindOf(Names{}.Hold(workload.Key{Kind: "Deployment", Namespace: "prod", Name: long}, r)); got != policy.KindSecret {
		t.Errorf("the config kind of a hashed hold key is %q, want Secret", got)
	}
}

// The keys are a format: a process finds the entries an earlier version wrote under the same
// keys, byte for byte, for every kind of entry, in both modes, short and hashed; and each key
// says its config kind, or none for a workload's own entries.
func TestTheStateKeysOfEveryKindAreTheOnesEarlierVersionsWrote(t *testing.T) {
	long := strings.Repeat("w", 240)
	w := workload.Key{Kind: "Deployment", Namespace: "prod", Name: "web"}
	wl := workload.Key{Kind: "StatefulSet", Namespace: "prod", Name: long}
	c := workload.Key{Kind: policy.KindConfigMap, Namespace: "prod", Name: "app"}
	cl := workload.Key{Kind: policy.KindSecret, Namespace: "prod", Name: long}
	r := policy.ConfigRef{Kind: policy.KindSecret, Name: "db"}
	rl := policy.ConfigRef{Kind: policy.KindConfigMap, Name: long}
	var got []string
	for _, single := range []bool{true, false} {
		e := Names{Single: single}
		got = append(got, e.Config(c), e.Config(cl), e.Pending(w), e.Pending(wl), e.Pause(w), e.Pause(wl),
			e.Hold(w, r), e.Hold(wl, rl), e.Strip(w, r), e.Strip(wl, rl), e.RollbackRead(w, r), e.RollbackRead(wl, rl))
	}
	want := []struct{ key, configKind string }{
		{"v1.ConfigMap_app", "ConfigMap"},
		{"v1.Secret__be2a4e7cd5895947a0828dcf034aac39ee656e31", "Secret"},
		{"pending.Deployment_web", ""},
		{"pending.StatefulSet__be2a4e7cd5895947a0828dcf034aac39ee656e31", ""},
		{"pause.Deployment_web", ""},
		{"pause.StatefulSet__be2a4e7cd5895947a0828dcf034aac39ee656e31", ""},
		{"hold.Secret.Deployment_web_db", "Secret"},
		{"hold.ConfigMap.-765e364fc51ce1a8b925b9518641e3ba308ab79f", "ConfigMap"},
		{"strip.Secret.Deployment_web_db", "Secret"},
		{"strip.ConfigMap.-765e364fc51ce1a8b925b9518641e3ba308ab79f", "ConfigMap"},
		{"rbread.Secret.Deployment_web_db", "Secret"},
		{"rbread.ConfigMap.-765e364fc51ce1a8b925b9518641e3ba308ab79f", "ConfigMap"},
		{"v1.ConfigMap_prod_app", "ConfigMap"},
		{"v1.Secret__439012c168ab490f980703685fb09dfd45ada311", "Secret"},
		{"pending.Deployment_prod_web", ""},
		{"pending.StatefulSet__439012c168ab490f980703685fb09dfd45ada311", ""},
		{"pause.Deployment_prod_web", ""},
		{"pause.StatefulSet__439012c168ab490f980703685fb09dfd45ada311", ""},
		{"hold.Secret.Deployment_prod_web_db", "Secret"},
		{"hold.ConfigMap.-96b5e76faaf8f08b7bd8330cde75417e93d33ab4", "ConfigMap"},
		{"strip.Secret.Deployment_prod_web_db", "Secret"},
		{"strip.ConfigMap.-96b5e76faaf8f08b7bd8330cde75417e93d33ab4", "ConfigMap"},
		{"rbread.Secret.Deployment_prod_web_db", "Secret"},
		{"rbread.ConfigMap.-96b5e76faaf8f08b7bd8330cde75417e93d33ab4", "ConfigMap"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d keys, want %d", len(got), len(want))
	}
	for i, k := range got {
		if k != want[i].key {
			t.Errorf("key %d: %q, want %q", i, k, want[i].key)
		}
		if kind := ConfigKindOf(k); kind != want[i].configKind {
			t.Errorf("the config kind of %q is %q, want %q", k, kind, want[i].configKind)
		}
	}
}

// What a hold and a strip may hold: a content hash, keyed only for a Secret; and never more than
// the room the state reserves for it.
func TestTheContentEntriesHoldOnlyAHashKeyedOnlyForASecret(t *testing.T) {
	plain, keyed := strings.Repeat("a", 40), "hmac-2b39b88d-"+strings.Repeat("a", 40)
	secret, cm := "hold.Secret.Deployment_web_db", "strip.ConfigMap.Deployment_web_app"
	holds, strips := ContentEntries(HoldPrefix), ContentEntries(StripPrefix)
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
	} {
		k := map[string]struct {
			valid  func(k, v string) error
			maxLen func(k string) int
		}{"hold": {holds.Valid, holds.MaxLen}, "strip": {strips.Valid, strips.MaxLen}}[tc.kind]
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
}
