package integration_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/reloader/reloader/internal/dev/testcluster"
	"github.com/reloader/reloader/state"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(testcluster.Main(m, testcluster.Options{Log: os.Stderr}, &cluster))
}

func hashOf(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

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

// loaded returns a Store that has loaded the state in ns.
func loaded(t *testing.T, ns string, log *bytes.Buffer) *state.Store {
	t.Helper()
	s := newStore(cluster.Client(), ns, log)
	if _, err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func flush(t *testing.T, s *state.Store) {
	t.Helper()
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// stored returns the data of the first state ConfigMap in ns.
func stored(t *testing.T, ns string) map[string]string {
	t.Helper()
	cm, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(cm.Data, state.FlushedAtKey) // each write's stamp
	return cm.Data
}

const perShard = 5

// entryKey returns config entry keys that all have the same length.
func entryKey(i int) string { return fmt.Sprintf("v1.ConfigMap_e-%03d", i) }

// storedShards returns the data of every state ConfigMap in ns, failing the test if one holds
// more than budget bytes of keys and values.
func storedShards(t *testing.T, ns string, budget int) map[string]map[string]string {
	t.Helper()
	cms, err := cluster.Client().CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, cm := range cms.Items {
		if !strings.HasPrefix(cm.Name, "reloader-state") {
			continue
		}
		delete(cm.Data, state.FlushedAtKey) // each write's stamp, outside the budget
		size := 0
		for k, v := range cm.Data {
			size += len(k) + len(v)
		}
		if size > budget {
			t.Errorf("%s holds %d bytes, over its budget of %d", cm.Name, size, budget)
		}
		out[cm.Name] = cm.Data
	}
	return out
}
