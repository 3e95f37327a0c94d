package reloader

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/workload"
)

// validationFixture is the validation part over the gates fixture, with the rule's verdicts and
// the cache given by the test.
type validationFixture struct {
	*gatesFixture
	v       *validation
	configs map[key]*configRecord
	due     map[string][]key // by content hash: the dependents the rule finds due for it
}

func newValidationFixture() *validationFixture {
	store := newStore(nil, "ns", "reloader-state", slog.New(slog.DiscardHandler))
	f := &validationFixture{gatesFixture: newGatesFixture(store), configs: map[key]*configRecord{}, due: map[string][]key{}}
	f.v = &validation{records: configs.NewRecords(policy.Annotations{}, nil, store.Configs(), f.g.names, nil), reports: f.g.reports, log: f.g.log, counter: metrics.New("test").InvalidChanges,
		gates: f.g, enqueue: f.g.enqueue, lookup: func(k key) *configRecord { return f.configs[k] },
		watched: func(string) bool { return true },
		dependents: func(_ key, rec *configRecord) []workload.Dependent {
			var out []workload.Dependent
			for _, w := range f.due[rec.Hash()] {
				out = append(out, workload.Dependent{Workload: w, Judgement: workload.Judgement{Reload: true}})
			}
			return out
		}}
	return f
}

func configMapRecord(hash, invalid string) *configRecord {
	r := configs.NewRecord(policy.KindConfigMap, &metav1.ObjectMeta{Name: "app", Namespace: "ns", UID: "cm-uid"}, strings.Repeat(hash, 40))
	r.SetInvalid(invalid)
	return r
}

// Content that does not validate is said once per content, counted once, recorded as it is
// when the state never saw the config, and names the workloads the valid content it replaced
// had not reached yet; those held by their gate are woken, so that their hold goes.
func TestInvalidContentIsSaidOnceAndNamesWhatItStranded(t *testing.T) {
	f := newValidationFixture()
	k := key{Kind: policy.KindConfigMap, Namespace: "ns", Name: "app"}
	valid, invalid := configMapRecord("a", ""), configMapRecord("b", `key "port": not an integer`)
	stranded := key{Kind: "Deployment", Namespace: "ns", Name: "web"}
	f.due[valid.Hash()] = []key{stranded}
	f.g.holdInvalid(gatedView(nil)) // web's reload is held: the invalid content wakes it

	f.v.rollingOut(k, valid)
	f.v.invalid(k, invalid, true)
	f.v.invalid(k, invalid, false) // the same content synced again
	ev := f.drainEvents()
	if len(ev) != 1 || !strings.Contains(ev[0], "InvalidConfig") || !strings.Contains(ev[0], "Deployment web") {
		t.Fatalf("events %q, want one InvalidConfig naming Deployment web", ev)
	}
	if got := testutil.ToFloat64(f.v.counter.WithLabelValues(policy.KindConfigMap)); got != 1 {
		t.Fatalf("invalid changes counted %v, want 1", got)
	}
	if e, _ := f.store.Configs().Get(f.g.names.Config(k)); e.Hash != invalid.Hash() {
		t.Fatalf("state entry %q, want the content as it is (%s): the state never saw the config", e.Hash, invalid.Hash())
	}
	select {
	case got := <-f.queued:
		if got != stranded {
			t.Fatalf("woke %v, want %v", got, stranded)
		}
	default:
		t.Fatal("the held, stranded workload was not woken")
	}

	f.v.valid(configMapRecord("c", ""))
	f.v.invalid(k, invalid, true) // the same invalid content, after a valid one
	if ev := f.drainEvents(); len(ev) != 1 {
		t.Fatalf("events %q after a valid content came between, want the Warning again", ev)
	}
}

// A workload whose pods read content that does not validate is held for any due reload, said
// once, counted in the deferred gauge, and let go once the content is fixed.
func TestAWorkloadReadingInvalidContentIsHeldUntilItIsFixed(t *testing.T) {
	f := newValidationFixture()
	r := policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app"}
	w := gatedView(nil)
	w.Uses = map[policy.ConfigRef]policy.Use{r: {Whole: true}}
	f.configs[key{Kind: r.Kind, Namespace: "ns", Name: r.Name}] = configMapRecord("b", "not json")

	for range 2 {
		if !f.v.holds(w) {
			t.Fatal("not held while the pods read invalid content")
		}
	}
	if ev := f.drainEvents(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning "+workload.ReasonHeldInvalid) {
		t.Fatalf("events %q, want one %s", ev, workload.ReasonHeldInvalid)
	}
	if got := testutil.ToFloat64(f.g.gauge.WithLabelValues(policy.ReasonInvalidConfig)); got != 1 {
		t.Fatalf("deferred gauge %v, want 1", got)
	}

	f.configs[key{Kind: r.Kind, Namespace: "ns", Name: r.Name}] = configMapRecord("c", "")
	if f.v.holds(w) {
		t.Fatal("still held once the content validates")
	}
}
