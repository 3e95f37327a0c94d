package state

import (
	"context"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// MaxShards is how many state ConfigMaps may exist. The shipped Role names each of them.
	MaxShards = 8
	// ShardBudget is how many bytes of keys and values one shard takes before the next is used,
	// well below the API server's 1 MiB limit on a ConfigMap.
	ShardBudget = 800 * 1024
)

// ShardStats describes one state ConfigMap for metrics.
type ShardStats struct {
	Name    string
	Entries int
	// Bytes is what the shard counts against ShardBudget: others' keys as stored, and each entry
	// of ours at the longest value it could take.
	Bytes int
}

// ConfigMapClient is what the store needs of a ConfigMap client for its namespace; client-go's
// typed clients have these methods.
type ConfigMapClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error)
	Create(ctx context.Context, cm *corev1.ConfigMap, opts metav1.CreateOptions) (*corev1.ConfigMap, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.ConfigMap, error)
}

// Store is the in-memory copy of the state with write-behind to the API server. While the
// controller runs, memory is authoritative: a deleted shard is recreated from it.
type Store struct {
	io    *shardIO // every API call, and the fence (fence.go)
	log   *slog.Logger
	kinds kindSet // the kinds of entry kept for others (New), fixed

	mu       sync.Mutex
	entries  entryMap
	children children
	room     room // how full each shard is (shards.go)
	// spare holds the configs whose owner reads them from no workload (SetSpare): their entries
	// give up their room to others' when the state is full. It outlives a Load.
	spare   map[string]struct{}
	flusher flusher // writes the changes behind, and the first shard's other keys (flush.go)
	// OnWrite, if set, is told of every shard write attempt and its error (for metrics).
	OnWrite func(shard string, err error)
}

// memoryOnly is the shard of an entry that no shard had room for.
const memoryOnly = -1

// shardSet is a set of shard numbers.
type shardSet [MaxShards]bool

// New returns a Store for the shards named name, name-1, ... in namespace; client serves that
// namespace. Besides config entries it keeps entries of the kinds given, for their owners.
func New(client ConfigMapClient, namespace, name string, log *slog.Logger, kinds ...EntryKind) *Store {
	io := &shardIO{client: client, namespace: namespace, name: name, log: log}
	s := &Store{
		kinds:    kinds,
		io:       io,
		log:      log,
		room:     room{budget: ShardBudget, unsaved: map[string]struct{}{}, log: log},
		entries:  newEntryMap(),
		children: children{},
		spare:    map[string]struct{}{},
	}
	s.flusher = flusher{io: io, log: log, kinds: s.kinds, mu: &s.mu, entries: s, onWrite: &s.OnWrite,
		due: newPending(), others: map[string]string{}}
	return s
}

// current returns the entries, for the flusher. The caller holds s.mu.
func (s *Store) current() entryMap { return s.entries }

// ShardName returns the name of shard i.
func (s *Store) ShardName(i int) string { return s.io.shardName(i) }

// Fence makes every later Load claim the shards and every write conditional on the shard's
// version, as writer (fence.go). Call it before Load.
func (s *Store) Fence(writer string) { s.io.fence(writer) }

// Get returns what the state holds for key.
func (s *Store) Get(key string) (Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries.m[key]
	return s.entries.public(key, e), ok
}

// Set records hash as the content of key, a config entry or a data-key entry, reviving a
// tombstone; it is written by the next flush. A value that is not a content hash, a keyed hash
// under a ConfigMap, or a key that is no config's, is refused and logged: it would not load back.
func (s *Store) Set(key, hash string) {
	if !validContent(s.log, key, hash) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(key, Entry{Hash: hash})
}

// SetRedundant is Set for an entry that restates what the owner keeps elsewhere as long as
// nothing else asks for it: it is written along with the next flush, or by the flush at exit,
// and no flush is made for it alone. Need asks for it.
func (s *Store) SetRedundant(key, hash string) {
	if !validContent(s.log, key, hash) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, due := s.flusher.due.dirty[key]
	if !s.update(key, Entry{Hash: hash}) || due {
		return
	}
	s.flusher.due.redundant[key] = struct{}{}
}

// Need makes an entry set with SetRedundant, and not written since, due like any other: the
// next flush, which it starts, writes it.
func (s *Store) Need(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.flusher.due.redundant[key]; ok {
		delete(s.flusher.due.redundant, key)
		s.flusher.due.mark(key)
	}
}

// validContent reports whether hash may be recorded as the content of key; if not, it logs why:
// the value would not load back.
func validContent(log *slog.Logger, key, hash string) bool {
	if !isConfigPrefixed(key) {
		log.Error("refusing to record a content hash under a key that is no config's", "key", key)
		return false
	}
	if err := mayHold(key, hash); err != nil {
		log.Error("refusing to record a state value that is not a content hash", "key", key, "reason", err.Error())
		return false
	}
	return true
}

// Tombstone marks a config entry deleted, keeping hash as its last content and its data-key
// children untouched. A config already tombstoned keeps its Since; hash "" keeps a known hash.
// A data-key entry or a hash of the wrong form is refused and logged: it would not load back.
func (s *Store) Tombstone(config, hash string, at time.Time) {
	if !isConfigEntry(config) || hash != "" && mayHold(config, hash) != nil {
		s.log.Error("refusing to record a tombstone that is not a config entry with a content hash or none",
			"key", config)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tombstone(config, hash, at)
}

func (s *Store) tombstone(config, hash string, at time.Time) {
	next := Entry{Hash: hash, Deleted: true, Since: sinceOf(at)}
	if e, ok := s.entries.m[config]; ok {
		old := s.entries.public(config, e)
		if hash == "" {
			next.Hash = old.Hash
		}
		if e.deleted {
			next.Since = old.Since
		}
	}
	s.put(config, next)
}

// Redate moves a tombstone's time to at, keeping its content and data-key entries: the config
// was seen deleted again. A live entry, or none, is left alone.
func (s *Store) Redate(config string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries.m[config]; ok && e.deleted {
		next := s.entries.public(config, e)
		next.Since = sinceOf(at)
		s.put(config, next)
	}
}

// TombstoneMissing tombstones (at `at`) every live config entry for which live(config) is false,
// and returns how many. A config that has only data-key entries left, and is not live, gets a
// tombstone without a hash, so that its entries are pruned along with it rather than leaked.
// Nothing is deleted. live is called with the store locked and must not use it.
func (s *Store) TombstoneMissing(live func(config string) bool, at time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var missing []string
	for k, e := range s.entries.m {
		if isConfigEntry(k) && !e.deleted && !live(k) {
			missing = append(missing, k)
		}
	}
	for config := range s.children {
		if _, ok := s.entries.m[config]; !ok && isConfigEntry(config) && !live(config) {
			missing = append(missing, config)
		}
	}
	for _, k := range missing {
		s.tombstone(k, "", at)
	}
	return len(missing)
}

// Count returns how many entries match; match is called with the store locked and must not use
// it.
func (s *Store) Count(match func(key string, e Entry) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, e := range s.entries.m {
		if match(k, s.entries.public(k, e)) {
			n++
		}
	}
	return n
}

// ConfigKeys returns the key of every config entry, live or tombstoned.
func (s *Store) ConfigKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.entries.m {
		if isConfigEntry(k) {
			out = append(out, k)
		}
	}
	return out
}

// Tombstones returns a snapshot of every tombstoned config entry (key → Entry).
func (s *Store) Tombstones() map[string]Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]Entry{}
	for k, e := range s.entries.m {
		if e.deleted {
			out[k] = s.entries.public(k, e)
		}
	}
	return out
}

// DeleteEntry removes one entry, such as a single data-key entry; the removal is written by the
// next flush.
func (s *Store) DeleteEntry(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteLocked(key)
}

// Delete removes a config's entry, tombstone or not, and its data-key entries; the removal is
// written by the next flush.
func (s *Store) Delete(config string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.children[config] {
		s.deleteLocked(k)
	}
	s.deleteLocked(config)
	s.setSpare(config, false)
}

// SetSpare marks config (a config entry key) spare or not: the entries of a spare config are
// kept like any other while there is room, but when the state is full an entry that is not spare
// takes a spare one's room, and that one is kept in memory only (Unsaved) until room appears. A
// spare entry never takes another's room. An entry that stops being spare while in memory only
// is written once room is found, by evicting a spare one if need be, at the next flush.
func (s *Store) SetSpare(config string, spare bool) {
	if !isConfigEntry(config) {
		s.log.Error("refusing to mark spare a key that is no config entry", "key", config)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, was := s.spare[config]
	if was == spare {
		return
	}
	s.setSpare(config, spare)
	if !spare && s.unsavedIn(config) {
		s.flusher.due.wake()
	}
}

// setSpare marks config spare or not and moves its saved entries in or out of the shards'
// spare ones. The caller holds s.mu.
func (s *Store) setSpare(config string, spare bool) {
	if _, was := s.spare[config]; was == spare {
		return
	}
	if spare {
		s.spare[config] = struct{}{}
	} else {
		delete(s.spare, config)
	}
	for _, k := range s.family(config) {
		e, ok := s.entries.m[k]
		switch {
		case !ok || e.shard == memoryOnly:
		case spare:
			s.room.addSpare(k, int(e.shard), s.kinds.reserve(k))
		default:
			s.room.dropSpare(k, int(e.shard), s.kinds.reserve(k))
		}
	}
}

// unsavedIn reports whether an entry of config is kept in memory only. The caller holds s.mu.
func (s *Store) unsavedIn(config string) bool {
	for _, k := range s.family(config) {
		if _, ok := s.room.unsaved[k]; ok {
			return true
		}
	}
	return false
}

// UnsavedSpare returns how many of the entries kept in memory only (Unsaved) are spare ones.
func (s *Store) UnsavedSpare() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.room.unsaved {
		if s.isSpare(k) {
			n++
		}
	}
	return n
}

// KeepDataKeys removes config's data-key entries that are not in keep; the removals are written
// by the next flush.
func (s *Store) KeepDataKeys(config string, keep map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.children[config] {
		if !keep[k] {
			s.deleteLocked(k)
		}
	}
}

func (s *Store) deleteLocked(key string) {
	e, ok := s.entries.m[key]
	if !ok {
		return
	}
	s.unplace(key, e)
	s.entries.remove(key)
	s.room.setUnsaved(key, false)
	s.children.link(key, false)
}

// children indexes each config's data-key entries, so deleting a config does not scan.
type children map[string]map[string]bool

// link adds (or removes) a data-key entry in its config's children; config entries are skipped.
func (c children) link(key string, add bool) {
	config := ConfigOf(key)
	if config == key {
		return
	}
	if add {
		if c[config] == nil {
			c[config] = map[string]bool{}
		}
		c[config][key] = true
		return
	}
	delete(c[config], key)
	if len(c[config]) == 0 {
		delete(c, config)
	}
}

// Unsaved returns how many entries are kept in memory only because every shard is full. They
// are written once deletions make room, and lost if the reloader restarts first.
func (s *Store) Unsaved() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.room.unsaved)
}

// Stats returns the entry count and size of every shard that holds entries, and of the first.
func (s *Store) Stats() []ShardStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts := [MaxShards]int{}
	for _, e := range s.entries.m {
		if e.shard != memoryOnly {
			counts[e.shard]++
		}
	}
	var out []ShardStats
	for i := range MaxShards {
		if i == 0 || counts[i] > 0 || s.room.bytes[i] > 0 {
			out = append(out, ShardStats{Name: s.ShardName(i), Entries: counts[i], Bytes: s.room.bytes[i]})
		}
	}
	return out
}
