package reloader

import (
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// The namespace index is added on first use, indexes what the cache already holds, and follows
// later changes; concurrent first uses both get the answer.
func TestInNamespaceAddsTheNamespaceIndexOnFirstUseOnly(t *testing.T) {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	store := inf.GetIndexer()
	add := func(ns, name string) {
		if err := store.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	names := func(objs []any) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.(*corev1.ConfigMap).Name)
		}
		slices.Sort(out)
		return out
	}
	add("a", "one")
	add("a", "two")
	add("b", "three")
	if _, ok := store.GetIndexers()[cache.NamespaceIndex]; ok {
		t.Fatal("the namespace index exists before any use")
	}

	var wg sync.WaitGroup
	got := make([][]string, 2)
	for i := range got {
		wg.Go(func() { got[i] = names(inNamespace(inf, "a")) })
	}
	wg.Wait()
	for i, g := range got {
		if !slices.Equal(g, []string{"one", "two"}) {
			t.Errorf("first use %d: inNamespace(a) = %v, want [one two]", i, g)
		}
	}
	if _, ok := store.GetIndexers()[cache.NamespaceIndex]; !ok {
		t.Fatal("no namespace index after the first use")
	}

	add("a", "four")
	if err := store.Delete(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "one"}}); err != nil {
		t.Fatal(err)
	}
	if g := names(inNamespace(inf, "a")); !slices.Equal(g, []string{"four", "two"}) {
		t.Errorf("after an add and a delete: inNamespace(a) = %v, want [four two]", g)
	}
	if g := names(inNamespace(inf, "c")); len(g) != 0 {
		t.Errorf("inNamespace(c) = %v, want none", g)
	}
}
