package reloader_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/reloader"
)

// Found by the randomized checker (gen 3, seed 1): a Job created while another dependent's
// refusal held the state behind was recreated at once, for the content it already read. A
// CronJob would run a Job for it. A Deployment created then is remembered as running the
// current content (TestWorkloadCreatedWhileTheStateIsBehindIsNotRestartedForWhatItRuns); a
// CronJob and a Job must be too.
func TestCronJobsAndJobsCreatedWhileTheStateIsBehindRunNothingForWhatTheyRead(t *testing.T) {
	t.Parallel()
	ns, lift, _, _ := stateHeldBehind(t)
	cj := createCronJob(t, ns, "cj", named("configmap", "app-config")) // reads B
	job := createJob(t, ns, "job", named("configmap", "app-config"))
	settle(t)
	if n := len(jobsOf(t, ns, cj.UID)); n != 0 {
		t.Errorf("the CronJob created while the state was behind ran %d Jobs for the content it reads", n)
	}
	if got := getJob(t, ns, "job"); got.UID != job.UID {
		t.Error("the Job created while the state was behind was created again for the content it reads")
	}

	// Positive control: a change after their creation runs the CronJob once and recreates the
	// Job once.
	hashC := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	waitFor(t, 30*time.Second, "a Job of the CronJob and the Job created again, for content C", func() (bool, error) {
		jobs := jobsOf(t, ns, cj.UID)
		again, err := cluster.Client().BatchV1().Jobs(ns).Get(context.Background(), "job", metav1.GetOptions{})
		if err != nil {
			return false, nil // between its deletion and its creation
		}
		return len(jobs) == 1 && jobEnv(&jobs[0], cmVar) == hashC && again.UID != job.UID && jobEnv(again, cmVar) == hashC, nil
	})
	settle(t)
	if n := len(jobsOf(t, ns, cj.UID)); n != 1 {
		t.Errorf("one change ran the CronJob %d times", n)
	}
	lift()
}

// Soak seed 1795669739113515719@4: a workload created while the state was behind, reading only
// an optional key the config does not hold, was restarted when the config was deleted and
// recreated, still without the key: the deletion and the creation made what was remembered of
// it unknown, though its pods read the same with or without the config.
func TestWorkloadReadingAnAbsentKeyIsNotRestartedWhenItsConfigIsRecreatedWithoutIt(t *testing.T) {
	t.Parallel()
	ns, lift, _, _ := stateHeldBehind(t)
	optional := true
	createDeployment(t, ns, "reader", 0, map[string]string{"reloader.stakater.com/auto": "true"}, func(s *corev1.PodSpec) {
		s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: "a", Optional: &optional}}})
	})
	settle(t)
	before := getDeployment(t, ns, "reader").Generation

	if err := cluster.Client().CoreV1().ConfigMaps(ns).Delete(context.Background(), "app-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	settle(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	waitEnv(t, ns, "w1", cmVar, confighash.ConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "C"}}))
	wantReloads(t, ns, "reader", before, 0)

	// Positive control: the key it reads appears, and restarts it once.
	updateConfigMap(t, ns, "app-config", map[string]string{"v": "C", "a": "1"})
	waitFor(t, 30*time.Second, "reader reloaded for key a", func() (bool, error) {
		return getDeployment(t, ns, "reader").Generation == before+1, nil
	})
	wantReloads(t, ns, "reader", before, 1)
	lift()
}

// An Argo Rollout or a DeploymentConfig created while another dependent holds the state back
// runs the config's content at its creation, as a Deployment does
// (TestWorkloadCreatedWhileTheStateIsBehindIsNotRestartedForWhatItRuns): it is not restarted
// for it. Positive control: a change after their creation reloads each once.
func TestRolloutsAndDeploymentConfigsCreatedWhileTheStateIsBehindAreNotRestartedForWhatTheyRun(t *testing.T) {
	t.Parallel()
	ensureCRDs(t)
	ns, lift, _, _ := stateHeldBehindWith(t, func(o *reloader.Options) { o.ArgoRollouts, o.OpenShift = true, true })
	custom := []struct {
		gvr        schema.GroupVersionResource
		kind, name string
	}{{rolloutsGVR, "Rollout", "rollout"}, {deploymentConfigsGVR, "DeploymentConfig", "dc"}}
	for _, c := range custom {
		createCustom(t, c.gvr, c.kind, ns, c.name, named("configmap", "app-config")) // runs B
	}
	settle(t)
	for _, c := range custom {
		if v, _ := templateEnv(t, c.gvr, ns, c.name, cmVar); v != "" {
			t.Errorf("the %s created while the state was behind was restarted for the content it runs (%s=%s)", c.kind, cmVar, v)
		}
	}

	hashC := updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	for _, c := range custom {
		waitFor(t, 30*time.Second, c.kind+" reloaded for C", func() (bool, error) {
			v, _ := templateEnv(t, c.gvr, ns, c.name, cmVar)
			return v == hashC, nil
		})
	}
	lift()
}
