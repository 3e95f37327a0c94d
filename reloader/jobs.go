package reloader

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/reloader/reloader/internal/kube"
	"github.com/reloader/reloader/policy"
)

// CronJobs and Jobs are reloaded with stakater Reloader's semantics: a CronJob runs a new Job
// from its template now, a Job is deleted and created again. Both take --ignored-workload-types.
const (
	TypeCronJobs = "cronjobs"
	TypeJobs     = "jobs"
)

// pendingJobAnnotation, on a CronJob, names the Job its last reload is to run. It is set by the
// same patch that writes the markers, so a reload is recorded atomically, and cleared once the
// Job exists: a reloader stopped in between creates the Job on its next start, and a Job
// already created is not created twice (its name is fixed).
const pendingJobAnnotation = "reloader/pending-job"

// jobTemplatePath is where a CronJob's pod template is; policy's patches address a pod template
// at /spec/template, as in every other kind.
const jobTemplatePath = "/spec/jobTemplate/spec/template"

// cronJobKind reloads a CronJob: one patch writes the markers into its job template and names
// the Job to run; resume then creates that Job.
func cronJobKind(c *kube.Clients, ns string, link *kube.Link, transform cache.TransformFunc) *workloadKind {
	k := typedKind("CronJob", &batchv1.CronJob{},
		func(cj *batchv1.CronJob) *corev1.PodTemplateSpec { return &cj.Spec.JobTemplate.Spec.Template },
		func(ns string) typedClient[*batchv1.CronJob, *batchv1.CronJobList] { return c.CronJobs(ns) }, ns, link, transform)
	k.patch = func(ctx context.Context, ns, name string, body []byte) (any, error) {
		obj, ok, err := k.informer.GetIndexer().GetByKey(ns + "/" + name)
		if err != nil || !ok {
			return nil, errStale
		}
		cj := obj.(*batchv1.CronJob)
		body, err = cronJobPatch(cj, body)
		if err != nil {
			return nil, err
		}
		out, err := c.CronJobs(ns).Patch(ctx, name, types.JSONPatchType, body, metav1.PatchOptions{})
		if err != nil {
			return nil, err
		}
		// The Job is created at once; if this fails, the CronJob's own update event brings it
		// back to resume, which retries.
		_ = k.resume(ctx, out)
		return out, nil
	}
	k.probe = func(ctx context.Context) error {
		_, err := c.CronJobs(ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}
	k.resume = func(ctx context.Context, obj any) error {
		cj := obj.(*batchv1.CronJob)
		name := cj.Annotations[pendingJobAnnotation]
		if name == "" {
			return nil
		}
		_, err := c.Jobs(cj.Namespace).Create(ctx, jobFromCronJob(cj, name), metav1.CreateOptions{FieldManager: "reloader"})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create Job %s/%s for CronJob %s: %w", cj.Namespace, name, cj.Name, err)
		}
		at := "/metadata/annotations/" + strings.ReplaceAll(pendingJobAnnotation, "/", "~1")
		clear, _ := json.Marshal([]policy.JSONOp{{Op: "test", Path: at, Value: name}, {Op: "remove", Path: at}})
		_, err = c.CronJobs(cj.Namespace).Patch(ctx, cj.Name, types.JSONPatchType, clear, metav1.PatchOptions{})
		if isStale(err) || apierrors.IsNotFound(err) {
			return nil // already cleared, or the CronJob is gone
		}
		if err != nil {
			return fmt.Errorf("clear %s on CronJob %s/%s: %w", pendingJobAnnotation, cj.Namespace, cj.Name, err)
		}
		return nil
	}
	return k
}

// cronJobPatch moves policy's ops to the job template and adds the name of the Job to run.
// The name is fixed by the CronJob's UID and the resourceVersion the patch tests, so each
// reload has its own.
func cronJobPatch(cj *batchv1.CronJob, body []byte) ([]byte, error) {
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
	job := cj.Name[:min(len(cj.Name), 48)] + "-reload-" + hex.EncodeToString(sum[:])[:7]
	if cj.Annotations == nil {
		ops = append(ops, policy.JSONOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{pendingJobAnnotation: job}})
	} else {
		ops = append(ops, policy.JSONOp{Op: "add", Path: "/metadata/annotations/" + strings.ReplaceAll(pendingJobAnnotation, "/", "~1"), Value: job})
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

// jobKind reloads a Job by deleting it and creating it again under the same name, with the
// markers in its template (a Job's template cannot be changed in place).
func jobKind(c *kube.Clients, ns string, link *kube.Link, transform cache.TransformFunc) *workloadKind {
	k := typedKind("Job", &batchv1.Job{},
		func(j *batchv1.Job) *corev1.PodTemplateSpec { return &j.Spec.Template },
		func(ns string) typedClient[*batchv1.Job, *batchv1.JobList] { return c.Jobs(ns) }, ns, link, transform)
	k.probe = func(ctx context.Context) error {
		_, err := c.Jobs(ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}
	k.patch = func(ctx context.Context, ns, name string, body []byte) (any, error) {
		obj, ok, err := k.informer.GetIndexer().GetByKey(ns + "/" + name)
		if err != nil || !ok {
			return nil, errStale
		}
		old := obj.(*batchv1.Job)
		job, err := recreatedJob(old, body)
		if err != nil {
			return nil, err
		}
		// Only the version the patch was computed from is deleted: a Job changed or recreated
		// by someone else meanwhile is left alone, and judged again.
		background := metav1.DeletePropagationBackground
		err = c.Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &background,
			Preconditions: &metav1.Preconditions{UID: &old.UID, ResourceVersion: &old.ResourceVersion}})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil, errStale
		}
		if err != nil {
			return nil, err
		}
		out, err := c.Jobs(ns).Create(ctx, job, metav1.CreateOptions{FieldManager: "reloader"})
		if err != nil {
			return nil, fmt.Errorf("create Job %s/%s again after deleting it: %w", ns, name, err)
		}
		return out, nil
	}
	return k
}

// jobLabels are set by the API server from a Job's UID and name; a new Job gets its own.
var jobLabels = []string{"controller-uid", "job-name", batchv1.ControllerUidLabel, batchv1.JobNameLabel}

// recreatedJob applies the patch to a copy of old and strips what the API server assigns, as
// stakater Reloader does: identity, status, the generated selector and the labels derived from
// the UID.
func recreatedJob(old *batchv1.Job, body []byte) (*batchv1.Job, error) {
	p, err := jsonpatch.DecodePatch(body)
	if err != nil {
		return nil, fmt.Errorf("decode patch of Job %s/%s: %w", old.Namespace, old.Name, err)
	}
	doc, err := json.Marshal(old)
	if err != nil {
		return nil, fmt.Errorf("encode Job %s/%s: %w", old.Namespace, old.Name, err)
	}
	if doc, err = p.Apply(doc); err != nil {
		return nil, errors.Join(errStale, fmt.Errorf("apply patch to Job %s/%s: %w", old.Namespace, old.Name, err))
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

// dropForbiddenKinds turns off, before the informers start, each kind with a probe that the
// reloader may not list: a Role written before CronJob and Job reloads existed (or stakater's
// chart with them ignored) would otherwise keep every cache from syncing, and so every reload
// from happening. It is said once, with what to grant.
func (c *Controller) dropForbiddenKinds(ctx context.Context) {
	for name, k := range c.kinds {
		if k.probe == nil {
			continue
		}
		if err := k.probe(ctx); !apierrors.IsForbidden(err) {
			continue
		}
		c.log.Warn("the reloader may not list "+name+"s: their reloads are off; grant get, list and watch on them (and what reloading them needs, see README.md), or pass --ignored-workload-types to say so",
			"kind", name)
		delete(c.kinds, name)
		i := slices.Index(c.informers, k.informer)
		c.informers = slices.Delete(c.informers, i, i+1)
		c.hasSynced = slices.Delete(c.hasSynced, i, i+1)
	}
}
