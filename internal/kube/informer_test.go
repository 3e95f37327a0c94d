package kube

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
)

// streamingServer serves an empty ConfigMap list either way: a list, or a watch that asks for
// the initial events and gets the bookmark that ends them.
type streamingServer struct {
	lists atomic.Int32
}

func (s *streamingServer) List(context.Context, metav1.ListOptions) (*corev1.ConfigMapList, error) {
	s.lists.Add(1)
	return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
}

func (s *streamingServer) Watch(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewFakeWithChanSize(1, false)
	if o.SendInitialEvents != nil && *o.SendInitialEvents {
		w.Action(watch.Bookmark, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1",
			Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
	}
	return w, nil
}

// syncedLog starts an informer on a streamingServer and returns, once it synced, how many
// lists it made and what the link logged.
func syncedLog(t *testing.T, link *Link, log *strings.Builder, mu *sync.Mutex) (int32, string) {
	t.Helper()
	srv := &streamingServer{}
	inf := NewInformer[*corev1.ConfigMapList](link, srv, &corev1.ConfigMap{}, NoTweak, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	mu.Lock()
	defer mu.Unlock()
	return srv.lists.Load(), log.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// noWatchList is client-go's feature gates with WatchListClient off.
type noWatchList struct{ clientfeatures.Gates }

func (g noWatchList) Enabled(f clientfeatures.Feature) bool {
	return f != clientfeatures.WatchListClient && g.Gates.Enabled(f)
}

func TestAnInformerStreamsItsListAndSaysOnceWhenItListsInstead(t *testing.T) {
	var mu sync.Mutex
	var log strings.Builder
	link := &Link{Log: slog.New(slog.NewTextHandler(lockedWriter{&mu, &log}, nil)), MaxDelay: 10 * time.Millisecond}
	if lists, said := syncedLog(t, link, &log, &mu); lists != 0 || strings.Contains(said, "instead of streaming") {
		t.Fatalf("a server that streams was listed %d times; log %q", lists, said)
	}
	gates := clientfeatures.FeatureGates()
	clientfeatures.ReplaceFeatureGates(noWatchList{gates})
	defer clientfeatures.ReplaceFeatureGates(gates)
	for range 2 {
		lists, said := syncedLog(t, link, &log, &mu)
		if lists != 1 || strings.Count(said, "instead of streaming") != 1 || !strings.Contains(said, "*v1.ConfigMap") {
			t.Fatalf("without streaming: %d lists, log %q; want 1 list and one note naming the resource", lists, said)
		}
	}
}
