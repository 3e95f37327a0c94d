package state

import (
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/reloader/reloader/confighash"
)

const (
	testHash  = "3f7a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a"
	testKeyed = "hmac-2b39b88d-" + testHash
)

func TestEntryValues(t *testing.T) {
	since := time.Unix(1795000000, 0).UTC()
	tests := []struct {
		value string
		want  Entry
	}{
		{testHash, Entry{Hash: testHash}},
		{"deleted@1795000000:" + testHash, Entry{Hash: testHash, Deleted: true, Since: since}},
		{"deleted@1795000000:", Entry{Deleted: true, Since: since}},
		{"deleted@0:", Entry{Deleted: true, Since: time.Unix(0, 0).UTC()}},
		{testKeyed, Entry{Hash: testKeyed}},
		{"deleted@1795000000:" + testKeyed, Entry{Hash: testKeyed, Deleted: true, Since: since}},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			got, err := decodeEntry(tt.value)
			if err != nil || got != tt.want {
				t.Fatalf("decodeEntry = %+v, %v; want %+v", got, err, tt.want)
			}
			if v := encodeEntry(got); v != tt.value {
				t.Fatalf("encodeEntry = %q, want %q", v, tt.value)
			}
		})
	}
}

func TestCorruptValuesDoNotDecode(t *testing.T) {
	for _, v := range []string{
		"",
		"not-a-hash",
		strings.ToUpper(testHash),
		testHash + "0",
		"deleted@",
		"deleted@1795000000",
		"deleted@:" + testHash,
		"deleted@abc:",
		"deleted@-5:",
		"deleted@+5:",
		"deleted@0123:",
		"deleted@ 1:",
		"deleted@99999999999999999999:",
		"deleted@253402300800:",
		"deleted@1795000000:not-a-hash",
		"deleted@1795000000:" + testHash + ":",
		"removed@1795000000:",
		"hmac-2b39b88d-",
		"hmac-" + testHash,
		"hmac-2b39b88d-" + testHash + "0",
		"hmac-2B39B88D-" + testHash,
		"hmac-2b39b88d_" + testHash,
		"HMAC-2b39b88d-" + testHash,
		"hmac-2b39b88d-" + strings.ToUpper(testHash),
		"deleted@1795000000:hmac-2b39b88d-",
		"deleted@1795000000:" + testKeyed + "0",
		testKeyed + ":",
	} {
		if e, err := decodeEntry(v); err == nil {
			t.Errorf("decodeEntry(%q) = %+v, want an error", v, e)
		}
	}
}

func TestTombstoneTimesAreWholeSecondsThatDecode(t *testing.T) {
	for _, at := range []time.Time{{}, time.Unix(-1, 0), time.Unix(1795000000, 999999999), time.Date(20000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		for key, hash := range map[string]string{"v1.ConfigMap_x": testHash, "v1.Secret_x": testKeyed} {
			v := encodeEntry(Entry{Hash: hash, Deleted: true, Since: sinceOf(at)})
			if _, err := decodeEntry(v); err != nil {
				t.Errorf("tombstone recorded at %v encodes as %q, which does not decode: %v", at, v, err)
			}
			if len(v) > maxValue(key) {
				t.Errorf("tombstone of %s recorded at %v encodes as %q, longer than the %d bytes reserved", key, at, v, maxValue(key))
			}
		}
	}
}

// TestOnlySecretEntriesHoldKeyedHashes: a keyed hash is longer than a plain one, and only a
// Secret's entries reserve room for it.
func TestOnlySecretEntriesHoldKeyedHashes(t *testing.T) {
	tests := []struct {
		key, hash string
		ok        bool
	}{
		{"v1.ConfigMap_app", testHash, true},
		{"v1.ConfigMap_app__k", testHash, true},
		{"v1.Secret_db", testHash, true}, // as versions before keyed hashes wrote it
		{"v1.Secret_db", testKeyed, true},
		{"v1.Secret_db__password", testKeyed, true},
		{"v1.Secret_ns_db", testKeyed, true},
		{"v1.ConfigMap_app", testKeyed, false},
		{"v1.ConfigMap_app__k", testKeyed, false},
		{"v1.ConfigMap_v1.Secret_x", testKeyed, false},
		{"v1.Secret_db", "hmac-2b39b88d-", false},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.hash, func(t *testing.T) {
			if err := mayHold(tt.key, tt.hash); (err == nil) != tt.ok {
				t.Fatalf("mayHold = %v, want ok=%v", err, tt.ok)
			}
			if tt.ok && len(tt.hash) > maxValue(tt.key) {
				t.Fatalf("%q is longer than the %d bytes reserved for %s", tt.hash, maxValue(tt.key), tt.key)
			}
		})
	}
	// A ConfigMap's entries reserve room for the values they held before keyed hashes.
	if got := maxValue("v1.ConfigMap_app"); got != len("deleted@253402300799:")+40 {
		t.Errorf("a ConfigMap entry's value may take %d bytes", got)
	}
	if got := maxValue("v1.ConfigMap_app__k"); got != 40 {
		t.Errorf("a ConfigMap data-key entry's value may take %d bytes", got)
	}
}

// FuzzDecodeEntry checks that no stored value crashes the decoder and that every value it
// accepts is written back unchanged.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(testHash)
	f.Add("deleted@1795000000:" + testHash)
	f.Add("deleted@1795000000:")
	f.Add("deleted@0123:")
	f.Add("removed@1:")
	f.Add(testKeyed)
	f.Add("deleted@1795000000:" + testKeyed)
	f.Fuzz(func(t *testing.T, v string) {
		e, err := decodeEntry(v)
		if err != nil {
			return
		}
		if got := encodeEntry(e); got != v {
			t.Fatalf("encodeEntry(decodeEntry(%q)) = %q", v, got)
		}
		if e.Hash != "" && !IsHash(e.Hash) || !e.Deleted && (e.Hash == "" || !e.Since.IsZero()) {
			t.Fatalf("decodeEntry(%q) = %+v, not an entry the store would hold", v, e)
		}
		key := "v1.ConfigMap_x" // the entry that may hold the value and reserves the least for it
		if _, keyed := confighash.KeyIDOf(e.Hash); keyed {
			key = "v1.Secret_x"
		}
		if err := mayHold(key, e.Hash); e.Hash != "" && err != nil {
			t.Fatalf("decodeEntry(%q) = %+v, which %s may not hold: %v", v, e, key, err)
		}
		if len(v) > maxValue(key) {
			t.Fatalf("%q is longer than the %d bytes a shard reserves for the value of %s", v, maxValue(key), key)
		}
	})
}

// The state keeps one entry per config: as text, its hash would take a 48-byte allocation (a
// keyed one 64) and a tombstone's time 8 more bytes in every entry.
func TestAConfigEntryTakes29BytesAndKeepsItsHashWithoutAnAllocation(t *testing.T) {
	if size := unsafe.Sizeof(entry{}); size != 29 {
		t.Errorf("an entry takes %d bytes, want 29", size)
	}
	m := newEntryMap()
	plain, keyed := strings.Repeat("ab", 20), "hmac-0a1b2c3d-"+strings.Repeat("cd", 20)
	m.put("v1.ConfigMap_a", Entry{Hash: plain}, 0, false)
	m.put("v1.Secret_b", Entry{Hash: keyed}, 0, false)
	allocs := testing.AllocsPerRun(100, func() {
		m.put("v1.ConfigMap_a", Entry{Hash: plain}, 0, false)
		m.put("v1.Secret_b", Entry{Hash: keyed}, 0, false)
	})
	if allocs != 0 {
		t.Errorf("storing a hash allocates %.0f times, want none", allocs)
	}
	if len(m.values) != 0 || len(m.since) != 0 {
		t.Errorf("live config entries kept beside: values %v, since %v", m.values, m.since)
	}
	for k, want := range map[string]string{"v1.ConfigMap_a": plain, "v1.Secret_b": keyed} {
		if got := m.public(k, m.m[k]); got != (Entry{Hash: want}) {
			t.Errorf("%s reads back %+v, want hash %s", k, got, want)
		}
	}
}

func TestEntriesThatDoNotPackReadBackAsStored(t *testing.T) {
	m := newEntryMap()
	at := time.Unix(1700000000, 0).UTC()
	hash := strings.Repeat("12", 20)
	for k, e := range map[string]Entry{
		"v1.ConfigMap_gone":   {Hash: hash, Deleted: true, Since: at},
		"v1.ConfigMap_absent": {Deleted: true, Since: at},
		"hold.x":              {Hash: "any text a kind accepts", opaque: true},
		"hold.hash":           {Hash: hash, opaque: true},
	} {
		m.put(k, e, 1, true)
		if got := m.public(k, m.m[k]); got != e {
			t.Errorf("%s reads back %+v, want %+v", k, got, e)
		}
	}
	m.put("v1.ConfigMap_gone", Entry{Hash: hash}, 1, true) // revived
	if _, kept := m.since["v1.ConfigMap_gone"]; kept {
		t.Error("a revived entry keeps its tombstone time")
	}
	m.remove("hold.x")
	if _, kept := m.values["hold.x"]; kept {
		t.Error("a removed entry keeps its value")
	}
}
