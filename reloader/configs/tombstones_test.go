package configs

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/reloader/reloader/internal/dev/clocktest"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
	"github.com/reloader/reloader/state/statetest"
)

// tombstonesFixture is the tombstones part over a state without a server and a manual clock.
type tombstonesFixture struct {
	ts     *Tombstones
	store  *state.Store
	clock  *clocktest.Clock
	queued []workload.Key
	after  map[workload.Key]time.Duration
}

func newTombstonesFixture(reloadOnCreate, reloadOnDelete bool) *tombstonesFixture {
	f := &tombstonesFixture{store: state.New(statetest.NewConfigMaps(), "ns", "reloader-state", slog.New(slog.DiscardHandler)),
		clock: clocktest.New(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)), after: map[workload.Key]time.Duration{}}
	f.ts = &Tombstones{store: f.store.Configs(), names: entrykeys.Names{Single: true}, clock: f.clock, log: slog.New(slog.DiscardHandler),
		retention: 24 * time.Hour, reloadOnCreate: reloadOnCreate, reloadOnDelete: reloadOnDelete, namespace: "ns",
		watched: f, queue: f}
	return f
}

// Watched watches ConfigMaps only.
func (f *tombstonesFixture) Watched(kind string) bool { return kind == policy.KindConfigMap }

func (f *tombstonesFixture) Add(k workload.Key) { f.queued = append(f.queued, k) }

func (f *tombstonesFixture) AddAfter(k workload.Key, d time.Duration) { f.after[k] = d }

// What the state keeps of a config that does not exist, in process: its last content while
// anything references it or for the retention period, none where a recreation must read as a
// creation, and the content again where a deletion could not reach a dependent.
func TestATombstoneKeepsWhatARecreationIsJudgedAgainst(t *testing.T) {
	var (
		cfg     = workload.Key{Kind: policy.KindConfigMap, Namespace: "ns", Name: "app"}
		a       = strings.Repeat("a", 40)
		deleted = func(hash string) state.Entry { return state.Entry{Hash: hash, Deleted: true} }
		reached = []workload.Dependent{{Workload: workload.Key{Kind: "Deployment", Namespace: "ns", Name: "web"}}}
		missed  = []workload.Dependent{{Workload: workload.Key{Kind: "Deployment", Namespace: "ns", Name: "web"}, Judgement: workload.Judgement{Untouched: true}}}
	)
	for _, tc := range []struct {
		name                           string
		reloadOnCreate, reloadOnDelete bool
		recorded                       string // the content the state held before the deletion ("": none)
		deps                           []workload.Dependent
		referenced                     bool
		age                            time.Duration // how long before the sync the deletion was recorded
		want                           *state.Entry  // nil: no entry
		comesBack                      time.Duration // when the config is queued again (0: not)
	}{
		{name: "a referenced deletion keeps the content", recorded: a, deps: reached, referenced: true, want: &state.Entry{Hash: a, Deleted: true}},
		{name: "an unreferenced deletion keeps it for the retention", recorded: a, want: &state.Entry{Hash: a, Deleted: true}, comesBack: 24 * time.Hour},
		{name: "an unreferenced tombstone past the retention is pruned", recorded: a, age: 25 * time.Hour},
		{name: "a config never seen and not referenced leaves nothing", referenced: false},
		{name: "a config never seen but referenced leaves nothing without reload-on-create", referenced: true, deps: reached},
		{name: "with reload-on-create, a referenced config never seen is an empty tombstone", reloadOnCreate: true,
			referenced: true, deps: reached, want: &state.Entry{Deleted: true}},
		{name: "with reload-on-delete, a deletion that reached every dependent forgets the content", reloadOnDelete: true,
			recorded: a, deps: reached, referenced: true, want: &state.Entry{Deleted: true}},
		{name: "with reload-on-delete, a deletion that missed a dependent keeps the content", reloadOnDelete: true,
			recorded: a, deps: missed, referenced: true, want: &state.Entry{Hash: a, Deleted: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTombstonesFixture(tc.reloadOnCreate, tc.reloadOnDelete)
			skey := f.ts.names.Config(cfg)
			if tc.recorded != "" {
				f.store.Configs().Set(skey, tc.recorded)
			}
			if tc.age > 0 {
				f.store.Configs().Tombstone(skey, tc.recorded, f.clock.Now().Add(-tc.age))
			}
			f.ts.NoteReach(cfg, nil, tc.deps, true)
			f.ts.Settle(cfg, tc.referenced)
			e, known := f.store.Configs().Get(skey)
			switch {
			case tc.want == nil && known:
				t.Fatalf("entry %+v, want none", e)
			case tc.want != nil && (!known || e.Hash != tc.want.Hash || e.Deleted != tc.want.Deleted):
				t.Fatalf("entry %+v (known %v), want %+v", e, known, deleted(tc.want.Hash))
			}
			if got := f.after[cfg]; got != tc.comesBack {
				t.Fatalf("queued again after %v, want %v", got, tc.comesBack)
			}
		})
	}
}

// A tombstone's time is that of the deletion, not of each later sync: the retention counts from
// it, and a config whose content came back holds no tombstone.
func TestATombstoneAgesFromTheDeletion(t *testing.T) {
	f := newTombstonesFixture(false, false)
	cfg := workload.Key{Kind: policy.KindConfigMap, Namespace: "ns", Name: "app"}
	skey := f.ts.names.Config(cfg)
	f.store.Configs().Set(skey, strings.Repeat("a", 40))
	f.ts.Settle(cfg, false)
	f.clock.Advance(20 * time.Hour)
	f.ts.Settle(cfg, false)
	if got := f.after[cfg]; got != 4*time.Hour {
		t.Fatalf("queued again after %v, want the 4h left of the retention", got)
	}
	f.clock.Advance(4 * time.Hour)
	f.ts.Settle(cfg, false)
	if e, known := f.store.Configs().Get(skey); known {
		t.Fatalf("entry %+v past the retention, want it pruned", e)
	}
}

// Every tombstone is queued at start, in the namespace the reloader watches, and only for a
// kind it watches.
func TestEveryTombstoneOfAWatchedKindIsQueued(t *testing.T) {
	f := newTombstonesFixture(false, false)
	now := f.clock.Now()
	f.store.Configs().Tombstone(f.ts.names.Config(workload.Key{Kind: policy.KindConfigMap, Namespace: "ns", Name: "app"}), strings.Repeat("a", 40), now)
	f.store.Configs().Tombstone(f.ts.names.Config(workload.Key{Kind: policy.KindSecret, Namespace: "ns", Name: "db"}), "", now) // Secrets not watched
	f.store.Configs().Set(f.ts.names.Config(workload.Key{Kind: policy.KindConfigMap, Namespace: "ns", Name: "live"}), strings.Repeat("b", 40))
	f.ts.QueueAll()
	if len(f.queued) != 1 || f.queued[0] != (workload.Key{Kind: policy.KindConfigMap, Namespace: "ns", Name: "app"}) {
		t.Fatalf("queued %v, want only ConfigMap ns/app", f.queued)
	}
}
