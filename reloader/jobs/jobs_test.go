package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/reloader/internal/report"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
	"github.com/reloader/reloader/state/statetest"
)

var jobsResource = schema.GroupResource{Group: "batch", Resource: "jobs"}

// memoryJobs is a Client over a map, for plumbing: a delete honours its preconditions, and a
// Job with a finalizer stays, being deleted. createErr, when set, answers the next creates.
type memoryJobs struct {
	jobs      map[string]*batchv1.Job
	uids      int
	finalizer bool
	createErr error
	creates   int
}

func (m *memoryJobs) Get(_ context.Context, name string, _ metav1.GetOptions) (*batchv1.Job, error) {
	if j, ok := m.jobs[name]; ok {
		return j.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(jobsResource, name)
}

func (m *memoryJobs) Create(_ context.Context, job *batchv1.Job, _ metav1.CreateOptions) (*batchv1.Job, error) {
	m.creates++
	if m.createErr != nil {
		return nil, m.createErr
	}
	if _, ok := m.jobs[job.Name]; ok {
		return nil, apierrors.NewAlreadyExists(jobsResource, job.Name)
	}
	return m.put(job), nil
}

func (m *memoryJobs) Delete(_ context.Context, name string, opts metav1.DeleteOptions) error {
	j, ok := m.jobs[name]
	if !ok {
		return apierrors.NewNotFound(jobsResource, name)
	}
	if p := opts.Preconditions; p != nil && (*p.UID != j.UID || *p.ResourceVersion != j.ResourceVersion) {
		return apierrors.NewConflict(jobsResource, name, errors.New("precondition failed"))
	}
	if m.finalizer {
		now := metav1.Now()
		j.DeletionTimestamp = &now
		return nil
	}
	delete(m.jobs, name)
	return nil
}

// put stores a copy of job as the API server would: a new UID and resourceVersion.
func (m *memoryJobs) put(job *batchv1.Job) *batchv1.Job {
	m.uids++
	j := job.DeepCopy()
	j.UID, j.ResourceVersion = types.UID(fmt.Sprintf("uid-%d", m.uids)), fmt.Sprint(m.uids)
	m.jobs[j.Name] = j
	return j.DeepCopy()
}

// jobsFixture is the Runs part over in-memory Jobs and state and a fake Event recorder; the
// Job informer's cache is what the test puts in cached. It serves the part's interfaces itself.
type jobsFixture struct {
	j       *Runs
	api     *memoryJobs
	store   *state.Store
	events  *record.FakeRecorder
	cached  map[string]*batchv1.Job
	queued  []workload.Key
	markers int // calls of the markers refresh
	invalid []string
	// notes is the first state ConfigMap as Runs.Resume reads it.
	notes func(context.Context) (*corev1.ConfigMap, error)
}

func (f *jobsFixture) Jobs(string) Client { return f.api }

func (f *jobsFixture) Notes(ctx context.Context) (*corev1.ConfigMap, error) { return f.notes(ctx) }

func (f *jobsFixture) WriteOther(ctx context.Context, key string, value *string) error {
	return f.store.WriteOther(ctx, key, value)
}

func (f *jobsFixture) InScope(ns string) bool { return ns == "ns" }

func (f *jobsFixture) CurrentMarkers(job *batchv1.Job) (*batchv1.Job, error) {
	f.markers++
	job = job.DeepCopy()
	job.Annotations = map[string]string{"marker": "now"}
	return job, nil
}

func (f *jobsFixture) JobInvalid(*batchv1.Job) []string { return f.invalid }

func (f *jobsFixture) Add(k workload.Key) { f.queued = append(f.queued, k) }

func (f *jobsFixture) Cached(k string) (any, bool, error) {
	j, ok := f.cached[k]
	return j, ok, nil
}

func newJobsFixture() *jobsFixture {
	f := &jobsFixture{api: &memoryJobs{jobs: map[string]*batchv1.Job{}}, events: record.NewFakeRecorder(100), cached: map[string]*batchv1.Job{},
		notes: func(context.Context) (*corev1.ConfigMap, error) { return &corev1.ConfigMap{}, nil }}
	log := slog.New(slog.DiscardHandler)
	f.store = state.New(statetest.NewConfigMaps(), "ns", "reloader-state", log)
	f.j = NewRuns(Deps{API: f, Notes: f, Key: func() confighash.Key { return testNoteKey }, Scope: f, Planner: f, Queue: f, Cache: f,
		Reports: report.New(f.events, log), Metrics: metrics.New("test"), Log: log})
	return f
}

// running puts Job ns/run in the API server and the cache; the recreation to make of it carries
// marker "new".
func (f *jobsFixture) running() (old, job *batchv1.Job) {
	old = f.api.put(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "run"}})
	f.cached["ns/run"] = old
	job = &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "run", Annotations: map[string]string{"marker": "new"}}}
	return old, job
}

// A Job's run again, in process: deleted only in the version it was judged on, created once
// under its name whatever happens between the two, and its note gone once it exists.
func TestAJobRunAgainIsCreatedOnceWhateverHappensBetweenItsDeleteAndCreate(t *testing.T) {
	ctx := context.Background()
	refused := apierrors.NewForbidden(jobsResource, "run", errors.New("quota"))
	for _, tc := range []struct {
		name    string
		before  func(f *jobsFixture, old *batchv1.Job) // what happens before the recreation
		want    string                                 // the error recreate returns ("": none)
		created int                                    // Jobs created by the recreation
		noted   bool                                   // the note is still written down after
	}{
		{name: "deleted and created again", created: 1},
		{name: "changed since it was judged: nothing deleted, judged again", want: workload.ErrStale.Error(),
			before: func(f *jobsFixture, old *batchv1.Job) { f.api.jobs["run"].ResourceVersion = "99" }},
		{name: "already recreated by someone else: theirs is kept",
			before: func(f *jobsFixture, old *batchv1.Job) {
				delete(f.api.jobs, "run")
				f.api.put(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "run"}})
			}},
		{name: "its create refused: the note stays for a later sync", want: "create Job ns/run again", noted: true,
			before: func(f *jobsFixture, _ *batchv1.Job) { f.api.createErr = refused }},
		{name: "still being deleted: the note stays", want: "still being deleted", noted: true,
			before: func(f *jobsFixture, _ *batchv1.Job) { f.api.finalizer = true }},
		{name: "its namespace gone: nothing to create", want: workload.ErrStale.Error(),
			before: func(f *jobsFixture, _ *batchv1.Job) {
				f.api.createErr = apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ns")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newJobsFixture()
			old, job := f.running()
			if tc.before != nil {
				tc.before(f, old)
			}
			creates := f.api.creates
			out, err := f.j.recreate(ctx, old, job)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("recreate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("recreate: %v, want %q", err, tc.want)
			}
			if tc.created == 1 && (out == nil || out.UID == old.UID || out.Annotations["marker"] != "new") {
				t.Fatalf("recreate returned %+v, want a new Job with the markers decided", out)
			}
			if got := f.api.creates - creates; tc.created == 1 && got != 1 {
				t.Fatalf("%d creates, want 1", got)
			}
			if _, noted := f.j.recreations.Load(jobRecreationKey("ns", "run")); noted != tc.noted {
				t.Fatalf("note written down: %v, want %v", noted, tc.noted)
			}
			if f.markers != 0 {
				t.Fatal("a recreation in its own sync refreshed the markers it was just decided with")
			}
		})
	}
}

// A recreation whose create failed is finished by the next sync of its key, with the markers of
// now, once; until the cache shows the new Job, the sync is judged again.
func TestARefusedJobCreateIsFinishedByTheNextSyncWithTheMarkersOfNow(t *testing.T) {
	ctx := context.Background()
	f := newJobsFixture()
	old, job := f.running()
	f.api.createErr = apierrors.NewForbidden(jobsResource, "run", errors.New("quota"))
	if _, err := f.j.recreate(ctx, old, job); err == nil {
		t.Fatal("recreate with its create refused: no error")
	}
	var later workload.RetryLater
	if err := f.j.finishFailed(ctx, "ns", "run"); !errors.As(err, &later) {
		t.Fatalf("finishFailed while still refused: %v, want a retry later", err)
	}
	f.queued = nil
	if f.j.WakeHeld("ns"); len(f.queued) != 0 {
		t.Fatalf("a config sync woke a refused (not held) create: %v; it keeps its own retry", f.queued)
	}
	f.api.createErr = nil
	if err := f.j.finishFailed(ctx, "ns", "run"); !errors.Is(err, workload.ErrStale) {
		t.Fatalf("finishFailed with the old Job still cached: %v, want workload.ErrStale", err)
	}
	created, ok := f.api.jobs["run"]
	if !ok || created.UID == old.UID || created.Annotations["marker"] != "now" || f.markers != 2 {
		t.Fatalf("created %+v after %d refreshes; want a new Job with the markers of now, refreshed before each create", created, f.markers)
	}
	f.cached["ns/run"] = created
	creates := f.api.creates
	if err := f.j.finishFailed(ctx, "ns", "run"); err != nil || f.api.creates != creates {
		t.Fatalf("a second finishFailed: %v, %d more creates; want nothing left to do", err, f.api.creates-creates)
	}
	if ev := strings.Join(drain(f.events), ","); !strings.Contains(ev, "Reloaded") {
		t.Fatalf("events %q, want one Reloaded for the Job created again", ev)
	}
}

// At start, each recreation a stopped reloader left is finished; one that cannot be is queued
// for its key's syncs, and one that cannot be read is removed.
func TestJobRecreationsLeftByAStoppedReloaderAreFinishedAtStart(t *testing.T) {
	ctx := context.Background()
	f := newJobsFixture()
	note := func(name string) string {
		v, _ := f.j.encode(jobRecreationKey("ns", name), &jobRecreation{OldUID: "gone", Job: &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}})
		return v
	}
	left := map[string]string{jobRecreationKey("ns", "a"): note("a"), jobRecreationKey("ns", "b"): note("b"),
		jobRecreationKey("ns", "c"): "{not json", "v1.ConfigMap_app": strings.Repeat("a", 40)}
	f.notes = func(context.Context) (*corev1.ConfigMap, error) { return &corev1.ConfigMap{Data: left}, nil }
	f.api.put(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}}) // b was created before the stop
	f.j.Resume(ctx)
	if a, ok := f.api.jobs["a"]; !ok || a.Annotations["marker"] != "now" {
		t.Fatalf("Job a %+v, want it created with the markers of now", a)
	}
	if f.api.creates != 1 {
		t.Fatalf("%d creates, want 1 (b existed already)", f.api.creates)
	}
	if _, noted := f.j.recreations.Load(jobRecreationKey("ns", "c")); noted || len(f.queued) != 0 {
		t.Fatalf("the unreadable note: kept %v, queued %v; want it removed", noted, f.queued)
	}

	f = newJobsFixture()
	f.notes = func(context.Context) (*corev1.ConfigMap, error) {
		return &corev1.ConfigMap{Data: map[string]string{jobRecreationKey("ns", "a"): note("a")}}, nil
	}
	f.api.createErr = apierrors.NewForbidden(jobsResource, "a", errors.New("quota"))
	f.j.Resume(ctx)
	if _, noted := f.j.recreations.Load(jobRecreationKey("ns", "a")); !noted || len(f.queued) != 1 || f.queued[0] != (workload.Key{Kind: "Job", Namespace: "ns", Name: "a"}) {
		t.Fatalf("a refused create at start: noted %v, queued %v; want it kept and Job ns/a queued", noted, f.queued)
	}
}

// A Job deleted for its recreation and created late (its create refused, or a reloader stopped
// in between) reads the content of now: while a config it reads does not validate, it is not
// created, said once, and created once that content validates and a config sync wakes it.
func TestAJobCreatedLateIsHeldWhileItWouldReadContentThatDoesNotValidate(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		start func(t *testing.T, f *jobsFixture) // leaves the recreation of Job ns/run unfinished
	}{
		{"its create refused", func(t *testing.T, f *jobsFixture) {
			old, job := f.running()
			f.api.createErr = apierrors.NewForbidden(jobsResource, "run", errors.New("quota"))
			if _, err := f.j.recreate(ctx, old, job); err == nil {
				t.Fatal("recreate with its create refused: no error")
			}
			drain(f.events)
			f.api.createErr = nil
			f.invalid = []string{"ConfigMap app"}
			for range 2 {
				if err := f.j.finishFailed(ctx, "ns", "run"); err != nil {
					t.Fatalf("finishFailed while held: %v, want nil (woken, not retried)", err)
				}
			}
		}},
		{"a reloader stopped before its create", func(t *testing.T, f *jobsFixture) {
			v, _ := f.j.encode(jobRecreationKey("ns", "run"), &jobRecreation{OldUID: "gone", Job: &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "run"}}})
			f.notes = func(context.Context) (*corev1.ConfigMap, error) {
				return &corev1.ConfigMap{Data: map[string]string{jobRecreationKey("ns", "run"): v}}, nil
			}
			f.invalid = []string{"ConfigMap app"}
			f.j.Resume(ctx)
			if err := f.j.finishFailed(ctx, "ns", "run"); err != nil {
				t.Fatalf("finishFailed while held: %v, want nil", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newJobsFixture()
			tc.start(t, f)
			if _, ok := f.api.jobs["run"]; ok {
				t.Fatal("the Job was created while a config it reads does not validate")
			}
			if ev := drain(f.events); len(ev) != 1 || !strings.Contains(ev[0], workload.ReasonHeldInvalid) || !strings.Contains(ev[0], "ConfigMap app") {
				t.Fatalf("events %q, want one %s naming the config", ev, workload.ReasonHeldInvalid)
			}
			f.queued = nil
			f.j.WakeHeld("other")
			f.j.WakeHeld("ns")
			if len(f.queued) != 1 || f.queued[0] != (workload.Key{Kind: "Job", Namespace: "ns", Name: "run"}) {
				t.Fatalf("woken: %v, want Job ns/run alone", f.queued)
			}

			f.invalid = nil
			delete(f.cached, "ns/run")
			creates := f.api.creates
			if err := f.j.finishFailed(ctx, "ns", "run"); err != nil {
				t.Fatalf("finishFailed once valid: %v", err)
			}
			if _, ok := f.api.jobs["run"]; !ok || f.api.creates != creates+1 {
				t.Fatalf("created %v, %d creates; want the Job created once", ok, f.api.creates-creates)
			}
			if _, noted := f.j.recreations.Load(jobRecreationKey("ns", "run")); noted {
				t.Fatal("the recreation is still noted once the Job exists")
			}
		})
	}
}

// drain returns the Events recorded so far.
func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
