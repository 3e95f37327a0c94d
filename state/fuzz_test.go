package state

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The seed corpora are in testdata/fuzz/<FuzzName>/; `go test` runs each of them as a test
// (FuzzDecodeEntry, in entry_test.go, has one there too).

// FuzzEntryRoundTrip: every entry the store can hold (a live hash, or a tombstone with a hash or
// none, recorded at any time) encodes to a value that decodes to exactly that entry, within the
// bytes a shard reserves for it: decode∘encode is the identity. FuzzDecodeEntry checks the
// other direction.
func FuzzEntryRoundTrip(f *testing.F) {
	f.Fuzz(func(t *testing.T, sum []byte, deleted bool, unixSec, nsec int64) {
		e := Entry{Deleted: deleted}
		if len(sum) > 0 || !deleted {
			var h [20]byte
			copy(h[:], sum)
			e.Hash = hex.EncodeToString(h[:])
		}
		if deleted {
			e.Since = sinceOf(time.Unix(unixSec, nsec))
		}
		v := encodeEntry(e)
		got, err := decodeEntry(v)
		if err != nil || got != e {
			t.Fatalf("decodeEntry(encodeEntry(%+v)) = %+v, %v (value %q)", e, got, err, v)
		}
		if reserve := maxValue(Key("ConfigMap", "ns", "name")); len(v) > reserve {
			t.Fatalf("%+v encodes as %q, longer than the %d bytes reserved", e, v, reserve)
		}
	})
}

// dnsName turns fuzz input into a candidate object name: lower case, every byte outside
// [a-z0-9.-] made '-', at most max bytes. The caller checks it is one.
func dnsName(s string, max int) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			b[i] = '-'
		}
	}
	return string(b[:min(len(b), max)])
}

// FuzzStateKeys: for any kind, namespace, names and data keys the API server accepts, the entry
// keys are keys a ConfigMap accepts (at most 253 bytes of [-._a-zA-Z0-9]); a config key is its
// own config and ParseKey gives back its parts (or, hashed, reports false); a data-key entry maps
// back to its config and is not taken for a config; distinct configs, and distinct data keys of
// one config, get distinct keys.
func FuzzStateKeys(f *testing.F) {
	f.Fuzz(func(t *testing.T, secret bool, namespace, name, name2, dataKey, dataKey2 string) {
		kind := "ConfigMap"
		if secret {
			kind = "Secret"
		}
		ns := dnsName(namespace, validation.DNS1123LabelMaxLength)
		n, n2 := dnsName(name, validation.DNS1123SubdomainMaxLength), dnsName(name2, validation.DNS1123SubdomainMaxLength)
		if ns != "" && len(validation.IsDNS1123Label(ns)) > 0 ||
			len(validation.IsDNS1123Subdomain(n)) > 0 || len(validation.IsDNS1123Subdomain(n2)) > 0 ||
			len(validation.IsConfigMapKey(dataKey)) > 0 || len(validation.IsConfigMapKey(dataKey2)) > 0 {
			return // not what the API server would hand us
		}
		config := Key(kind, ns, n)
		if errs := validation.IsConfigMapKey(config); len(errs) > 0 {
			t.Fatalf("Key(%q, %q, %q) = %q, which a ConfigMap refuses: %v", kind, ns, n, config, errs)
		}
		if ConfigOf(config) != config || !isConfigEntry(config) {
			t.Fatalf("Key(%q, %q, %q) = %q is not a config key: ConfigOf gives %q", kind, ns, n, config, ConfigOf(config))
		}
		hashed := strings.HasPrefix(config, "v1."+kind+"__")
		k, gotNS, gotName, ok := ParseKey(config)
		if ok == hashed || ok && (k != kind || gotNS != ns || gotName != n) {
			t.Fatalf("ParseKey(%q) = %q, %q, %q, %v; want %q, %q, %q, %v", config, k, gotNS, gotName, ok, kind, ns, n, !hashed)
		}
		if n2 != n && Key(kind, ns, n2) == config {
			t.Fatalf("names %q and %q share the key %q", n, n2, config)
		}
		data := KeyOf(config, dataKey)
		if errs := validation.IsConfigMapKey(data); len(errs) > 0 {
			t.Fatalf("KeyOf(%q, %q) = %q, which a ConfigMap refuses: %v", config, dataKey, data, errs)
		}
		if ConfigOf(data) != config || isConfigEntry(data) || !isConfigPrefixed(data) {
			t.Fatalf("KeyOf(%q, %q) = %q: ConfigOf gives %q, isConfigKey %v", config, dataKey, data, ConfigOf(data), isConfigEntry(data))
		}
		if _, _, _, ok := ParseKey(data); ok {
			t.Fatalf("ParseKey(%q) takes a data-key entry for a config", data)
		}
		if dataKey2 != dataKey && KeyOf(config, dataKey2) == data {
			t.Fatalf("data keys %q and %q of %q share the entry key %q", dataKey, dataKey2, config, data)
		}
	})
}

// fakeShards serves the state ConfigMaps from memory, applying merge patches to data as the API
// server does.
type fakeShards map[string]map[string]string

func (f fakeShards) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.ConfigMap, error) {
	data, ok := f[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: maps.Clone(data)}, nil
}

func (f fakeShards) Create(_ context.Context, cm *corev1.ConfigMap, _ metav1.CreateOptions) (*corev1.ConfigMap, error) {
	if _, ok := f[cm.Name]; ok {
		return nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "configmaps"}, cm.Name)
	}
	f[cm.Name] = maps.Clone(cm.Data)
	if f[cm.Name] == nil {
		f[cm.Name] = map[string]string{}
	}
	return cm, nil
}

func (f fakeShards) Patch(_ context.Context, name string, _ types.PatchType, body []byte, _ metav1.PatchOptions, _ ...string) (*corev1.ConfigMap, error) {
	data, ok := f[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	}
	var patch struct{ Data map[string]*string }
	if err := json.Unmarshal(body, &patch); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	for k, v := range patch.Data {
		if v == nil {
			delete(data, k)
		} else {
			data[k] = *v
		}
	}
	return nil, nil
}

// shardData reads fuzz input as a shard's data: one entry per line, its key before the first
// tab and its value after (a line without a tab is a key with an empty value). A key no
// ConfigMap may hold is left out.
func shardData(s string) map[string]string {
	data := map[string]string{}
	for line := range strings.SplitSeq(s, "\n") {
		if line == "" {
			continue
		}
		k, v, _ := strings.Cut(line, "\t")
		if len(validation.IsConfigMapKey(k)) > 0 {
			continue // the API server holds no such key
		}
		data[k] = v
	}
	return data
}

// FuzzLoadCorruptState: whatever the state ConfigMaps hold, Load neither panics nor fails; it
// keeps exactly the entries that decode (a tombstone only on a config key), from the lowest shard
// holding one, drops the rest, and leaves others' keys alone; the next Flush removes every
// dropped or duplicate copy, so that a new Load reads the same entries and finds nothing to fix.
func FuzzLoadCorruptState(f *testing.F) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, shard0, shard1, shard2 string) {
		const name = "reloader-state"
		stored := fakeShards{}
		for i, s := range []string{shard0, shard1, shard2} {
			if s != "" || i == 0 {
				stored[New(nil, "", name, nil).ShardName(i)] = shardData(s)
			}
		}
		initial := map[string]map[string]string{}
		for n, d := range stored {
			initial[n] = maps.Clone(d)
		}
		s := New(stored, "ns", name, log)
		if _, err := s.Load(context.Background()); err != nil {
			t.Fatalf("Load: %v", err)
		}
		// What Load must keep: each own key's first valid copy, in shard order.
		want := map[string]Entry{}
		for i := range MaxShards {
			for k, v := range initial[s.ShardName(i)] {
				if _, seen := want[k]; seen || !s.kinds.owns(k) {
					continue
				}
				if e, err := decodeEntry(v); err == nil && (!e.Deleted || isConfigEntry(k)) {
					want[k] = e
				}
			}
		}
		got := map[string]Entry{}
		for k, e := range s.t.entries.m {
			got[k] = s.t.entries.public(k, e)
		}
		if !maps.Equal(got, want) {
			t.Fatalf("Load kept %v, want %v", got, want)
		}
		if err := s.Flush(context.Background()); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		// Each own key is now stored once, as the value in memory; others' keys are unchanged.
		copies := map[string]int{}
		for n, data := range stored {
			for k, v := range data {
				if !s.kinds.owns(k) {
					if initial[n][k] != v && k != FlushedAtKey {
						t.Fatalf("someone else's key %q in %s changed from %q to %q", k, n, initial[n][k], v)
					}
					continue
				}
				copies[k]++
				if e, ok := want[k]; !ok || encodeEntry(e) != v {
					t.Fatalf("after Flush %s holds %q=%q; want %+v (kept: %v)", n, k, v, e, ok)
				}
			}
			for k, v := range initial[n] {
				if !s.kinds.owns(k) && data[k] != v {
					t.Fatalf("someone else's key %q in %s was removed", k, n)
				}
			}
		}
		for k := range want {
			if copies[k] != 1 {
				t.Fatalf("after Flush %q is stored %d times", k, copies[k])
			}
		}
		again := New(stored, "ns", name, log)
		if _, err := again.Load(context.Background()); err != nil {
			t.Fatalf("second Load: %v", err)
		}
		if len(again.t.entries.m) != len(want) || !again.Clean() {
			t.Fatalf("second Load: %d entries (want %d), clean %v", len(again.t.entries.m), len(want), again.Clean())
		}
		for k, e := range want {
			if g, _ := again.Configs().Get(k); g != e {
				t.Fatalf("second Load: %q is %+v, want %+v", k, g, e)
			}
		}
	})
}
