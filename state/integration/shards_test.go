package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/reloader/reloader/state"
)

// At the real budget, with every shard full: the entries that do not fit stay in memory, and the
// flush succeeds. The engine before tombstones put them all in the last shard, which grew to
// 2.15 MB and could never be written (reproduced with this sequence on d7ae632).
func TestAStateFullAtTheRealBudgetIsNeverWrittenPastIt(t *testing.T) {
	ns := cluster.NewNamespace(t)
	var log bytes.Buffer
	s := newStore(cluster.Client(), ns, &log)
	if _, err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A 45-byte key and a 40-byte hash, each counted at its largest size: 8 × 800 KB hold fewer
	// than 77,000 of them.
	for i := range 95000 {
		s.Set(fmt.Sprintf("v1.ConfigMap_config-with-a-long-name-%06d", i), fmt.Sprintf("%040x", i))
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatalf("flush of a full state: %v", err)
	}
	if s.Unsaved() == 0 {
		t.Fatal("no entry is reported as kept in memory only")
	}
	for _, st := range s.Stats() {
		if st.Bytes > state.ShardBudget {
			t.Errorf("%s counts %d bytes, past the %d budget", st.Name, st.Bytes, state.ShardBudget)
		}
	}
	if n := strings.Count(log.String(), "state is full"); n != 1 {
		t.Errorf("%d log lines say the state is full, want 1", n)
	}
}
