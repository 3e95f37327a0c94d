package reloader_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// A workload is made to read key a of a deleted ConfigMap: its pods wait for it, as the state
// notes. Its namespace leaves the selection; the ConfigMap comes back and changes, the reloader
// restarts, another actor restarts the workload's pods (they read the content then) and the
// ConfigMap changes again. When the namespace enters again, which content the pods run is
// unknown, as at a start after a downtime: the workload is reloaded once. The start, out of
// the selection, could not judge its dependents, and the entry took the note to mean the pods
// run the content seen then (checker seed 156@10).
func aConfigBackWhileItsNamespaceWasOutReloadsPodsThatWaitedForIt(t *testing.T) {
	stateNS, ns, selected, opts := selectedWithState(t, func(o *reloader.Options) { o.ReloadOnCreate = true })
	createConfigMap(t, ns, "cm-1", map[string]string{"a": "0"})
	createDeployment(t, ns, "w-0", 1, auto, nil)
	r := startController(t, stateNS, opts)
	settle(t)
	deleteConfigMap(t, ns, "cm-1")
	settle(t)
	updateDeployment(t, ns, "w-0", func(d *appsv1.Deployment) {
		c := &d.Spec.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-1"}, Key: "a"}}})
	})
	waitFor(t, 10*time.Second, "w-0 noted waiting for cm-1", func() (bool, error) {
		return len(stateValues(t, stateNS, "strip.")) == 1, nil
	})

	labelNamespace(t, ns, nil)
	createConfigMap(t, ns, "cm-1", map[string]string{"a": "2"})
	updateConfigMap(t, ns, "cm-1", map[string]string{"a": "5"})
	r.stop(t)
	r = startController(t, stateNS, opts)
	updateDeployment(t, ns, "w-0", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "fake2" })
	updateConfigMap(t, ns, "cm-1", map[string]string{"a": "3"})
	settle(t)
	if strings.Contains(r.log.String(), "reloaded workload") {
		t.Fatalf("reloaded while the namespace was out:\n%s", r.log.String())
	}

	labelNamespace(t, ns, selected)
	waitFor(t, 30*time.Second, "w-0 reloaded for cm-1", func() (bool, error) {
		_, set := env(getDeployment(t, ns, "w-0"), "app", "_RELOADER_-configmap-cm-1")
		return set, nil
	})
	settle(t)
	if n := strings.Count(r.log.String(), "reloaded workload"); n != 1 {
		t.Fatalf("w-0 reloaded %d times on the entry, want 1:\n%s", n, r.log.String())
	}
}

// ConfigMap cm-1 is recorded with a=0, which w-0 carries a marker of. Its namespace leaves the
// selection; meanwhile cm-1 changes to a=3, w-2, naming it, is created (its pods read a=3) and
// cm-1 is deleted. Once the namespace is in again, cm-1 is created with a=0: w-2, without a
// marker, runs another content and is reloaded once; w-0's marker holds a=0 and it is not. The
// entry tombstoned cm-1 with the content recorded before the leave, which the recreation
// matched (checker seed 4928@9).
func aConfigDeletedWhileItsNamespaceWasOutOfTheSelectionReloadsOnItsRecreationWhatWasCreatedMeanwhile(t *testing.T) {
	for _, onCreate := range []bool{true, false} {
		t.Run(map[bool]string{true: "reload-on-create", false: "not on create"}[onCreate], func(t *testing.T) {
			t.Parallel()
			stateNS, ns, selected, opts := selectedWithState(t, func(o *reloader.Options) { o.ReloadOnCreate = onCreate })
			const marker = "_RELOADER_-configmap-cm-1"
			a0 := map[string]string{"a": "0"}
			createConfigMap(t, ns, "cm-1", map[string]string{"a": "5"})
			createDeployment(t, ns, "w-0", 0, named("configmap", "cm-1"), nil)
			r := startController(t, stateNS, opts)
			settle(t)
			updateConfigMap(t, ns, "cm-1", a0)
			waitEnv(t, ns, "w-0", marker, hashOfData(a0))
			waitRecorded(t, r, "v1.ConfigMap_"+ns+"_cm-1", hashOfData(a0))
			settle(t)

			labelNamespace(t, ns, nil)
			updateConfigMap(t, ns, "cm-1", map[string]string{"a": "3"})
			createDeployment(t, ns, "w-2", 0, named("configmap", "cm-1"), nil)
			deleteConfigMap(t, ns, "cm-1")
			settle(t)
			before := map[string]int64{"w-0": getDeployment(t, ns, "w-0").Generation, "w-2": getDeployment(t, ns, "w-2").Generation}

			done := configSyncs(t, r)
			labelNamespace(t, ns, selected)
			judgedAfter(t, r, done, "the entry")
			createConfigMap(t, ns, "cm-1", a0)
			waitEnv(t, ns, "w-2", marker, hashOfData(a0))
			wantReloads(t, ns, "w-2", before["w-2"], 1)
			wantReloads(t, ns, "w-0", before["w-0"], 0)
		})
	}
}

// ConfigMap cm-1 is recorded with a=0, which w-0, without a marker, runs. Its namespace leaves
// the selection, cm-1 is deleted, and once the namespace is in again it is created with a=0:
// no dependent came while the namespace was out, so w-0 still runs that content and nothing is
// restarted (policy.UnseenOnEntry).
func aConfigDeletedWhileItsNamespaceWasOutOfTheSelectionRestartsNothingOnARecreationWithTheRecordedContent(t *testing.T) {
	stateNS, ns, selected, opts := selectedWithState(t, nil)
	a0 := map[string]string{"a": "0"}
	createConfigMap(t, ns, "cm-1", a0)
	created := createDeployment(t, ns, "w-0", 0, named("configmap", "cm-1"), nil).CreationTimestamp.Time
	r := startController(t, stateNS, opts)
	waitRecorded(t, r, "v1.ConfigMap_"+ns+"_cm-1", hashOfData(a0))
	settle(t)
	// Creation times are to the second, and one within policy.LeaveMargin of the leave may be
	// after it.
	waitFor(t, 5*time.Second, "w-0's creation older than the margin", func() (bool, error) {
		return time.Now().Add(-policy.LeaveMargin).Truncate(time.Second).After(created), nil
	})

	labelNamespace(t, ns, nil)
	deleteConfigMap(t, ns, "cm-1")
	settle(t)
	before := getDeployment(t, ns, "w-0").Generation
	done := configSyncs(t, r)
	labelNamespace(t, ns, selected)
	judgedAfter(t, r, done, "the entry")
	done = configSyncs(t, r)
	createConfigMap(t, ns, "cm-1", a0)
	judgedAfter(t, r, done, "the recreation")
	wantReloads(t, ns, "w-0", before, 0)
}

// ConfigMap cm-1 changes and the reloader sees it, but its namespace leaves the selection before
// the coalescing window fires: nothing is reloaded while it is out. When the namespace enters
// again, w-2 still runs the earlier content and is reloaded for the change, also when the
// reloader restarted while the namespace was out (the path of checker seed
// 1796211078146740227@10, whose lost change was not reproduced).
func aChangeSeenJustBeforeItsNamespaceLeavesTheSelectionReloadsWhenItEnters(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "same process", true: "a restart while out"}[restart], func(t *testing.T) {
			t.Parallel()
			stateNS, ns, selected, opts := selectedWithState(t, func(o *reloader.Options) { o.CoalescePeriod = 3 * time.Second })
			const marker = "_RELOADER_-configmap-cm-1"
			a2 := map[string]string{"a": "2"}
			createConfigMap(t, ns, "cm-1", map[string]string{"a": "0"})
			createDeployment(t, ns, "w-2", 0, named("configmap", "cm-1"), nil)
			r := startController(t, stateNS, opts)
			settle(t)
			updateConfigMap(t, ns, "cm-1", a2)
			waitFor(t, 10*time.Second, "the change seen", func() (bool, error) {
				return strings.Contains(r.log.String(), "config changed"), nil
			})
			before := getDeployment(t, ns, "w-2").Generation
			labelNamespace(t, ns, nil)
			settle(t)
			if restart {
				r.stop(t)
				r = startController(t, stateNS, opts)
				settle(t)
			}
			wantReloads(t, ns, "w-2", before, 0)

			labelNamespace(t, ns, selected)
			waitEnv(t, ns, "w-2", marker, hashOfData(a2))
			wantReloads(t, ns, "w-2", before, 1)
		})
	}
}

// w-4, without a marker of Secret sec-0, is restarted (a reload for cm-1) while sec-0 is absent:
// its pods wait for sec-0, as the state notes. Its namespace leaves the selection and sec-0 is
// created; the running reloader sees it, and knows the pods took that content. When the
// namespace enters again, nothing is reloaded, and the state's note says the content the pods
// run, so that the next start reloads nothing either: another content there would restart w-4
// once, for nothing, as reloader explain would say.
func aConfigBackWhileItsNamespaceWasOutIsNotedAsRunByPodsTheReloaderSawWaitForIt(t *testing.T) {
	stateNS, ns, selected, opts := selectedWithState(t, nil)
	const cmMarker = "_RELOADER_-configmap-cm-1"
	createConfigMap(t, ns, "cm-1", map[string]string{"a": "0"})
	createSecret(t, ns, "sec-0", map[string]string{"a": "0"})
	createDeployment(t, ns, "w-4", 0, auto, func(s *corev1.PodSpec) {
		envFromCM("cm-1")(s)
		envFromSecret("sec-0")(s)
	})
	r := startController(t, stateNS, opts)
	settle(t)
	deleteSecret(t, ns, "sec-0")
	settle(t)
	waitEnv(t, ns, "w-4", cmMarker, updateConfigMap(t, ns, "cm-1", map[string]string{"a": "1"}))
	r.settle()
	strip := "strip.Secret.Deployment_" + ns + "_w-4_sec-0"
	waitFor(t, 10*time.Second, "w-4 noted waiting for sec-0", func() (bool, error) {
		return stateEntry(t, stateNS, strip) == "0000000000000000000000000000000000000001", nil
	})

	labelNamespace(t, ns, nil)
	waitFor(t, 10*time.Second, "the namespace out of the selection", func() (bool, error) {
		e, err := r.ctrl.Explainer().Explain(context.Background(), reloader.Query{Kind: "Deployment", Namespace: ns, Name: "w-4"})
		return err == nil && !e.Watched, err
	})
	createSecret(t, ns, "sec-0", map[string]string{"a": "2"})
	settle(t)
	before := getDeployment(t, ns, "w-4").Generation

	done := configSyncs(t, r)
	labelNamespace(t, ns, selected)
	judgedAfter(t, r, done, "the entry")
	wantReloads(t, ns, "w-4", before, 0)
	if got := stateEntry(t, stateNS, strip); got == policy.UnrecordedContent {
		t.Errorf("the state notes that w-4 runs another content than sec-0's, which its pods took")
	}
	r.stop(t)
	startController(t, stateNS, opts)
	wantReloads(t, ns, "w-4", before, 0)
}

// selectedWithState is selectedNamespace with a namespace of its own for the state; tweak, if
// set, adjusts the options further.
func selectedWithState(t *testing.T, tweak func(*reloader.Options)) (stateNS, ns string, in map[string]string, opts controllerOpts) {
	t.Helper()
	ns, in, opts = selectedNamespace(t)
	if base := opts.tweak; tweak != nil {
		opts.tweak = func(o *reloader.Options) { base(o); tweak(o) }
	}
	return cluster.NewNamespace(t), ns, in, opts
}
