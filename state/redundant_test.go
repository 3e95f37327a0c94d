package state_test

import (
	"context"
	"testing"
	"time"

	"github.com/reloader/reloader/state"
	"github.com/reloader/reloader/state/statetest"
)

func TestARedundantEntryIsDueOnlyWhenNeeded(t *testing.T) {
	c := statetest.NewConfigMaps()
	s := loaded(t, c, nil)
	quiet, other := state.Key("ConfigMap", "", "quiet"), state.Key("ConfigMap", "", "other")
	s.Configs().SetRedundant(quiet, hashOf("a"))
	if e, _ := s.Configs().Get(quiet); e.Hash != hashOf("a") {
		t.Fatalf("memory holds %q, want the redundant entry", e.Hash)
	}
	if !s.Clean() {
		t.Fatal("a redundant entry made a write due")
	}
	// The positive control: the same call made by Set is due.
	s.Configs().Set(other, hashOf("b"))
	if s.Clean() {
		t.Fatal("a set entry is not due")
	}
	flush(t, s)
	s.Configs().SetRedundant(quiet, hashOf("c"))
	s.Configs().Need(quiet)
	if s.Clean() {
		t.Fatal("a needed redundant entry is not due")
	}
}

func TestARedundantEntryGoesWithTheNextWrite(t *testing.T) {
	c := statetest.NewConfigMaps()
	s := loaded(t, c, nil)
	quiet, other := state.Key("ConfigMap", "", "quiet"), state.Key("ConfigMap", "", "other")
	s.Configs().SetRedundant(quiet, hashOf("a"))
	s.Configs().Set(other, hashOf("b"))
	flush(t, s)
	got := stored(t, c)
	if got[quiet] != hashOf("a") || got[other] != hashOf("b") {
		t.Fatalf("stored %v, want both entries", got)
	}
	// Set after SetRedundant: due, and written once.
	s.Configs().SetRedundant(quiet, hashOf("c"))
	s.Configs().Set(quiet, hashOf("d"))
	flush(t, s)
	if v := stored(t, c)[quiet]; v != hashOf("d") {
		t.Fatalf("stored %q, want the later Set", v)
	}
}

func TestRunWritesRedundantEntriesWhenItsContextEnds(t *testing.T) {
	c := statetest.NewConfigMaps()
	s := loaded(t, c, nil)
	writes := 0
	s.OnWrite = func(string, error) { writes++ }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx, time.Millisecond) }()
	k := state.Key("ConfigMap", "", "app")
	s.Configs().SetRedundant(k, hashOf("a"))
	cancel()
	<-done
	if v := stored(t, c)[k]; v != hashOf("a") || writes != 1 {
		t.Fatalf("stored %q in %d writes, want the redundant entry in one write at exit", v, writes)
	}
}

func TestAnEntrySetAndRemovedBetweenTwoFlushesCostsNoWrite(t *testing.T) {
	c := statetest.NewConfigMaps()
	s := loaded(t, c, nil)
	writes := 0
	s.OnWrite = func(string, error) { writes++ }
	brief, kept := state.Key("ConfigMap", "", "brief"), state.Key("ConfigMap", "", "kept")
	s.Configs().Set(brief, hashOf("a"))
	s.Configs().Delete(brief)
	flush(t, s)
	if writes != 0 {
		t.Fatalf("%d writes for an entry no shard ever held", writes)
	}
	// The positive control: once written, the same removal is a write.
	s.Configs().Set(brief, hashOf("a"))
	s.Configs().Set(kept, hashOf("b"))
	flush(t, s)
	s.Configs().Delete(brief)
	flush(t, s)
	got := stored(t, c)
	if _, left := got[brief]; left || got[kept] != hashOf("b") || writes != 2 {
		t.Fatalf("stored %v in %d writes, want the removal written and the other entry kept", got, writes)
	}
	// And one loaded from the shard.
	again := loaded(t, c, nil)
	again.Configs().Delete(kept)
	flush(t, again)
	if _, left := stored(t, c)[kept]; left {
		t.Fatal("the removal of a loaded entry was not written")
	}
}

func TestRedundantEntriesGoOnlyWithWritesOfTheirShard(t *testing.T) {
	c := statetest.NewConfigMaps()
	s, budget := smallStore(t, c, nil)
	for i := range perShard + 1 {
		s.Configs().Set(entryKey(i), hashOf("old"))
	}
	flush(t, s)
	written := make(chan string, 10)
	s.OnWrite = func(shard string, _ error) { written <- shard }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx, time.Millisecond) }()
	inFirst, inSecond := entryKey(0), entryKey(perShard)
	s.Configs().SetRedundant(inFirst, hashOf("new"))
	s.Configs().SetRedundant(inSecond, hashOf("new"))
	s.Configs().Set(entryKey(1), hashOf("new"))
	if shard := <-written; shard != "reloader-state" {
		t.Fatalf("wrote %s, want the first shard", shard)
	}
	got := storedValues(t, storedShards(t, c, budget))
	if got[inFirst] != hashOf("new") || got[inSecond] != hashOf("old") {
		t.Fatalf("stored %s=%q and %s=%q: want the first shard's redundant entry written along, the second's left",
			inFirst, got[inFirst], inSecond, got[inSecond])
	}
	cancel()
	<-done
	if v := storedValues(t, storedShards(t, c, budget))[inSecond]; v != hashOf("new") {
		t.Fatalf("after the exit the second shard holds %q, want the redundant entry", v)
	}
}
