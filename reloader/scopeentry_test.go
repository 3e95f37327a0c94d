package reloader_test

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/reloader/reloader/reloader"
)

// A workload is made to read key a of a deleted ConfigMap: its pods wait for it, as the state
// notes. Its namespace leaves the selection; the ConfigMap comes back and changes, the reloader
// restarts, another actor restarts the workload's pods (they read the content then) and the
// ConfigMap changes again. When the namespace enters again, which content the pods run is
// unknown, as at a start after a downtime: the workload is reloaded once. The start, out of
// the selection, could not judge its dependents, and the entry took the note to mean the pods
// run the content seen then (checker seed 156@10).
func TestAConfigBackWhileItsNamespaceWasOutReloadsPodsThatWaitedForIt(t *testing.T) {
	stateNS, ns := cluster.NewNamespace(t), cluster.NewNamespace(t)
	selected := map[string]string{"reloader-test": ns}
	labelNamespace(t, ns, selected)
	opts := controllerOpts{tweak: func(o *reloader.Options) {
		o.Namespace = ""
		o.NamespaceSelector = labels.SelectorFromSet(labels.Set(selected))
		o.ReloadOnCreate = true
	}}
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
