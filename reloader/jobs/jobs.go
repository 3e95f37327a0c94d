// Package jobs reloads CronJobs and Jobs as stakater Reloader does: a CronJob's reload runs a Job
// from its template, a Job's deletes it and creates it again, written down in the state so that
// neither is lost or done twice across a stop. It also holds a suspended CronJob's reload.
package jobs

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/internal/kube"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/report"
	"github.com/reloader/reloader/reloader/workload"
)

// CronJobs and Jobs are reloaded with stakater Reloader's semantics: a CronJob runs a new Job
// from its template now, a Job is deleted and created again. Both take --ignored-workload-types.
const (
	TypeCronJobs = "cronjobs"
	TypeJobs     = "jobs"
)

// PendingAnnotation, on a CronJob, names the Job its last reload is to run. It is set by the
// same patch that writes the markers, so a reload is recorded atomically, and cleared once the
// Job exists: a reloader stopped in between creates the Job on its next start, and a Job
// already created is not created twice (its name is fixed).
const PendingAnnotation = "reloader/pending-job"

// jobTemplatePath is where a CronJob's pod template is; policy's patches address a pod template
// at /spec/template, as in every other kind.
const jobTemplatePath = "/spec/jobTemplate/spec/template"

// CronJobKind reloads a CronJob: one patch writes the markers into its job template and names
// the Job to run; resume then creates that Job.
func CronJobKind(c *kube.Clients, ns string, link *kube.Link, transform cache.TransformFunc, key RunKey) *workload.Kind {
	k := workload.TypedKind("CronJob", &batchv1.CronJob{},
		func(cj *batchv1.CronJob) *corev1.PodTemplateSpec { return &cj.Spec.JobTemplate.Spec.Template },
		func(ns string) workload.TypedClient[*batchv1.CronJob, *batchv1.CronJobList] { return c.CronJobs(ns) }, ns, link, transform)
	k.Reload = func(ctx context.Context, ns, name string, body []byte) (any, error) {
		obj, ok, err := k.Cached(ns + "/" + name)
		if err != nil || !ok {
			return nil, workload.ErrStale
		}
		cj := obj.(*batchv1.CronJob)
		body, err = cronJobPatch(cj, body, key)
		if err != nil {
			return nil, err
		}
		out, err := c.CronJobs(ns).Patch(ctx, name, types.JSONPatchType, body, metav1.PatchOptions{})
		if err != nil {
			return nil, err
		}
		// The Job is created at once; if this fails, the CronJob's own update event brings it
		// back to resume, which retries.
		_ = k.Resume(ctx, out, true)
		return out, nil
	}
	k.Probe = func(ctx context.Context) error {
		_, err := c.CronJobs(ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}
	k.Resume = func(ctx context.Context, obj any, watched bool) error {
		cj := obj.(*batchv1.CronJob)
		v := cj.Annotations[PendingAnnotation]
		if v == "" {
			return nil
		}
		name, why := key.recorded(cj, v)
		if why != "" && !watched {
			return nil // another reloader's run, perhaps: not ours to judge
		}
		if why != "" {
			if err := clearPendingJob(ctx, c, cj, v); err != nil {
				return err
			}
			return DroppedRun{why: why}
		}
		if Suspended(cj) {
			return nil // a suspended CronJob's Job waits for its resume (cronjobsuspend.go)
		}
		_, err := c.Jobs(cj.Namespace).Create(ctx, jobFromCronJob(cj, name), metav1.CreateOptions{FieldManager: "reloader"})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create Job %s/%s for CronJob %s: %w", cj.Namespace, name, cj.Name, err)
		}
		return clearPendingJob(ctx, c, cj, v)
	}
	return k
}

// clearPendingJob removes the CronJob's PendingAnnotation if it still holds v.
func clearPendingJob(ctx context.Context, c *kube.Clients, cj *batchv1.CronJob, v string) error {
	at := "/metadata/annotations/" + strings.ReplaceAll(PendingAnnotation, "/", "~1")
	clear, _ := json.Marshal([]policy.JSONOp{{Op: "test", Path: at, Value: v}, {Op: "remove", Path: at}})
	_, err := c.CronJobs(cj.Namespace).Patch(ctx, cj.Name, types.JSONPatchType, clear, metav1.PatchOptions{})
	if workload.IsStale(err) || apierrors.IsNotFound(err) {
		return nil // already cleared, or the CronJob is gone
	}
	if err != nil {
		return fmt.Errorf("clear %s on CronJob %s/%s: %w", PendingAnnotation, cj.Namespace, cj.Name, err)
	}
	return nil
}

// cronJobPatch moves policy's ops to the job template and adds the name of the Job to run.
// The name is fixed by the CronJob's UID and the resourceVersion the patch tests, so each
// reload has its own. The name is recorded signed (RunKey.record).
func cronJobPatch(cj *batchv1.CronJob, body []byte, key RunKey) ([]byte, error) {
	var ops []policy.JSONOp
	if err := json.Unmarshal(body, &ops); err != nil {
		return nil, fmt.Errorf("decode patch of CronJob %s/%s: %w", cj.Namespace, cj.Name, err)
	}
	for i := range ops {
		if rest, ok := strings.CutPrefix(ops[i].Path, "/spec/template"); ok {
			ops[i].Path = jobTemplatePath + rest
		}
	}
	sum := sha1.Sum([]byte(string(cj.UID) + "/" + cj.ResourceVersion))
	job := key.Record(cj, cj.Name[:min(len(cj.Name), 48)]+"-reload-"+hex.EncodeToString(sum[:])[:7])
	if cj.Annotations == nil && !workload.CreatesAnnotations(ops) { // an op before may have created the map
		ops = append(ops, policy.JSONOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{PendingAnnotation: job}})
	} else {
		ops = append(ops, policy.JSONOp{Op: "add", Path: "/metadata/annotations/" + strings.ReplaceAll(PendingAnnotation, "/", "~1"), Value: job})
	}
	return json.Marshal(ops)
}

// jobFromCronJob is the Job a CronJob runs when instantiated by hand, as kubectl create job
// --from=cronjob does and stakater Reloader does: the job template, owned by the CronJob, marked
// cronjob.kubernetes.io/instantiate: manual.
func jobFromCronJob(cj *batchv1.CronJob, name string) *batchv1.Job {
	annotations := map[string]string{"cronjob.kubernetes.io/instantiate": "manual"}
	maps.Copy(annotations, cj.Spec.JobTemplate.Annotations)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: cj.Namespace, Annotations: annotations, Labels: cj.Spec.JobTemplate.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))},
		},
		Spec: *cj.Spec.JobTemplate.Spec.DeepCopy(),
	}
}

// JobKind serves Jobs; their reload, which needs the state ConfigMap, is wired by the
// controller (Runs.Wire).
func JobKind(c *kube.Clients, ns string, link *kube.Link, transform cache.TransformFunc) *workload.Kind {
	k := workload.TypedKind("Job", &batchv1.Job{},
		func(j *batchv1.Job) *corev1.PodTemplateSpec {
			if ranByCronJob(j) {
				return nil
			}
			return &j.Spec.Template
		},
		func(ns string) workload.TypedClient[*batchv1.Job, *batchv1.JobList] { return c.Jobs(ns) }, ns, link, transform)
	k.Probe = func(ctx context.Context) error {
		_, err := c.Jobs(ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}
	return k
}

// ranByCronJob reports a Job that a CronJob controls (run on schedule, or by a reload). Such a
// Job is no workload of its own: its CronJob is, and the CronJob's reload runs one Job for a
// change. Recreating the Jobs it ran too, which carry its template's annotations, would run the
// change again once per Job kept in its history. stakater Reloader does recreate them.
func ranByCronJob(j *batchv1.Job) bool {
	ref := metav1.GetControllerOf(j)
	return ref != nil && ref.Kind == "CronJob" && strings.HasPrefix(ref.APIVersion, batchv1.GroupName+"/")
}

// Runs is the part that runs a Job again: written down in the state before the Job is
// deleted, created again once it is gone, and finished after a stop or a refused create. The
// markers of a Job created late come from the controller's rule (Planner).
type Runs struct {
	api API
	// notes is the first state ConfigMap, where recreations are written down.
	notes Notes
	// key signs the notes and checks them (jobNote); scope says whether a namespace is one
	// this reloader may act in.
	key     RunKey
	scope   Scope
	planner Planner
	queue   Queue
	cache   Cache // the Job informer's cache
	reports *report.Reporter
	metrics *metrics.Metrics
	log     *slog.Logger
	// recreations: the Job recreations written down and not finished, by note key.
	recreations sync.Map // string → jobRecreation
	// held: those whose create waits for content that validates (heldInvalid), by note key.
	held sync.Map // string → namespace
}

// Deps is what Runs needs of the rest of the reloader, each behind an interface of its own.
type Deps struct {
	API     API
	Notes   Notes
	Key     RunKey
	Scope   Scope
	Planner Planner
	Queue   Queue
	Cache   Cache
	Reports *report.Reporter
	Metrics *metrics.Metrics
	Log     *slog.Logger
}

// NewRuns returns the part over d.
func NewRuns(d Deps) *Runs {
	return &Runs{api: d.API, notes: d.Notes, key: d.Key, scope: d.Scope, planner: d.Planner, queue: d.Queue,
		cache: d.Cache, reports: d.Reports, metrics: d.Metrics, log: d.Log}
}

// API gives the Jobs of a namespace: kube.Clients.Jobs in a run.
type API interface {
	Jobs(namespace string) Client
}

// Client is what a Job's recreation needs of the API server in one namespace.
type Client interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*batchv1.Job, error)
	Create(ctx context.Context, job *batchv1.Job, opts metav1.CreateOptions) (*batchv1.Job, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Notes is the first state ConfigMap: read whole at start, and written one key at a time (the
// notes are its other keys, state.Store.WriteOther).
type Notes interface {
	Notes(ctx context.Context) (*corev1.ConfigMap, error)
	WriteOther(ctx context.Context, key string, value *string) error
}

// Scope says whether namespace ns is one this reloader may act in.
type Scope interface {
	InScope(ns string) bool
}

// Planner gives a Job created late the markers of the content its configs hold now, and lists
// the configs its pods would read whose content does not validate.
type Planner interface {
	CurrentMarkers(job *batchv1.Job) (*batchv1.Job, error)
	JobInvalid(job *batchv1.Job) []string
}

// Queue is the controller's workqueue, where a Job is synced again.
type Queue interface {
	Add(k workload.Key)
}

// Cache is the Job informer's cache (workload.Kind.Cached), by namespace/name.
type Cache interface {
	Cached(key string) (any, bool, error)
}

// Wire makes a Job's reload, for Jobs of kind k, a recreation: deleted, and created again under
// the same name with the markers in its template (a Job's template cannot be changed in place).
func (j *Runs) Wire(k *workload.Kind) {
	k.Reload = func(ctx context.Context, ns, name string, body []byte) (any, error) {
		obj, ok, err := k.Cached(ns + "/" + name)
		if err != nil || !ok {
			return nil, workload.ErrStale
		}
		old := obj.(*batchv1.Job)
		job, err := RecreatedJob(old, body)
		if err != nil {
			return nil, err
		}
		return j.recreate(ctx, old, job)
	}
	k.Unfinished = j.finishFailed
}

// jobRecreationPrefix starts the key, in the first state ConfigMap, under which a Job's
// recreation is written down before the Job is deleted and removed once it exists again. Between
// the two requests no Job exists, so a reloader stopped there would otherwise lose it. The state
// package leaves keys with other prefixes alone.
const jobRecreationPrefix = "reloader.job-recreation_"

// jobRecreation is what is written down: the Job to delete, and the Job to create.
type jobRecreation struct {
	OldUID types.UID    `json:"oldUID"`
	Job    *batchv1.Job `json:"job"`
}

// jobNote is a recreation as it is stored: its exact bytes, and their MAC under the hash key
// (confighash.NoteMAC) over the note's state key and those bytes. Whoever may patch the state
// may write a note; only one this reloader wrote is acted on (trusted).
type jobNote struct {
	Note json.RawMessage `json:"note"`
	MAC  string          `json:"mac"`
}

// jobNotePurpose names the sub-key of the hash key that notes are signed with.
const jobNotePurpose = "job-recreation"

// ReasonJobNoteDropped is the Warning, on the state ConfigMap, of a note that is not acted on.
const ReasonJobNoteDropped = "JobRecreationNoteDropped"

// SignedNote is the state entry (key and value) that a reloader whose hash key is k writes down
// before it deletes the Job of UID oldUID to create job in its place.
func SignedNote(k confighash.Key, oldUID types.UID, job *batchv1.Job) (key, value string, err error) {
	j := &Runs{key: func() confighash.Key { return k }}
	key = jobRecreationKey(job.Namespace, job.Name)
	value, err = j.encode(key, &jobRecreation{OldUID: oldUID, Job: job})
	return key, value, err
}

// noteSigned is what a note's MAC covers: its state key, then its bytes.
func noteSigned(key string, body []byte) []byte { return append([]byte(key+"\x00"), body...) }

// encode is r as stored under key: signed.
func (j *Runs) encode(key string, r *jobRecreation) (string, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encode the recreation of Job %s/%s: %w", r.Job.Namespace, r.Job.Name, err)
	}
	b, err := json.Marshal(jobNote{Note: body, MAC: j.key().NoteMAC(jobNotePurpose, noteSigned(key, body))})
	if err != nil {
		return "", fmt.Errorf("encode the recreation of Job %s/%s: %w", r.Job.Namespace, r.Job.Name, err)
	}
	return string(b), nil
}

// trusted decodes the note stored under key, or says why it is not acted on: only a note whose
// MAC verifies under the hash key, for the Job its key names, in a namespace this reloader may
// act in (--namespace, --namespaces-to-ignore; not --namespace-selector, which a namespace may
// have left since the Job was deleted), is finished.
func (j *Runs) trusted(key, v string) (r jobRecreation, why string) {
	var n jobNote
	if err := json.Unmarshal([]byte(v), &n); err != nil || n.MAC == "" {
		return r, "it carries no MAC (forged, or written by a version before notes were signed)"
	}
	switch ok, other := j.key().VerifyNote(jobNotePurpose, noteSigned(key, n.Note), n.MAC); {
	case other:
		return r, "its MAC names another hash key (forged, or the key Secret was replaced since)"
	case !ok:
		return r, "its MAC does not verify (forged or edited)"
	}
	if err := json.Unmarshal(n.Note, &r); err != nil || r.Job == nil {
		return r, "it is unreadable"
	}
	if jobRecreationKey(r.Job.Namespace, r.Job.Name) != key {
		return r, "its key does not name its Job"
	}
	if !j.scope.InScope(r.Job.Namespace) {
		return r, "its namespace is not one this reloader watches"
	}
	return r, ""
}

// drop removes a note that is not acted on, said once: an error log and a Warning Event on the
// state ConfigMap that held it (a forged note's Job may not exist, or be anyone's).
func (j *Runs) drop(ctx context.Context, shard *corev1.ConfigMap, key, why string) {
	j.log.Error("dropped a Job recreation written down in the state: no Job is created for it", "key", key, "reason", why)
	j.reports.Event(shard, corev1.EventTypeWarning, ReasonJobNoteDropped,
		"Dropped "+key+" from the state, no Job created: "+why)
	if err := j.note(ctx, key, nil); err != nil {
		j.log.Error("cannot remove a dropped Job recreation from the state; it is dropped again at the next start", "key", key, "err", err)
	}
}

// recreate deletes old, only in the version the decision was made on, and creates job in
// its place, once, even across a restart in between (finish).
func (j *Runs) recreate(ctx context.Context, old, job *batchv1.Job) (*batchv1.Job, error) {
	r := jobRecreation{OldUID: old.UID, Job: job}
	key := jobRecreationKey(job.Namespace, job.Name)
	if err := j.note(ctx, key, &r); err != nil {
		return nil, err
	}
	background := metav1.DeletePropagationBackground
	err := j.api.Jobs(old.Namespace).Delete(ctx, old.Name, metav1.DeleteOptions{PropagationPolicy: &background,
		Preconditions: &metav1.Preconditions{UID: &old.UID, ResourceVersion: &old.ResourceVersion}})
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		err = fmt.Errorf("delete Job %s/%s to create it again: %w", old.Namespace, old.Name, err)
	}
	out, _, finished := j.finish(ctx, key, r, false)
	switch {
	case finished != nil:
		return nil, finished
	case out == nil && err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err):
		return nil, err
	case out == nil:
		return nil, workload.ErrStale // changed or recreated by someone else: judged again
	}
	return out, nil
}

// jobRecreationKey is the key of Job ns/name's note; neither a namespace nor a Job name holds
// an underscore.
func jobRecreationKey(ns, name string) string { return jobRecreationPrefix + ns + "_" + name }

// finish brings a written-down recreation to its end, from whatever point it
// stopped: the old Job still there means it was not deleted (nothing to do, out nil); gone, the
// Job is created (created true; an existing one of that name, created before a stop, is kept).
// The note is then removed. A Job still being deleted (it has finalizers) is an error: retried
// later. So is a failed create; a namespace gone has nothing left to create. Created late
// (refresh), its pods read the content now: while some does not validate, it is held
// (heldInvalid), as any reload is (reloader/safe/validate.go).
func (j *Runs) finish(ctx context.Context, key string, r jobRecreation, refresh bool) (out *batchv1.Job, created bool, err error) {
	jobs := j.api.Jobs(r.Job.Namespace)
	cur, err := jobs.Get(ctx, r.Job.Name, metav1.GetOptions{})
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return nil, false, fmt.Errorf("read Job %s/%s to finish its recreation: %w", r.Job.Namespace, r.Job.Name, err)
	case err == nil && cur.UID == r.OldUID && cur.DeletionTimestamp != nil:
		return nil, false, fmt.Errorf("job %s/%s is still being deleted; it is created again once gone", r.Job.Namespace, r.Job.Name)
	case err == nil && cur.UID != r.OldUID:
		out = cur // created already
	case err != nil:
		if refresh {
			if bad := j.planner.JobInvalid(r.Job); len(bad) > 0 {
				return nil, false, heldInvalid{configs: bad}
			}
			// Just before the create, not before the read: a read retried through an outage
			// left a Job with the markers and last-reload of before it (soak seed
			// 1795716445547611246@4 ran it again at once for the content changed meanwhile,
			// under its minimum interval).
			j.refreshMarkers(&r)
		}
		out, err = jobs.Create(ctx, r.Job, metav1.CreateOptions{FieldManager: "reloader"})
		switch {
		case apierrors.IsAlreadyExists(err):
			return j.finish(ctx, key, r, false) // created meanwhile: read what exists
		case apierrors.IsNotFound(err):
			out = nil // its namespace is gone
		case err != nil:
			return nil, false, fmt.Errorf("create Job %s/%s again after deleting it: %w", r.Job.Namespace, r.Job.Name, err)
		default:
			created = true
		}
	}
	return out, created, j.note(ctx, key, nil)
}

// finishFailed finishes, first in each sync of Job ns/name, its recreation whose
// create failed (refused by admission, over quota, the API unreachable), in this run or one
// before (resume): the Job is gone, so no event of its own would bring it back. A
// refusal is retried as a refused patch is, up to every refusedRetryMax; the failure was
// reported once, by the sync that deleted the Job, or at the start. The Job created is the one
// written down, with the markers of the configs' content now (Planner.CurrentMarkers).
func (j *Runs) finishFailed(ctx context.Context, ns, name string) error {
	key := jobRecreationKey(ns, name)
	v, ok := j.recreations.Load(key)
	if !ok {
		return nil
	}
	r := v.(jobRecreation)
	out, created, err := j.finish(ctx, key, r, true)
	if held := (heldInvalid{}); errors.As(err, &held) {
		j.warnHeld(key, r, held)
		return nil // woken when the content validates (WakeHeld)
	}
	j.held.Delete(key)
	if err != nil && workload.Refused(err) {
		return workload.RetryLater{Err: err}
	} else if err != nil {
		return err
	}
	j.reports.Forget(string(r.OldUID))
	j.reports.Forget(key)
	if created {
		j.metrics.CountReload("Job", metrics.ResultSuccess, ns)
		j.reports.Event(out, corev1.EventTypeNormal, "Reloaded", "Created again: its recreation's create had failed")
		j.log.Info("created a Job again whose recreation's create had failed", "namespace", ns, "name", name)
	}
	if obj, ok, _ := j.cache.Cached(ns + "/" + name); ok && out != nil && obj.(metav1.Object).GetUID() == r.OldUID {
		return workload.ErrStale // the cache has not seen the delete yet: judge the Job that exists now
	}
	return nil
}

// refreshMarkers gives r's Job the markers of the content its configs hold now; failing that,
// it is created as written down, and recreated once more for the content it was decided on.
func (j *Runs) refreshMarkers(r *jobRecreation) {
	job, err := j.planner.CurrentMarkers(r.Job)
	if err != nil {
		j.log.Warn("cannot update the markers of a Job to create again; it is created as written down",
			"namespace", r.Job.Namespace, "name", r.Job.Name, "err", err)
		return
	}
	r.Job = job
}

// note writes r under key in the first state ConfigMap, or removes it (r nil),
// through the store's fenced write of that key alone (state.Store.WriteOther).
func (j *Runs) note(ctx context.Context, key string, r *jobRecreation) error {
	var value *string
	if r != nil {
		v, err := j.encode(key, r)
		if err != nil {
			return err
		}
		value = &v
	}
	if err := j.notes.WriteOther(ctx, key, value); err != nil {
		return fmt.Errorf("write down a Job recreation: %w", err)
	}
	if r != nil {
		j.recreations.Store(key, *r)
	} else {
		j.recreations.Delete(key)
		j.held.Delete(key)
	}
	return nil
}

// Resume finishes, at start once the caches synced, the Job recreations a stopped
// reloader left written down, each with the markers of the content its configs hold now, which
// its pods read (a config may have changed since it was written down: checker soak seed
// 1795656990008005193 ran such a Job twice). One that cannot be finished now (its create still refused) is logged and left to the
// syncs of its Job's key, queued here, which retry it (finishFailed). One this reloader did not
// write, or outside its scope, is dropped (trusted, drop).
func (j *Runs) Resume(ctx context.Context) {
	shard, err := j.notes.Notes(ctx)
	if err != nil {
		j.log.Error("cannot read the Job recreations left unfinished; they are finished at the next start", "err", err)
		return
	}
	for note, v := range shard.Data {
		if !strings.HasPrefix(note, jobRecreationPrefix) {
			continue
		}
		r, why := j.trusted(note, v)
		if why != "" {
			j.drop(ctx, shard, note, why)
			continue
		}
		_, created, err := j.finish(ctx, note, r, true)
		if held := (heldInvalid{}); errors.As(err, &held) {
			j.recreations.Store(note, r)
			j.warnHeld(note, r, held)
		} else if err != nil {
			j.log.Error("cannot finish a Job recreation left unfinished; retrying", "key", note, "err", err)
			j.metrics.CountReload("Job", metrics.ResultFailure, r.Job.Namespace)
			j.recreations.Store(note, r)
			j.queue.Add(workload.Key{Kind: "Job", Namespace: r.Job.Namespace, Name: r.Job.Name})
		} else if created {
			j.log.Info("created a Job again whose recreation a stopped reloader left unfinished", "namespace", r.Job.Namespace, "name", r.Job.Name)
		}
	}
}

// heldInvalid: a Job to create late would read content that does not validate.
type heldInvalid struct{ configs []string }

func (e heldInvalid) Error() string {
	return "its pods would read " + strings.Join(e.configs, ", ") + ", whose current content does not validate"
}

// warnHeld says once, on the Job's name (no Job exists), that its creation waits for valid
// content (soak seed 1795734170280237636@4: a recreation refused, then finished after a config
// it reads stopped validating, ran the Job on that content).
func (j *Runs) warnHeld(note string, r jobRecreation, held heldInvalid) {
	j.held.Store(note, r.Job.Namespace)
	msg := "Run held: the Job was deleted to be created again, and " + held.Error() + " (see its InvalidConfig Event); " +
		"it is created once that content is fixed, reverted or the config deleted"
	if j.reports.Warn(r.Job, note, workload.ReasonHeldInvalid, msg) {
		j.log.Warn("Job creation held: its pods would read a config whose content does not validate", "namespace", r.Job.Namespace,
			"name", r.Job.Name, "configs", strings.Join(held.configs, ", "))
	}
}

// WakeHeld queues the Jobs of namespace ns whose create waits for content that validates, when
// a config there validates again or is deleted. A recreation refused for another reason keeps
// its own retry: a config sync does not add an API call for it.
func (j *Runs) WakeHeld(ns string) {
	j.held.Range(func(note, v any) bool {
		if v.(string) == ns {
			if r, ok := j.recreations.Load(note); ok {
				j.queue.Add(workload.Key{Kind: "Job", Namespace: ns, Name: r.(jobRecreation).Job.Name})
			}
		}
		return true
	})
}

// jobLabels are set by the API server from a Job's UID and name; a new Job gets its own.
var jobLabels = []string{"controller-uid", "job-name", batchv1.ControllerUidLabel, batchv1.JobNameLabel}

// RecreatedJob applies the patch to a copy of old and strips what the API server assigns, as
// stakater Reloader does: identity, status, the generated selector and the labels derived from
// the UID.
func RecreatedJob(old *batchv1.Job, body []byte) (*batchv1.Job, error) {
	p, err := jsonpatch.DecodePatch(body)
	if err != nil {
		return nil, fmt.Errorf("decode patch of Job %s/%s: %w", old.Namespace, old.Name, err)
	}
	doc, err := json.Marshal(old)
	if err != nil {
		return nil, fmt.Errorf("encode Job %s/%s: %w", old.Namespace, old.Name, err)
	}
	if doc, err = p.Apply(doc); err != nil {
		return nil, errors.Join(workload.ErrStale, fmt.Errorf("apply patch to Job %s/%s: %w", old.Namespace, old.Name, err))
	}
	job := &batchv1.Job{}
	if err := json.Unmarshal(doc, job); err != nil {
		return nil, fmt.Errorf("decode patched Job %s/%s: %w", old.Namespace, old.Name, err)
	}
	job.ObjectMeta = metav1.ObjectMeta{Name: old.Name, Namespace: old.Namespace, Labels: job.Labels,
		Annotations: job.Annotations, OwnerReferences: job.OwnerReferences, Finalizers: job.Finalizers}
	job.Status = batchv1.JobStatus{}
	for _, l := range jobLabels {
		delete(job.Labels, l)
		delete(job.Spec.Template.Labels, l)
	}
	if job.Spec.ManualSelector == nil || !*job.Spec.ManualSelector {
		job.Spec.Selector = nil
	}
	return job, nil
}
