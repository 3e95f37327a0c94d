package state

import (
	"context"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// MaxShards is how many state ConfigMaps may exist. The shipped Role names each of them, and
	// Load reads them in order (one GET apiece) until two in a row are missing (loadGap). 32 × ShardBudget hold
	// 141,696 entries of the mix bench's read configs (54-byte keys: 185 bytes each counted),
	// whose 100,000 fill 23 shards (doc.go).
	MaxShards = 32
	// ShardBudget is how many bytes one shard takes, each entry counted at its cost in the
	// object etcd stores (cost: its key twice, as managedFields name it again), before the next
	// shard is used. The data alone stays under it, so under the API server's 1 MiB; the object
	// stays more than 256 KiB under etcd's 1.5 MiB (1,572,864 bytes) per request.
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

	mu sync.Mutex
	t  table // the entries and where they sit (shards.go); guarded by mu
	// configs is the one view of the config entries (Configs).
	configs Configs
	flusher flusher // writes the changes behind, and the first shard's other keys (flush.go)
	// OnWrite, if set, is told of every shard write attempt and its error (for metrics).
	OnWrite func(shard string, err error)
	// watermark is the highest shard resourceVersion the last Load read, stamps the shards'
	// FlushedAtKey values it read (Watermark); guarded by mu.
	watermark uint64
	stamps    []loadedStamp
	// corrupt are the keys the last Load dropped as corrupt (DroppedAsCorrupt); guarded by mu.
	corrupt map[string]struct{}
}

// memoryOnly is the shard of an entry that no shard had room for.
const memoryOnly = -1

// shardSet is a set of shard numbers.
type shardSet [MaxShards]bool

// New returns a Store for the shards named name, name-1, ... in namespace; client serves that
// namespace. Besides config entries it keeps entries of the kinds given, for their owners.
func New(client ConfigMapClient, namespace, name string, log *slog.Logger, kinds ...EntryKind) *Store {
	io := &shardIO{client: client, namespace: namespace, name: name, log: log}
	s := &Store{kinds: kinds, io: io, log: log}
	s.flusher = flusher{io: io, log: log, kinds: s.kinds, mu: &s.mu, entries: &s.t, onWrite: &s.OnWrite,
		due: newPending(), others: map[string]string{}, writing: make(chan struct{}, 1)}
	s.t = table{
		kinds:    kinds,
		entries:  newEntryMap(),
		children: children{},
		room:     room{budget: ShardBudget, unsaved: map[string]struct{}{}, log: log},
		spare:    map[string]struct{}{},
		due:      &s.flusher.due,
	}
	s.configs = Configs{mu: &s.mu, t: &s.t, log: log}
	return s
}

// Configs returns the view of the config entries, for the parts that record configs.
func (s *Store) Configs() *Configs { return &s.configs }

// ShardName returns the name of shard i.
func (s *Store) ShardName(i int) string { return s.io.shardName(i) }

// Fence makes every later Load claim the shards and every write conditional on the shard's
// version, as writer (fence.go). Call it before Load.
func (s *Store) Fence(writer string) { s.io.fence(writer) }

// Unsaved returns how many entries are kept in memory only because every shard is full. They
// are written once deletions make room, and lost if the reloader restarts first.
func (s *Store) Unsaved() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.t.room.unsaved)
}

// Stats returns the entry count and size of every shard that holds entries, and of the first.
func (s *Store) Stats() []ShardStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts := [MaxShards]int{}
	for _, e := range s.t.entries.m {
		if e.shard != memoryOnly {
			counts[e.shard]++
		}
	}
	var out []ShardStats
	for i := range MaxShards {
		if i == 0 || counts[i] > 0 || s.t.room.bytes[i] > 0 {
			out = append(out, ShardStats{Name: s.ShardName(i), Entries: counts[i], Bytes: s.t.room.bytes[i]})
		}
	}
	return out
}
