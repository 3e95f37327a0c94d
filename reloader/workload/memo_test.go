package workload

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/cache"
)

// A change reads its workload several times (the config's sync, the workload's, its update
// event): each read decoded it again, the largest allocation of a change.
func TestCachedDecodesAVersionOnce(t *testing.T) {
	k := cachedDeployments(t, 1)
	a, _, _ := k.Cached("ns/app-0")
	b, _, _ := k.Cached("ns/app-0")
	if a != b {
		t.Fatal("Cached decoded the same version twice")
	}
	views := 0
	view := func() (View, bool) { views++; return View{Obj: a}, true }
	k.ViewOf(t, a, view)
	if v, ok := k.ViewOf(t, b, view); !ok || v.Obj != a || views != 1 {
		t.Fatalf("ViewOf made %d views of one version, want 1", views)
	}
	if k.ViewOf("another rule", a, view); views != 2 {
		t.Fatal("ViewOf shared a view made by another owner")
	}
	if err := k.CheckShared(); err != nil {
		t.Fatal(err)
	}
}

// A new version is a new Packed: it is decoded anew, and an old one never read for it.
func TestCachedDecodesANewVersion(t *testing.T) {
	k := cachedDeployments(t, 1)
	a, _, _ := k.Cached("ns/app-0")
	d := a.(*appsv1.Deployment).DeepCopy()
	d.ResourceVersion = "2"
	if err := k.Informer.GetStore().Update(Pack(PackDeployment, d)); err != nil {
		t.Fatal(err)
	}
	b, _, _ := k.Cached("ns/app-0")
	if b == a || b.(*appsv1.Deployment).ResourceVersion != "2" {
		t.Fatalf("Cached returned the version before the update")
	}
}

// The memo keeps memoSize versions: more are decoded again, never held.
func TestDecodedIsBounded(t *testing.T) {
	k := cachedDeployments(t, 2*memoSize)
	first, _, _ := k.Cached("ns/app-0")
	for i := 1; i < 2*memoSize; i++ {
		k.Cached(fmt.Sprintf("ns/app-%d", i))
	}
	held := 0
	for _, e := range k.memo.at {
		if e.p != nil {
			held++
		}
	}
	if again, _, _ := k.Cached("ns/app-0"); again == first || held != memoSize {
		t.Fatalf("the memo holds %d versions, want %d, the oldest evicted", held, memoSize)
	}
}

// A reader that writes a shared object is caught.
func TestCheckSharedTellsAWrite(t *testing.T) {
	k := cachedDeployments(t, 1)
	obj, _, _ := k.Cached("ns/app-0")
	obj.(*appsv1.Deployment).Spec.Template.Annotations = map[string]string{"written": "yes"}
	if err := k.CheckShared(); err == nil {
		t.Fatal("CheckShared did not tell a written shared object")
	}
}

// Anything else than a packed workload is returned as Unpacked returns it.
func TestDecodedPassesOtherObjects(t *testing.T) {
	k := cachedDeployments(t, 0)
	d := &appsv1.Deployment{}
	if k.Decoded(d) != any(d) {
		t.Fatal("Decoded changed an object that is not packed")
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: Pack(PackDeployment, d)}
	if _, ok := k.Decoded(tomb).(cache.DeletedFinalStateUnknown).Obj.(*appsv1.Deployment); !ok {
		t.Fatal("Decoded did not decode a tombstone's object")
	}
}
