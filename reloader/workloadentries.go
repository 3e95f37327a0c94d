package reloader

import (
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// workloadEntries are the state entries that belong to a workload, its holds, strips and
// rollback reads: named by entrykeys.Names, and forgotten when the workload goes.
type workloadEntries struct {
	annotations policy.Annotations
	caches      *caches
	store       *state.KindView
	names       entrykeys.Names
}

// lift forgets the holds and strips of a deleted workload, named by keysOf as it was deleted.
func (we *workloadEntries) lift(keys []string) {
	for _, e := range keys {
		we.store.Delete(e)
	}
}

// forgetGone forgets, at a start, the holds and strips of workloads deleted while no reloader
// watched (a deletion seen live is lift's): nothing else would ever remove them.
func (we *workloadEntries) forgetGone() {
	live := map[string]bool{}
	for _, kind := range we.caches.kinds {
		for obj := range kind.All() {
			for _, e := range we.keysOf(kind, obj) {
				live[e] = true
			}
		}
	}
	for _, e := range we.store.Keys() {
		if !live[e] {
			we.store.Delete(e)
		}
	}
}

// keysOf returns the keys a hold or a strip of the workload may have: one of each
// per config its pod spec references, whatever its annotations say of it now (a switch back
// must find the entries), and per config its annotations name or match. A config only named
// loses its entries when the annotation stops naming it while no reloader runs: a switch of
// mode, which may restart once (docs/annotations.md, "Annotating workloads").
func (we *workloadEntries) keysOf(k *workload.Kind, obj any) []string {
	meta, tmpl := k.Template(obj)
	if tmpl == nil {
		return nil
	}
	pol := we.annotations.Of(meta.GetAnnotations(), tmpl.Annotations)
	uses := policy.UsesOf(&tmpl.Spec)
	refs := append(pol.Candidates(uses), we.caches.matchedByPattern(pol, meta.GetNamespace())...)
	for r := range uses {
		refs = append(refs, r)
	}
	w := workload.Key{Kind: k.Name, Namespace: meta.GetNamespace(), Name: meta.GetName()}
	out := make([]string, 0, 3*len(refs))
	for _, r := range refs {
		out = append(out, we.names.Hold(w, r), we.names.Strip(w, r), we.names.RollbackRead(w, r))
	}
	return out
}
