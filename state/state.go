// Package state owns the reloader-state ConfigMaps: the persisted content hash of every tracked
// ConfigMap and Secret, modelled on Collaborne's kubernetes-reloader. It knows the ConfigMap
// format and nothing about workloads.
//
// An entry's key is "v1.<Kind>_<name>" when the reloader watches one namespace, and
// "v1.<Kind>_<namespace>_<name>" when it watches all of them. Namespace and object names never
// contain '_', so the encoding is unambiguous. A key longer than a ConfigMap key may be (253) is
// replaced by "v1.<Kind>__<sha1 of namespace/name>", which no name can produce. The value is the
// config's content hash.
//
// One ConfigMap holds at most 1 MiB, so entries spread over shards: <name>, <name>-1, ... up to
// MaxShards. A new entry goes to the first shard with room; an entry never moves. Writes are JSON
// merge patches of the changed keys only, so keys written by others survive and no
// resourceVersion conflict can arise.
package state

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// MaxShards is how many state ConfigMaps may exist. The shipped Role names each of them.
	MaxShards = 8
	// ShardBudget is how many bytes of keys and values one shard takes before the next is used,
	// well below the API server's 1 MiB limit on a ConfigMap.
	ShardBudget = 800 * 1024
	maxKeyLen   = 253
)

// Kinds whose entries the store prunes; other keys in the ConfigMaps belong to someone else.
var ownPrefixes = []string{"v1.ConfigMap_", "v1.Secret_"}

// Key returns the entry key of a config. namespace is empty in single-namespace mode.
func Key(kind, namespace, name string) string {
	prefix := "v1." + kind + "_"
	k := prefix + name
	if namespace != "" {
		k = prefix + namespace + "_" + name
	}
	if len(k) <= maxKeyLen {
		return k
	}
	sum := sha1.Sum([]byte(namespace + "/" + name))
	return prefix + "_" + hex.EncodeToString(sum[:])
}

// KeyOf returns the entry key of one data key of a config, for workloads that read only that key:
// "<config entry>__<data key>". The config part never contains "__" past its kind prefix, so the
// split is unambiguous; an over-long key ends in "__-<sha1 of the data key>" instead.
func KeyOf(config, dataKey string) string {
	k := config + "__" + dataKey
	if len(k) <= maxKeyLen {
		return k
	}
	sum := sha1.Sum([]byte(dataKey))
	return config + "__-" + hex.EncodeToString(sum[:])
}

// ConfigOf returns the config entry key that key belongs to: key itself, or the config part of a
// data-key entry.
func ConfigOf(key string) string {
	for _, p := range ownPrefixes {
		rest, ok := strings.CutPrefix(key, p)
		if !ok {
			continue
		}
		// A hashed config key starts its rest with '_': skip it before looking for "__".
		skip := 0
		if strings.HasPrefix(rest, "_") {
			skip = 1
		}
		if i := strings.Index(rest[skip:], "__"); i >= 0 {
			return p + rest[:skip+i]
		}
		return key
	}
	return key
}

// IsHash reports whether v has the form of a content hash: 40 lower-case hex digits.
func IsHash(v string) bool {
	if len(v) != 40 {
		return false
	}
	for _, c := range v {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ShardStats describes one state ConfigMap for metrics.
type ShardStats struct {
	Name    string
	Entries int
	Bytes   int
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

	mu      sync.Mutex
	entries map[string]entry
	// children indexes each config's data-key entries, so deleting a config does not scan.
	children map[string]map[string]bool
	bytes    [MaxShards]int
	exists   [MaxShards]bool // shards known to exist; a new one is created, not patched
	dirty    map[string]struct{}
	kick     chan struct{}
	// OnWrite, if set, is told of every shard write attempt and its error (for metrics).
	OnWrite func(shard string, err error)
}

type entry struct {
	value string
	shard int
}

// New returns a Store for the shards named name, name-1, ... in namespace; client serves that
// namespace.
func New(client ConfigMapClient, namespace, name string, log *slog.Logger) *Store {
	return &Store{
		client:    client,
		namespace: namespace,
		name:      name,
		log:       log,
		entries:   map[string]entry{},
		children:  map[string]map[string]bool{},
		dirty:     map[string]struct{}{},
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

// Load reads every shard, creating the first if it is missing. It reports first=true when no
// entry of ours exists anywhere: the controller has never run here. Corrupt values are dropped
// and logged, so their configs count as new rather than changed.
func (s *Store) Load(ctx context.Context) (first bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range MaxShards {
		cm, err := s.client.Get(ctx, s.ShardName(i), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if i == 0 {
				if err := s.create(ctx, 0); err != nil {
					return false, err
				}
			}
			continue
		}
		if err != nil {
			return false, s.explain("get", s.ShardName(i), err)
		}
		s.exists[i] = true
		s.loadShard(i, cm.Data)
	}
	return len(s.entries) == 0, nil
}

func (s *Store) loadShard(i int, data map[string]string) {
	for k, v := range data {
		s.bytes[i] += len(k) + len(v)
		if !isOwn(k) {
			continue
		}
		if !IsHash(v) {
			s.log.Warn("state entry is corrupt; its config will be treated as new and re-recorded without a restart",
				"configmap", s.ShardName(i), "key", k)
			s.dirty[k] = struct{}{}
			continue
		}
		s.entries[k] = entry{value: v, shard: i}
		s.link(k, true)
	}
}

func isOwn(key string) bool {
	for _, p := range ownPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Get returns the stored hash of key.
func (s *Store) Get(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	return e.value, ok
}

// Set records value for key; it is written by the next flush.
func (s *Store) Set(key, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if ok && e.value == value {
		return
	}
	if !ok {
		e.shard = s.shardFor(len(key) + len(value))
		if e.shard < 0 {
			s.log.Error("state is full: the entry is kept in memory only and will not survive a restart",
				"key", key, "shards", MaxShards, "budget_bytes", ShardBudget)
			e.shard = MaxShards - 1
		}
	}
	s.bytes[e.shard] += len(value) - len(e.value)
	if !ok {
		s.bytes[e.shard] += len(key)
	}
	e.value = value
	s.entries[key] = e
	s.link(key, true)
	s.markDirty(key)
}

// DeleteEntry removes one entry, such as a single data-key entry; the removal is written by the
// next flush.
func (s *Store) DeleteEntry(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteLocked(key)
}

// Delete removes a config's entry and its data-key entries; the removal is written by the next
// flush.
func (s *Store) Delete(config string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.children[config] {
		s.deleteLocked(k)
	}
	s.deleteLocked(config)
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

func (s *Store) deleteLocked(key string) {
	e, ok := s.entries[key]
	if !ok {
		return
	}
	s.bytes[e.shard] -= len(key) + len(e.value)
	delete(s.entries, key)
	s.link(key, false)
	s.markDirty(key)
}

// Prune deletes every entry of ours whose config is not live, and returns how many it deleted.
// live is asked about config entry keys only.
func (s *Store) Prune(live func(config string) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.entries {
		if !live(ConfigOf(k)) {
			s.deleteLocked(k)
			n++
		}
	}
	return n
}

func (s *Store) shardFor(size int) int {
	for i := range MaxShards {
		if s.bytes[i]+size <= ShardBudget {
			return i
		}
	}
	return -1
}

func (s *Store) markDirty(key string) {
	s.dirty[key] = struct{}{}
	s.kickFlush()
}

// Stats returns the entry count and size of every shard that holds entries, and of the first.
func (s *Store) Stats() []ShardStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts := [MaxShards]int{}
	for _, e := range s.entries {
		counts[e.shard]++
	}
	var out []ShardStats
	for i := range MaxShards {
		if i == 0 || counts[i] > 0 || s.bytes[i] > 0 {
			out = append(out, ShardStats{Name: s.ShardName(i), Entries: counts[i], Bytes: s.bytes[i]})
		}
	}
	return out
}

// Run flushes dirty entries until ctx ends, waiting linger after the first change so that
// changes arriving together share one patch per shard. It flushes once more on the way out.
func (s *Store) Run(ctx context.Context, linger time.Duration) {
	backoff := linger
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
		select {
		case <-ctx.Done():
		case <-time.After(linger):
		}
		if err := s.Flush(context.WithoutCancel(ctx)); err != nil {
			s.log.Error("write state", "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			backoff = min(2*backoff+time.Second, 30*time.Second)
			s.kickFlush()
			continue
		}
		backoff = linger
	}
}

func (s *Store) kickFlush() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Flush writes every dirty entry: one merge patch per shard.
func (s *Store) Flush(ctx context.Context) error {
	patches := s.takeDirty()
	var firstErr error
	for shard, changes := range patches {
		err := s.write(ctx, shard, changes)
		if s.OnWrite != nil {
			s.OnWrite(s.ShardName(shard), err)
		}
		if err != nil {
			s.requeue(changes)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	return firstErr
}

// takeDirty groups the dirty keys by shard; a nil value deletes the key.
func (s *Store) takeDirty() map[int]map[string]*string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]map[string]*string{}
	for k := range s.dirty {
		e, ok := s.entries[k]
		var v *string
		if ok {
			v = &e.value
		}
		// A deleted key is removed from every shard it could be in: we no longer know which.
		shards := []int{e.shard}
		if !ok {
			shards = s.existingShards()
		}
		for _, i := range shards {
			if out[i] == nil {
				out[i] = map[string]*string{}
			}
			out[i][k] = v
		}
	}
	s.dirty = map[string]struct{}{}
	return out
}

// existingShards are the shards that hold bytes, where a deleted key may still be written.
func (s *Store) existingShards() []int {
	out := []int{0}
	for i := 1; i < MaxShards; i++ {
		if s.bytes[i] > 0 {
			out = append(out, i)
		}
	}
	return out
}

func (s *Store) requeue(changes map[string]*string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range changes {
		s.dirty[k] = struct{}{}
	}
}

func (s *Store) write(ctx context.Context, shard int, changes map[string]*string) error {
	body, err := json.Marshal(map[string]any{"data": changes})
	if err != nil {
		return fmt.Errorf("encode state patch: %w", err)
	}
	name := s.ShardName(shard)
	s.mu.Lock()
	known := s.exists[shard]
	s.mu.Unlock()
	if known {
		_, err = s.client.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
		if !apierrors.IsNotFound(err) {
			return s.explain("patch", name, err)
		}
		s.log.Warn("state ConfigMap is missing; recreating it from memory", "configmap", name, "namespace", s.namespace)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.create(ctx, shard)
}

// create writes shard i with every in-memory entry it holds. The caller holds s.mu.
func (s *Store) create(ctx context.Context, i int) error {
	data := map[string]string{}
	for k, e := range s.entries {
		if e.shard == i {
			data[k] = e.value
		}
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: s.ShardName(i), Namespace: s.namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "reloader"}},
		Data: data,
	}
	_, err := s.client.Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Someone created it between our read and our create: merge ours in.
		return s.patchAll(ctx, i, data)
	}
	if err == nil {
		s.exists[i] = true
		s.log.Info("created state ConfigMap", "configmap", cm.Name, "namespace", s.namespace, "entries", len(data))
	}
	return s.explain("create", cm.Name, err)
}

func (s *Store) patchAll(ctx context.Context, i int, data map[string]string) error {
	body, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		return fmt.Errorf("encode state patch: %w", err)
	}
	_, err = s.client.Patch(ctx, s.ShardName(i), types.MergePatchType, body, metav1.PatchOptions{})
	if err == nil {
		s.exists[i] = true
	}
	return s.explain("patch", s.ShardName(i), err)
}

// explain wraps err and, for a permission error, names the verb and resource the reloader lacks.
func (s *Store) explain(verb, name string, err error) error {
	if err == nil {
		return nil
	}
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%s state ConfigMap %s/%s: the reloader lacks permission %q on configmaps in namespace %q; grant it in the Role (or create the ConfigMap yourself): %w",
			verb, s.namespace, name, verb, s.namespace, err)
	}
	return fmt.Errorf("%s state ConfigMap %s/%s: %w", verb, s.namespace, name, err)
}
