package state

import (
	"strings"
	"testing"
	"time"
)

const testHash = "3f7a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a"

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
	} {
		if e, err := decodeEntry(v); err == nil {
			t.Errorf("decodeEntry(%q) = %+v, want an error", v, e)
		}
	}
}

func TestTombstoneTimesAreWholeSecondsThatDecode(t *testing.T) {
	for _, at := range []time.Time{{}, time.Unix(-1, 0), time.Unix(1795000000, 999999999), time.Date(20000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		v := encodeEntry(Entry{Hash: testHash, Deleted: true, Since: sinceOf(at)})
		if _, err := decodeEntry(v); err != nil {
			t.Errorf("tombstone recorded at %v encodes as %q, which does not decode: %v", at, v, err)
		}
		if len(v) > tombstoneReserve {
			t.Errorf("tombstone recorded at %v encodes as %q, longer than the %d bytes reserved", at, v, tombstoneReserve)
		}
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
		if len(v) > tombstoneReserve {
			t.Fatalf("%q is longer than the %d bytes a shard reserves for a config entry's value", v, tombstoneReserve)
		}
	})
}
