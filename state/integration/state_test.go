package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/reloader/reloader/state"
)

func TestThirtyThousandEntriesStayUnderTheObjectLimit(t *testing.T) {
	ctx := context.Background()
	ns := cluster.NewNamespace(t)
	s := newStore(cluster.Client(), ns, nil)
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 30000
	for i := range n {
		// All-namespaces keys with realistic name lengths.
		s.Configs().Set(state.Key("ConfigMap", fmt.Sprintf("team-%03d", i%500), fmt.Sprintf("service-%05d-config", i)), hashOf(fmt.Sprint(i)))
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("flush 30000 entries (the API server rejects any ConfigMap over 1 MiB): %v", err)
	}
	cms, err := cluster.Client().CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, cm := range cms.Items {
		size := 0
		for k, v := range cm.Data {
			size += len(k) + len(v)
		}
		if size > 1<<20 {
			t.Errorf("%s holds %d bytes, over 1 MiB", cm.Name, size)
		}
		delete(cm.Data, state.FlushedAtKey) // each write's stamp
		total += len(cm.Data)
		t.Logf("%s: %d entries, %d bytes", cm.Name, len(cm.Data), size)
	}
	if total != n {
		t.Fatalf("stored %d entries, want %d", total, n)
	}
	again := newStore(cluster.Client(), ns, nil)
	if _, err := again.Load(ctx); err != nil {
		t.Fatal(err)
	}
	entries := 0
	for _, st := range again.Stats() {
		entries += st.Entries
	}
	if entries != n {
		t.Fatalf("reloaded %d entries, want %d", entries, n)
	}
}

func TestConcurrentWritersKeepEachOthersKeys(t *testing.T) {
	ctx := context.Background()
	ns := cluster.NewNamespace(t)
	const writers, keys = 4, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			s := newStore(cluster.Client(), ns, nil)
			// Every writer races to create the missing ConfigMap, then patches its own keys.
			if _, err := s.Load(ctx); err != nil {
				t.Error(err)
				return
			}
			for k := range keys {
				s.Configs().Set(state.Key("Secret", "", fmt.Sprintf("w%d-k%d", w, k)), hashOf(fmt.Sprint(w, k)))
				if k%10 == 9 {
					if err := s.Flush(ctx); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	cm, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(ctx, "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(cm.Data, state.FlushedAtKey) // each write's stamp
	if len(cm.Data) != writers*keys {
		t.Fatalf("state holds %d keys, want %d: a writer clobbered another's keys", len(cm.Data), writers*keys)
	}
}

func TestDeletedStateIsRecreatedFromMemory(t *testing.T) {
	ctx := context.Background()
	ns := cluster.NewNamespace(t)
	var log bytes.Buffer
	s := newStore(cluster.Client(), ns, &log)
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	s.Configs().Set("v1.ConfigMap_a", hashOf("a"))
	s.Configs().Set("v1.ConfigMap_b", hashOf("b"))
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Client().CoreV1().ConfigMaps(ns).Delete(ctx, "reloader-state", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Configs().Set("v1.ConfigMap_c", hashOf("c"))
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cm, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(ctx, "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(cm.Data, state.FlushedAtKey) // the write's stamp
	if len(cm.Data) != 3 {
		t.Fatalf("recreated state holds %v, want a, b and c", cm.Data)
	}
	if !strings.Contains(log.String(), "state ConfigMap is missing; recreating it from memory") {
		t.Fatalf("no log line about the recreation:\n%s", log.String())
	}
}

func TestMissingPermissionIsNamed(t *testing.T) {
	ctx := context.Background()
	ns := cluster.NewNamespace(t)
	client := cluster.Client()
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reloader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// get but no create: the reloader cannot make the missing state ConfigMap.
	if _, err := client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "get-only"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "get-only"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "get-only"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reloader", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := cluster.ServiceAccountConfig(ctx, ns, "reloader")
	if err != nil {
		t.Fatal(err)
	}
	store := newStore(kubernetes.NewForConfigOrDie(cfg), ns, nil)
	// RBAC takes a moment to see the new binding; until then even get is refused.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = store.Load(ctx)
		if err != nil && strings.Contains(err.Error(), `lacks permission "create" on configmaps`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Load error = %v, want one naming the missing create permission", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
