package state

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Keeping the shards. While the controller runs, memory is authoritative: a shard deleted,
// emptied or edited by someone else is written back from memory, not only at the next change,
// or the next start would load less than memory held. Every period Keep reads the version of
// each shard the store has read or written (metadata only, where the client can); a version that
// is neither ours nor one already checked has the shard read whole and compared with memory. The
// next flush (Run) then writes back, through the fence, every entry memory holds there that the
// shard lacks or holds otherwise, and the first shard's other keys (WriteOther) it lacks or holds
// otherwise; it removes keys of our kinds that memory does not hold there (forged, or stale
// copies). A key of no kind of ours that memory does not hold is someone else's: left alone, and
// not adopted. A deleted shard is created again whole.
//
// A check, not a watch: a watch sends the whole shard (up to 800 KB) at every write of ours,
// which the store's client is built not to read (internal/kube.StateClient). A shard a write of
// ours answered within the period is not checked, up to maxCheckGap: a deletion fails that
// write, which creates the shard again (flusher.write), so while changes flow the check costs
// no request per change; an edit is then found within maxCheckGap.
const maxCheckGap = 5 * time.Minute

// Keep checks the shards every period until ctx ends, for Run to write back what they lost.
func (s *Store) Keep(ctx context.Context, period time.Duration) {
	said := ""
	for i := range s.flusher.checkedAt {
		s.flusher.checkedAt[i] = time.Now() // Load read them
	}
	for sleep(ctx, period) {
		err := s.flusher.check(ctx, period)
		switch {
		case err != nil && err.Error() != said:
			s.log.Warn("cannot check the state ConfigMaps; checking again", "err", err, "retry_in", period)
			said = err.Error()
		case err == nil && said != "":
			s.log.Info("state ConfigMaps checked again")
			said = ""
		}
	}
}

// check compares every shard known to exist with memory, and marks what it lost for the flush.
func (f *flusher) check(ctx context.Context, period time.Duration) error {
	var errs []error
	for i := range MaxShards {
		if f.io.writtenWithin(i, period) && time.Since(f.checkedAt[i]) < maxCheckGap {
			continue
		}
		f.checkedAt[i] = time.Now()
		if err := f.checkShard(ctx, i); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkShard checks shard i. A shard being written is checked at the next round: its version
// is ours only once the write answers.
func (f *flusher) checkShard(ctx context.Context, i int) error {
	if !f.idle(i) {
		return nil
	}
	name := f.io.shardName(i)
	version, err := f.io.readVersion(ctx, i)
	if apierrors.IsNotFound(err) {
		f.restore(i, nil)
		return nil
	}
	if err != nil {
		return f.io.explain("get", name, err)
	}
	if f.io.knows(i, version) || !f.idle(i) {
		return nil
	}
	cm, err := f.io.client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		f.restore(i, nil)
		return nil
	}
	if err != nil {
		return f.io.explain("get", name, err)
	}
	f.restore(i, cm)
	return nil
}

// idle reports whether shard i is known to exist and no flush is in flight.
func (f *flusher) idle(i int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.exists[i] && f.due.flushing == 0
}

// restore compares shard i, as read (nil: deleted), with memory, and marks for the next flush
// every key to write back or remove there.
func (f *flusher) restore(i int, cm *corev1.ConfigMap) {
	f.mu.Lock()
	defer f.mu.Unlock()
	what := "edited"
	if cm == nil {
		what, cm = "deleted", &corev1.ConfigMap{}
		f.exists[i] = false // the next write of the shard creates it whole
	}
	n := f.markLost(i, cm.Data)
	f.io.setChecked(i, cm.ResourceVersion)
	if n == 0 {
		return
	}
	f.log.Warn("state ConfigMap changed under the running reloader; writing back what memory holds",
		"configmap", f.io.shardName(i), "namespace", f.io.namespace, "change", what, "keys", n)
	f.due.wake()
}

// markLost marks every key shard i must be written with, or without, to hold what memory holds,
// and returns how many. The caller holds the store's lock.
func (f *flusher) markLost(i int, data map[string]string) int {
	entries := f.entries.current()
	n := 0
	for k, e := range entries.m {
		if !e.in(i) || !e.stored {
			continue // not written there yet: due already, or going along with the next write
		}
		if v, ok := data[k]; !ok || v != encodeEntry(entries.public(k, e)) {
			f.due.mark(k)
			n++
		}
	}
	for k := range data {
		if e, ok := entries.m[k]; f.kinds.owns(k) && (!ok || !e.in(i)) {
			f.due.removeFrom(k, i)
			f.due.mark(k)
			n++
		}
	}
	if i != 0 {
		return n
	}
	for k, v := range f.others {
		if w, ok := data[k]; !ok || w != v {
			f.due.others = true
			n++
		}
	}
	return n
}
