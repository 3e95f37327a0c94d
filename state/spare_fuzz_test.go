package state

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"
)

// FuzzSparePlacement: whatever sequence of sets, spare marks, deletions, tombstones, flushes and
// restarts, the shards' byte counts match the entries they hold (spare ones apart), a shard never
// passes its budget, the memory-only entries are those no shard holds, and after a flush an entry
// that is not spare is memory-only only if no shard could make room for it by evicting every
// spare entry it holds.
func FuzzSparePlacement(f *testing.F) {
	f.Add([]byte{0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x40, 0x18, 0x19, 0x1a, 0x40})
	f.Add([]byte{0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x40, 0x70, 0x40})
	f.Add([]byte{0x10, 0x00, 0x01, 0x02, 0x11, 0x03, 0x04, 0x05, 0x06, 0x20, 0x07, 0x08, 0x30, 0x50, 0x40, 0x21, 0x60, 0x70, 0x0b, 0x40})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	keys := make([]string, 16)
	for i := range keys {
		kind := "ConfigMap"
		if i%3 == 0 {
			kind = "Secret"
		}
		keys[i] = Key(kind, "", fmt.Sprintf("c%0*d", 1+i%4, i))
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		stored := fakeShards{}
		ctx := context.Background()
		open := func() *Store {
			s := New(stored, "ns", "reloader-state", log)
			SetBudget(s, Reserved(keys[0])+Reserved(keys[1]))
			if _, err := s.Load(ctx); err != nil {
				t.Fatal(err)
			}
			return s
		}
		s := open()
		marks := map[string]bool{}
		for n, b := range ops {
			k := keys[b&15]
			switch b >> 4 & 7 {
			case 0:
				s.Configs().Set(k, fmt.Sprintf("%040x", n))
			case 1:
				s.Configs().SetSpare(k, true)
				marks[k] = true
			case 2:
				s.Configs().SetSpare(k, false)
				delete(marks, k)
			case 3:
				s.Configs().Delete(k)
				delete(marks, k)
			case 4:
				if err := s.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				checkRoomAfterFlush(t, s)
			case 5:
				s.Configs().Tombstone(k, "", time.Unix(1795000000, 0))
			case 6:
				s.Configs().Set(KeyOf(k, "d"), fmt.Sprintf("%040x", n))
			case 7:
				if err := s.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				s = open()
				for m := range marks {
					s.Configs().SetSpare(m, true)
				}
			}
			checkRoom(t, s)
		}
	})
}

// checkRoom fails t unless s's counts match its entries.
func checkRoom(t *testing.T, s *Store) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var bytes, spare [MaxShards]int
	var spareIn [MaxShards]int
	for k, e := range s.t.entries.m {
		_, unsaved := s.t.room.unsaved[k]
		if unsaved != (e.shard == memoryOnly) {
			t.Fatalf("%s in shard %d, unsaved %v", k, e.shard, unsaved)
		}
		if e.shard == memoryOnly {
			continue
		}
		bytes[e.shard] += s.kinds.reserve(k)
		if s.t.isSpare(k) {
			spare[e.shard] += s.kinds.reserve(k)
			spareIn[e.shard]++
			if _, ok := s.t.room.spareIn[e.shard][k]; !ok {
				t.Fatalf("spare %s in shard %d is not listed as one", k, e.shard)
			}
		}
	}
	for k := range s.t.room.unsaved {
		if _, ok := s.t.entries.m[k]; !ok {
			t.Fatalf("%s is unsaved and not an entry", k)
		}
	}
	if bytes != s.t.room.bytes || spare != s.t.room.spareBytes {
		t.Fatalf("shards count %v bytes, %v spare; their entries take %v, %v", s.t.room.bytes, s.t.room.spareBytes, bytes, spare)
	}
	for i, n := range spareIn {
		if len(s.t.room.spareIn[i]) != n {
			t.Fatalf("shard %d lists %d spare entries, holds %d", i, len(s.t.room.spareIn[i]), n)
		}
	}
	for i, n := range bytes {
		if n > s.t.room.budget {
			t.Fatalf("shard %d holds %d bytes, past its budget of %d", i, n, s.t.room.budget)
		}
	}
}

// checkRoomAfterFlush fails t if an entry that is not spare is kept in memory only while a
// shard could take it by evicting spare entries.
func checkRoomAfterFlush(t *testing.T, s *Store) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.t.room.unsaved {
		if s.t.isSpare(k) {
			continue
		}
		for i := range MaxShards {
			if s.t.room.bytes[i]-s.t.room.spareBytes[i]+s.kinds.reserve(k) <= s.t.room.budget {
				t.Fatalf("%s (not spare) is in memory only, but shard %d holds %d bytes of which %d spare",
					k, i, s.t.room.bytes[i], s.t.room.spareBytes[i])
			}
		}
	}
}
