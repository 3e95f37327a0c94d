package state

import (
	"context"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// loadGap is how many missing shards in a row end a Load. Shards are opened in order and never
// deleted by the store, so the first missing one is the end, unless someone deleted a shard
// (the store writes a deleted shard back only once it holds an entry there): one such gap is
// read past. Shards past two deleted in a row are not loaded, and their configs are judged as
// first seen: a deletion makes the reloader do less, never more. A state of one shard costs
// three GETs, not MaxShards.
const loadGap = 2

// Load reads the shards in order up to loadGap missing in a row, creating the first if it is
// missing. It reports first=true when no
// entry of ours exists anywhere, tombstones included: the controller has never run here. Corrupt
// values are dropped and logged, so their configs count as new rather than changed; the next
// flush removes them. A fenced store (Fence) then claims every shard; a shard written meanwhile
// fails the Load, to be retried.
func (s *Store) Load(ctx context.Context) (first bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetAll() // a Load retried after a failure starts over, or it would count entries twice
	missing := 0
	for i := range MaxShards {
		if missing == loadGap {
			break
		}
		cm, err := s.io.get(ctx, i)
		if apierrors.IsNotFound(err) {
			if i == 0 {
				if err := s.flusher.create(ctx, 0); err != nil {
					return false, err
				}
			} else {
				missing++
			}
			continue
		}
		missing = 0
		if err != nil {
			return false, s.io.explain("get", s.ShardName(i), err)
		}
		s.flusher.exists[i] = true
		if v, err := strconv.ParseUint(cm.ResourceVersion, 10, 64); err == nil {
			s.watermark = max(s.watermark, v)
			if st, ok := cm.Data[FlushedAtKey]; ok {
				s.stamps = append(s.stamps, loadedStamp{shard: s.ShardName(i), rv: v, value: st})
			}
		}
		s.loadShard(i, cm.Data)
	}
	if s.io.fenced() {
		for i := range MaxShards {
			if s.flusher.exists[i] {
				if err := s.io.claim(ctx, i); err != nil {
					return false, err
				}
			}
		}
	}
	return len(s.t.entries.m) == 0, nil
}

// loadShard takes in shard i's entries. Shards load in order, so a key already loaded sits in a
// lower shard: that copy is kept, as the one an interrupted move most likely wrote last, and
// this one is removed.
func (s *Store) loadShard(i int, data map[string]string) {
	for k, v := range data {
		if k == FlushedAtKey {
			continue // each write stamps its own; its few bytes fit in the margin under the limit
		}
		if !s.kinds.owns(k) {
			s.t.room.bytes[i] += cost(len(k), len(v))
			if i == 0 {
				s.flusher.others[k] = v
			}
			continue
		}
		e, err := s.kinds.decode(k, v)
		if err != nil {
			s.log.Warn("state entry is corrupt; its config will be treated as new and re-recorded without a restart",
				"configmap", s.ShardName(i), "key", k, "reason", err.Error())
			s.drop(k, i)
			if s.corrupt == nil {
				s.corrupt = map[string]struct{}{}
			}
			s.corrupt[k] = struct{}{}
			continue
		}
		if kept, dup := s.t.entries.m[k]; dup {
			s.log.Warn("state entry is stored twice; keeping the copy in the lower shard",
				"configmap", s.ShardName(i), "key", k, "kept_in", s.ShardName(int(kept.shard)))
			s.drop(k, i)
			continue
		}
		s.t.entries.put(k, e, i, true)
		s.t.children.link(k, true)
		s.t.room.bytes[i] += s.kinds.reserve(k)
		if s.t.isSpare(k) {
			s.t.room.addSpare(k, i, s.kinds.reserve(k))
		}
	}
}

// DroppedAsCorrupt reports whether the last Load dropped key's stored value as corrupt. Its
// config had an entry, so some reloader saw it: a write of it above the watermark does not tell
// that it changed unseen (Watermark), and a foreign value may make the reloader do less, never
// more. Its entry's content is lost: its config counts as first seen.
func (s *Store) DroppedAsCorrupt(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.corrupt[key]
	return ok
}

// drop leaves a stored copy of key out of memory and has the next flush remove it from shard i.
func (s *Store) drop(key string, i int) {
	s.flusher.due.removeFrom(key, i)
	s.flusher.due.mark(key)
}

// forgetAll empties the in-memory copy before a Load.
func (s *Store) forgetAll() {
	s.t.entries, s.t.children = newEntryMap(), children{}
	s.watermark, s.stamps, s.corrupt = 0, nil, nil
	s.flusher.forget()
	s.t.room.forget()
	s.io.forget()
}
