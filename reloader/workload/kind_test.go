package workload

import (
	"fmt"
	"runtime"
	"testing"
	"weak"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// cachedDeployments is a Kind whose cache holds n packed Deployments.
func cachedDeployments(t *testing.T, n int) *Kind {
	t.Helper()
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &appsv1.Deployment{}, 0, cache.Indexers{})
	for i := range n {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("app-%d", i)}}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox"}}
		if err := inf.GetStore().Add(Pack(PackDeployment, d)); err != nil {
			t.Fatal(err)
		}
	}
	return &Kind{Name: "Deployment", Informer: inf}
}

func TestAllYieldsEveryWorkloadDecoded(t *testing.T) {
	k := cachedDeployments(t, 5)
	names := map[string]bool{}
	for obj := range k.All() {
		d, ok := obj.(*appsv1.Deployment)
		if !ok {
			t.Fatalf("All yielded %T, want a decoded *appsv1.Deployment", obj)
		}
		names[d.Name] = true
	}
	if len(names) != 5 {
		t.Fatalf("All yielded %d Deployments, want 5", len(names))
	}
}

// The passes over every workload after the sync (the annotation check, the entries of
// workloads gone) held them all decoded at once: the start-up's largest live data.
func TestAllHoldsOneDecodedWorkloadAtATime(t *testing.T) {
	const n = 50
	k := cachedDeployments(t, n)
	var seen []weak.Pointer[appsv1.Deployment]
	i := 0
	for obj := range k.All() {
		seen = append(seen, weak.Make(obj.(*appsv1.Deployment)))
		if i++; i < n {
			continue
		}
		runtime.GC()
		alive := 0
		for _, w := range seen[:n-1] {
			if w.Value() != nil {
				alive++
			}
		}
		if alive > 1 {
			t.Fatalf("%d of the %d workloads decoded before the last are still alive: All holds them", alive, n-1)
		}
	}
}
