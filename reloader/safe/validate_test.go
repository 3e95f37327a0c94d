package safe

import (
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
	v       *Validation
	configs map[workload.Key]*configs.Record
	due     map[string][]workload.Key // by content hash: the dependents the rule finds due for it
}

type cacheFunc func(workload.Key) *configs.Record

func (c cacheFunc) Lookup(k workload.Key) *configs.Record { return c(k) }

type dependentsFunc func(workload.Key, *configs.Record) []workload.Dependent

func (d dependentsFunc) Dependents(k workload.Key, rec *configs.Record) []workload.Dependent {
	return d(k, rec)
}

// watchedAll watches every kind of config.
type watchedAll struct{}

func (watchedAll) Watched(string) bool { return true }

func newValidationFixture() *validationFixture {
	store := newStore()
	f := &validationFixture{gatesFixture: newGatesFixture(store), configs: map[workload.Key]*configs.Record{}, due: map[string][]workload.Key{}}
	f.v = NewValidation(ValidationDeps{Records: configs.NewRecords(policy.Annotations{}, nil, store.Configs(), f.g.names, nil), Reports: f.g.reports,
		Log: f.g.log, Counter: metrics.New("test").InvalidChanges, Gates: f.g, Queue: f.g.queue, Cache: cacheFunc(func(k workload.Key) *configs.Record { return f.configs[k] }),
		Watched: watchedAll{}, Dependents: dependentsFunc(func(_ workload.Key, rec *configs.Record) []workload.Dependent {
			var out []workload.Dependent
			for _, w := range f.due[rec.Hash()] {
				out = append(out, workload.Dependent{Workload: w, Judgement: workload.Judgement{Reload: true}})
			}
			return out
		})})
	return f
}

func configMapRecord(hash, invalid string) *configs.Record {
	r := configs.NewRecord(policy.KindConfigMap, &metav1.ObjectMeta{Name: "app", Namespace: "ns", UID: "cm-uid"}, strings.Repeat(hash, 40))
	r.SetInvalid(invalid)
	return r
}

// Content that does not validate is said once per content, counted once, recorded as it is
// when the state never saw the config, and names the workloads the valid content it replaced
// had not reached yet; those held by their gate are woken, so that their hold goes.
func TestInvalidContentIsSaidOnceAndNamesWhatItStranded(t *testing.T) {
	f := newValidationFixture()
	k := workload.Key{Kind: policy.KindConfigMap, Namespace: "ns", Name: "app"}
	valid, invalid := configMapRecord("a", ""), configMapRecord("b", `key "port": not an integer`)
	stranded := workload.Key{Kind: "Deployment", Namespace: "ns", Name: "web"}
	f.due[valid.Hash()] = []workload.Key{stranded}
	f.g.holdInvalid(gatedView(nil)) // web's reload is held: the invalid content wakes it

	f.v.RollingOut(k, valid)
	f.v.Invalid(k, invalid, true)
	f.v.Invalid(k, invalid, false) // the same content synced again
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

	f.v.Valid(configMapRecord("c", ""))
	f.v.Invalid(k, invalid, true) // the same invalid content, after a valid one
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
	f.configs[workload.Key{Kind: r.Kind, Namespace: "ns", Name: r.Name}] = configMapRecord("b", "not json")

	for range 2 {
		if !f.v.HoldsInvalid(w) {
			t.Fatal("not held while the pods read invalid content")
		}
	}
	if ev := f.drainEvents(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning "+workload.ReasonHeldInvalid) {
		t.Fatalf("events %q, want one %s", ev, workload.ReasonHeldInvalid)
	}
	if got := testutil.ToFloat64(f.g.gauge.WithLabelValues(policy.ReasonInvalidConfig)); got != 1 {
		t.Fatalf("deferred gauge %v, want 1", got)
	}

	f.configs[workload.Key{Kind: r.Kind, Namespace: "ns", Name: r.Name}] = configMapRecord("c", "")
	if f.v.HoldsInvalid(w) {
		t.Fatal("still held once the content validates")
	}
}
