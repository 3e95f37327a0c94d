package state

import (
	"context"
	"fmt"
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
	client    ConfigMapClient
	namespace string
	name      string
	log       *slog.Logger
	budget    int         // bytes per shard: ShardBudget, smaller in tests
	kinds     []EntryKind // the kinds of entry kept for others (New), fixed

	mu      sync.Mutex
	entries map[string]entry
	// children indexes each config's data-key entries, so deleting a config does not scan.
	children map[string]map[string]bool
	bytes    [MaxShards]int  // keys and values held by each shard, ours and others'
	exists   [MaxShards]bool // shards known to exist; a new one is created, not patched
	// version is each shard's resourceVersion as our last read or write of it left it; a write
	// applies only to that version (fence.go). "" when unknown: the write is unconditional.
	version [MaxShards]string
	writer  string // the fenced store's name (Fence); "" writes unconditionally
	// others are the keys of the first shard that are not entries (a Job recreation's note), as
	// last read or written: a deleted first shard is recreated with them too.
	others map[string]string
	dirty  map[string]struct{}
	// redundant holds config entries set with SetRedundant and not written since: the next
	// flush writes them along, but none is made for them alone.
	redundant map[string]struct{}
	// gone lists, for dirty keys, the shards whose stored copy must be removed by the next flush:
	// the key was deleted or moved away from there, or was found there corrupt or twice.
	gone map[string]shardSet
	// unsaved holds the entries that no shard had room for; they wait in memory for room.
	unsaved  map[string]struct{}
	flushing int // flushes between taking the dirty keys and finishing their writes
	kick     chan struct{}
	// OnWrite, if set, is told of every shard write attempt and its error (for metrics).
	OnWrite func(shard string, err error)
}

// entry is an Entry as the store keeps it, and where it is stored. Since has whole seconds
// only, so it is kept as unix seconds (8 bytes, not a time.Time's 24) and the shard in a byte:
// 32 bytes per config and data key instead of 64.
type entry struct {
	hash    string
	since   int64 // unix seconds; a tombstone's only
	shard   int8  // or memoryOnly
	deleted bool
	opaque  bool // of a registered kind: hash is the value
	// stored: the shard may hold the key (loaded from it, or sent to it); removing one it
	// cannot hold needs no write.
	stored bool
}

func packEntry(e Entry, shard int) entry {
	p := entry{hash: e.Hash, shard: int8(shard), deleted: e.Deleted, opaque: e.opaque}
	if e.Deleted {
		p.since = e.Since.Unix()
	}
	return p
}

// public is the Entry that e keeps.
func (e entry) public() Entry {
	out := Entry{Hash: e.hash, Deleted: e.deleted, opaque: e.opaque}
	if e.deleted {
		out.Since = time.Unix(e.since, 0).UTC()
	}
	return out
}

// in reports whether e is stored in shard i.
func (e entry) in(i int) bool { return int(e.shard) == i }

// memoryOnly is the shard of an entry that no shard had room for.
const memoryOnly = -1

// shardSet is a set of shard numbers.
type shardSet [MaxShards]bool

// New returns a Store for the shards named name, name-1, ... in namespace; client serves that
// namespace. Besides config entries it keeps entries of the kinds given, for their owners.
func New(client ConfigMapClient, namespace, name string, log *slog.Logger, kinds ...EntryKind) *Store {
	return &Store{
		kinds:     kinds,
		client:    client,
		namespace: namespace,
		name:      name,
		log:       log,
		budget:    ShardBudget,
		entries:   map[string]entry{},
		children:  map[string]map[string]bool{},
		dirty:     map[string]struct{}{},
		redundant: map[string]struct{}{},
		gone:      map[string]shardSet{},
		unsaved:   map[string]struct{}{},
		others:    map[string]string{},
		kick:      make(chan struct{}, 1),
	}
}

// ShardName returns the name of shard i.
func (s *Store) ShardName(i int) string {
	if i == 0 {
		return s.name
	}
	return fmt.Sprintf("%s-%d", s.name, i)
}

// Get returns what the state holds for key.
func (s *Store) Get(key string) (Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	return e.public(), ok
}

// Set records hash as the content of key, a config entry or a data-key entry, reviving a
// tombstone; it is written by the next flush. A value that is not a content hash, a keyed hash
// under a ConfigMap, or a key that is no config's, is refused and logged: it would not load back.
func (s *Store) Set(key, hash string) {
	if !s.validContent(key, hash) {
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
	if !s.validContent(key, hash) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, due := s.dirty[key]
	if !s.update(key, Entry{Hash: hash}) || due {
		return
	}
	s.redundant[key] = struct{}{}
}

// Need makes an entry set with SetRedundant, and not written since, due like any other: the
// next flush, which it starts, writes it.
func (s *Store) Need(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.redundant[key]; ok {
		delete(s.redundant, key)
		s.markDirty(key)
	}
}

// validContent reports whether hash may be recorded as the content of key; if not, it logs why:
// the value would not load back.
func (s *Store) validContent(key, hash string) bool {
	if !isConfigPrefixed(key) {
		s.log.Error("refusing to record a content hash under a key that is no config's", "key", key)
		return false
	}
	if err := mayHold(key, hash); err != nil {
		s.log.Error("refusing to record a state value that is not a content hash", "key", key, "reason", err.Error())
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
	if e, ok := s.entries[config]; ok {
		if hash == "" {
			next.Hash = e.hash
		}
		if e.deleted {
			next.Since = e.public().Since
		}
	}
	s.put(config, next)
}

// Redate moves a tombstone's time to at, keeping its content and data-key entries: the config
// was seen deleted again. A live entry, or none, is left alone.
func (s *Store) Redate(config string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[config]; ok && e.deleted {
		next := e.public()
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
	for k, e := range s.entries {
		if isConfigEntry(k) && !e.deleted && !live(k) {
			missing = append(missing, k)
		}
	}
	for config := range s.children {
		if _, ok := s.entries[config]; !ok && isConfigEntry(config) && !live(config) {
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
	for k, e := range s.entries {
		if match(k, e.public()) {
			n++
		}
	}
	return n
}

// Tombstones returns a snapshot of every tombstoned config entry (key → Entry).
func (s *Store) Tombstones() map[string]Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]Entry{}
	for k, e := range s.entries {
		if e.deleted {
			out[k] = e.public()
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
	e, ok := s.entries[key]
	if !ok {
		return
	}
	s.unplace(key, e)
	delete(s.entries, key)
	s.setUnsaved(key, false)
	s.link(key, false)
}

// link adds (or removes) a data-key entry in its config's children; config entries are skipped.
func (s *Store) link(key string, add bool) {
	config := ConfigOf(key)
	if config == key {
		return
	}
	if add {
		if s.children[config] == nil {
			s.children[config] = map[string]bool{}
		}
		s.children[config][key] = true
		return
	}
	delete(s.children[config], key)
	if len(s.children[config]) == 0 {
		delete(s.children, config)
	}
}

// Unsaved returns how many entries are kept in memory only because every shard is full. They
// are written once deletions make room, and lost if the reloader restarts first.
func (s *Store) Unsaved() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.unsaved)
}

// Stats returns the entry count and size of every shard that holds entries, and of the first.
func (s *Store) Stats() []ShardStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts := [MaxShards]int{}
	for _, e := range s.entries {
		if e.shard != memoryOnly {
			counts[e.shard]++
		}
	}
	var out []ShardStats
	for i := range MaxShards {
		if i == 0 || counts[i] > 0 || s.bytes[i] > 0 {
			out = append(out, ShardStats{Name: s.ShardName(i), Entries: counts[i], Bytes: s.bytes[i]})
		}
	}
	return out
}

func (s *Store) markDirty(key string) {
	s.dirty[key] = struct{}{}
	s.kickFlush()
}

func (s *Store) kickFlush() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}
