package workload

import (
	"fmt"
	"reflect"
	"sync"
)

// memoSize bounds the decodes a kind keeps: enough for the workloads of the changes in flight,
// each read several times while its change is handled (the sync of the config, its own sync,
// its update event, the syncs that event queues). A stripped Deployment decoded and viewed takes
// about 4.5 KB, and may keep a replaced Packed alive: at most about 160 KB a kind.
const memoSize = 32

// memo keeps a kind's last memoSize decoded Packed objects, each with the View made of it, so
// that a change decodes and parses a workload once, not at each read. The cache replaces a
// Packed on each update, never changes one: an entry is never stale, only evicted, oldest first.
// The decoded objects and their Views are shared by every reader: nothing may write them.
type memo struct {
	mu   sync.Mutex
	next int
	at   [memoSize]memoEntry
}

type memoEntry struct {
	p     *Packed
	obj   any
	owner any // who made view, with its own rule; nil: no view yet
	view  View
	ok    bool
}

// find is the entry of p, or nil; m.mu is held.
func (m *memo) find(p *Packed) *memoEntry {
	for i := range m.at {
		if m.at[i].p == p {
			return &m.at[i]
		}
	}
	return nil
}

// findObj is the entry whose decoded object is obj, or nil; m.mu is held. Entries hold pointers
// only, so the comparison never panics.
func (m *memo) findObj(obj any) *memoEntry {
	for i := range m.at {
		if m.at[i].p != nil && m.at[i].obj == obj {
			return &m.at[i]
		}
	}
	return nil
}

// decoded is p decoded, shared with every other reader of p while the memo keeps it.
func (m *memo) decoded(p *Packed) any {
	m.mu.Lock()
	if e := m.find(p); e != nil {
		m.mu.Unlock()
		return e.obj
	}
	m.mu.Unlock()
	obj, err := p.decode()
	if err != nil {
		panic(err) // as in Unpacked
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.find(p); e != nil {
		return e.obj // decoded meanwhile by another reader: one object per Packed
	}
	m.at[m.next] = memoEntry{p: p, obj: obj}
	m.next = (m.next + 1) % memoSize
	return obj
}

// Decoded is a cached object as Unpacked returns it, but a packed workload's decode is shared
// with the other readers of the same version: the caller must not write it.
func (k *Kind) Decoded(obj any) any {
	if p, ok := obj.(*Packed); ok {
		return k.memo.decoded(p)
	}
	return Unpacked(obj)
}

// ViewOf is the View that owner makes of obj (an object Cached or Decoded returned) with mk:
// made once while the memo keeps obj, and shared. owner stands for what mk depends on
// besides obj, which must not change.
func (k *Kind) ViewOf(owner, obj any, mk func() (View, bool)) (View, bool) {
	k.memo.mu.Lock()
	e := k.memo.findObj(obj)
	if e != nil && e.owner == owner {
		v, ok := e.view, e.ok
		k.memo.mu.Unlock()
		return v, ok
	}
	k.memo.mu.Unlock()
	v, ok := mk()
	k.memo.mu.Lock()
	defer k.memo.mu.Unlock()
	if e := k.memo.findObj(obj); e != nil {
		e.owner, e.view, e.ok = owner, v, ok
	}
	return v, ok
}

// CheckShared reports a shared decoded object that differs from a fresh decode of its Packed:
// a reader wrote it. For tests.
func (k *Kind) CheckShared() error {
	k.memo.mu.Lock()
	defer k.memo.mu.Unlock()
	for _, e := range k.memo.at {
		if e.p == nil {
			continue
		}
		fresh, err := e.p.decode()
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(fresh, e.obj) {
			return fmt.Errorf("%s %s/%s: a shared decoded object was written", k.Name, e.p.Namespace, e.p.Name)
		}
	}
	return nil
}
