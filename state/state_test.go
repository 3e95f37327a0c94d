package state_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/reloader/reloader/internal/dev/testcluster"
	"github.com/reloader/reloader/state"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) {
	// A fuzz worker process runs only the fuzz target, which needs no cluster: starting one per
	// worker would cost seconds and a kube-apiserver each.
	if f := flag.Lookup("test.fuzzworker"); f != nil {
		flag.Parse()
		if f.Value.String() == "true" {
			os.Exit(m.Run())
		}
	}
	os.Exit(testcluster.Main(m, testcluster.Options{Log: os.Stderr}, &cluster))
}

func hashOf(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// keyedOf is a keyed hash, in the form a Secret's entries hold (package confighash).
func keyedOf(s string) string { return "hmac-2b39b88d-" + hashOf(s) }

// newStore logs to log, or to stderr when log is nil.
func newStore(client kubernetes.Interface, ns string, log *bytes.Buffer) *state.Store {
	var w io.Writer = os.Stderr
	if log != nil {
		w = log
	}
	return state.New(client.CoreV1().ConfigMaps(ns), ns, "reloader-state", textLog(w))
}

func textLog(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, nil))
}

func TestKeyEncoding(t *testing.T) {
	long := strings.Repeat("a", 250)
	tests := []struct {
		name            string
		kind, ns, cname string
		want            string
	}{
		{"single namespace", "ConfigMap", "", "app", "v1.ConfigMap_app"},
		{"secret", "Secret", "", "db.creds", "v1.Secret_db.creds"},
		{"all namespaces carries the namespace", "ConfigMap", "team-a", "app", "v1.ConfigMap_team-a_app"},
		{"over-long key is hashed", "ConfigMap", "ns", long, "v1.ConfigMap__" + hashOf("ns/"+long)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := state.Key(tt.kind, tt.ns, tt.cname)
			if got != tt.want {
				t.Fatalf("Key = %q, want %q", got, tt.want)
			}
			if kind := state.KindOf(got); kind != tt.kind {
				t.Fatalf("KindOf(%q) = %q, want %q", got, kind, tt.kind)
			}
			if kind := state.KindOf(state.KeyOf(got, "k")); kind != tt.kind {
				t.Fatalf("KindOf of a data-key entry of %q = %q, want %q", got, kind, tt.kind)
			}
		})
	}
	if kind := state.KindOf("someone-else"); kind != "" {
		t.Fatalf("KindOf of a key that is not ours = %q", kind)
	}
}

func TestDataKeyEntriesMapBackToTheirConfig(t *testing.T) {
	long := strings.Repeat("b", 250)
	tests := []struct{ config, dataKey string }{
		{state.Key("ConfigMap", "", "app"), "x"},
		{state.Key("ConfigMap", "ns", "app.v2"), "config__file.yaml"},
		{state.Key("Secret", "", long), "k"},
		{state.Key("ConfigMap", "", "app"), long},
	}
	for _, tt := range tests {
		k := state.KeyOf(tt.config, tt.dataKey)
		if len(k) > 253 {
			t.Errorf("KeyOf(%q, %q) is %d long", tt.config, tt.dataKey, len(k))
		}
		if got := state.ConfigOf(k); got != tt.config {
			t.Errorf("ConfigOf(%q) = %q, want %q", k, got, tt.config)
		}
		if got := state.ConfigOf(tt.config); got != tt.config {
			t.Errorf("ConfigOf(%q) = %q, want itself", tt.config, got)
		}
	}
}

func TestKeysNeverCollide(t *testing.T) {
	// '_' appears in no Kubernetes name, so namespace/name splits stay apart.
	pairs := [][2][3]string{
		{{"ConfigMap", "a-b", "c"}, {"ConfigMap", "a", "b-c"}},
		{{"ConfigMap", "", "app-config"}, {"ConfigMap", "", "app.config"}},
		{{"ConfigMap", "", "x"}, {"Secret", "", "x"}},
	}
	for _, p := range pairs {
		a, b := state.Key(p[0][0], p[0][1], p[0][2]), state.Key(p[1][0], p[1][1], p[1][2])
		if a == b {
			t.Errorf("%v and %v share key %q", p[0], p[1], a)
		}
	}
}

func TestFirstLoadCreatesStateAndReportsFirstStart(t *testing.T) {
	ctx := context.Background()
	ns := cluster.NewNamespace(t)
	s := newStore(cluster.Client(), ns, nil)
	first, err := s.Load(ctx)
	if err != nil || !first {
		t.Fatalf("Load = %v, %v; want first start", first, err)
	}
	if _, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(ctx, "reloader-state", metav1.GetOptions{}); err != nil {
		t.Fatalf("state ConfigMap not created: %v", err)
	}
	s.Set(state.Key("ConfigMap", "", "app"), hashOf("1"))
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	again := newStore(cluster.Client(), ns, nil)
	if first, err := again.Load(ctx); err != nil || first {
		t.Fatalf("second Load = %v, %v; want not first", first, err)
	}
	if e, _ := again.Get(state.Key("ConfigMap", "", "app")); e != (state.Entry{Hash: hashOf("1")}) {
		t.Fatalf("reloaded entry = %+v", e)
	}
}

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
		s.Set(state.Key("ConfigMap", fmt.Sprintf("team-%03d", i%500), fmt.Sprintf("service-%05d-config", i)), hashOf(fmt.Sprint(i)))
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
				s.Set(state.Key("Secret", "", fmt.Sprintf("w%d-k%d", w, k)), hashOf(fmt.Sprint(w, k)))
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
	s.Set("v1.ConfigMap_a", hashOf("a"))
	s.Set("v1.ConfigMap_b", hashOf("b"))
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Client().CoreV1().ConfigMaps(ns).Delete(ctx, "reloader-state", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Set("v1.ConfigMap_c", hashOf("c"))
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cm, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(ctx, "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.Data) != 3 {
		t.Fatalf("recreated state holds %v, want a, b and c", cm.Data)
	}
	if !strings.Contains(log.String(), "state ConfigMap is missing; recreating it from memory") {
		t.Fatalf("no log line about the recreation:\n%s", log.String())
	}
}

func TestCorruptEntryIsDroppedWithALogLine(t *testing.T) {
	ctx := context.Background()
	ns := cluster.NewNamespace(t)
	_, err := cluster.Client().CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "reloader-state"},
		Data:       map[string]string{"v1.ConfigMap_good": hashOf("g"), "v1.ConfigMap_bad": "not-a-hash", "someone.else": "kept"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	s := newStore(cluster.Client(), ns, &log)
	if first, err := s.Load(ctx); err != nil || first {
		t.Fatalf("Load = %v, %v", first, err)
	}
	if _, ok := s.Get("v1.ConfigMap_bad"); ok {
		t.Fatal("corrupt entry was loaded")
	}
	if !strings.Contains(log.String(), "state entry is corrupt") || !strings.Contains(log.String(), "v1.ConfigMap_bad") {
		t.Fatalf("no log line naming the corrupt entry:\n%s", log.String())
	}
	at := time.Unix(1795000000, 0)
	if n := s.TombstoneMissing(func(string) bool { return false }, at); n != 1 {
		t.Fatalf("TombstoneMissing marked %d entries, want 1 (only ours)", n)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cm, _ := cluster.Client().CoreV1().ConfigMaps(ns).Get(ctx, "reloader-state", metav1.GetOptions{})
	want := map[string]string{"someone.else": "kept", "v1.ConfigMap_good": "deleted@1795000000:" + hashOf("g")}
	if fmt.Sprint(cm.Data) != fmt.Sprint(want) {
		t.Fatalf("state after flush = %v, want the corrupt entry gone, the good one tombstoned and the foreign key kept: %v", cm.Data, want)
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

func TestDeletingAConfigDeletesItsDataKeyEntries(t *testing.T) {
	ctx := context.Background()
	ns := cluster.NewNamespace(t)
	s := newStore(cluster.Client(), ns, nil)
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	app, other := state.Key("ConfigMap", "", "app"), state.Key("ConfigMap", "", "app2")
	for _, k := range []string{app, state.KeyOf(app, "x"), state.KeyOf(app, "y"), other, state.KeyOf(other, "x")} {
		s.Set(k, hashOf(k))
	}
	s.Delete(app)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	again := newStore(cluster.Client(), ns, nil)
	if _, err := again.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]bool{app: false, state.KeyOf(app, "x"): false, state.KeyOf(app, "y"): false, other: true, state.KeyOf(other, "x"): true} {
		if _, got := again.Get(k); got != want {
			t.Errorf("after deleting %s, entry %s present = %v, want %v", app, k, got, want)
		}
	}
}

// failOnce is a ConfigMapClient whose first Get of one shard fails, as an API server that stops
// answering halfway through a Load.
type failOnce struct {
	state.ConfigMapClient
	shard  string
	failed bool
}

func (f *failOnce) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error) {
	if name == f.shard && !f.failed {
		f.failed = true
		return nil, errors.New("connection refused")
	}
	return f.ConfigMapClient.Get(ctx, name, opts)
}

func TestALoadRetriedAfterAFailureCountsNothingTwice(t *testing.T) {
	ns := cluster.NewNamespace(t)
	ctx := context.Background()
	first := newStore(cluster.Client(), ns, nil)
	if _, err := first.Load(ctx); err != nil {
		t.Fatal(err)
	}
	first.Set(state.Key("ConfigMap", "", "a"), strings.Repeat("a", 40))
	if err := first.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	client := &failOnce{ConfigMapClient: cluster.Client().CoreV1().ConfigMaps(ns), shard: "reloader-state-1"}
	var log bytes.Buffer
	retried := state.New(client, ns, "reloader-state", textLog(&log))
	if _, err := retried.Load(ctx); err == nil {
		t.Fatal("the failing Load reported no error")
	}
	if _, err := retried.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := retried.Stats(), first.Stats(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after a retried Load the shards count %v, want %v", got, want)
	}
	if strings.Contains(log.String(), "stored twice") || !retried.Clean() {
		t.Fatalf("the retried Load took its own entries for duplicates:\n%s", log.String())
	}
}
