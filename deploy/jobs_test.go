package deploy_test

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// createBatchApp creates CronJob app-cron (scheduled once a year, so only a reload runs it) and
// Job app-job, both reloading on app-config, in ns; it returns the Job's UID.
func createBatchApp(t *testing.T, ns string) types.UID {
	t.Helper()
	ctx := context.Background()
	annotations := map[string]string{"configmap.reloader.stakater.com/reload": "app-config"}
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "app", Image: "fake"}}}}
	_, err := cluster.Client().BatchV1().CronJobs(ns).Create(ctx, &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "app-cron", Annotations: annotations},
		Spec:       batchv1.CronJobSpec{Schedule: "0 0 1 1 *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create CronJob: %v", err)
	}
	job, err := cluster.Client().BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "app-job", Annotations: annotations}, Spec: batchv1.JobSpec{Template: tmpl},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Job: %v", err)
	}
	return job.UID
}

// checkBatchReloaded waits until, after a change of app-config, CronJob app-cron has run a Job
// and Job app-job has been created again (another UID).
func checkBatchReloaded(t *testing.T, ns string, jobUID types.UID) {
	t.Helper()
	poll(t, "a Job run by CronJob app-cron", func(ctx context.Context) (bool, error) {
		jobs, err := cluster.Client().BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, j := range jobs.Items {
			if ref := metav1.GetControllerOf(&j); ref != nil && ref.Kind == "CronJob" && ref.Name == "app-cron" {
				return true, nil
			}
		}
		return false, nil
	})
	poll(t, "Job app-job created again", func(ctx context.Context) (bool, error) {
		j, err := cluster.Client().BatchV1().Jobs(ns).Get(ctx, "app-job", metav1.GetOptions{})
		return err == nil && j.UID != jobUID, nil
	})
}
