package reloader_test

import (
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/confighash"
)

// collaborneHash is Collaborne's calculateHash, written out here from its source (hash.ts):
// SHA1 of "key=value" per data entry, no separator; pairs are given in the API's key order.
func collaborneHash(pairs ...string) string {
	sum := sha1.Sum([]byte(strings.Join(pairs, "")))
	return hex.EncodeToString(sum[:])
}

func collaborneVar(name, value string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: name, Value: value})
	}
}

// Switching from Collaborne: its state entries and variables, written as it writes them, are
// taken over without a restart wave. What it recorded but never rolled out, and a change made
// while switching, reload once (the positive controls). The next real change restarts once
// and leaves no Collaborne variable.
func TestSwitchingFromCollaborneRestartsNothingThatIsCurrent(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createConfigMap(t, ns, "other", map[string]string{"x": "1"})
	createConfigMap(t, ns, "changed", map[string]string{"v": "new"})
	createSecret(t, ns, "db", map[string]string{"password": "pw-1"})
	secretHash := collaborneHash("password=" + base64.StdEncoding.EncodeToString([]byte("pw-1")))
	_, err := cluster.Client().CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "reloader-state"},
		Data: map[string]string{
			"v1.ConfigMap_app-config": collaborneHash("v=A"),
			"v1.ConfigMap_other":      collaborneHash("x=1"), // recorded when scheduled, never rolled out
			"v1.ConfigMap_changed":    collaborneHash("v=old"),
			"v1.Secret_db":            secretHash,
		}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	both := map[string]string{"configmap.reloader.stakater.com/reload": "app-config", "secret.reloader.stakater.com/reload": "db"}
	createDeployment(t, ns, "web", 0, both, func(s *corev1.PodSpec) {
		collaborneVar("_RELOADER_CONFIGMAP_APP_CONFIG", collaborneHash("v=A"))(s)
		collaborneVar("_RELOADER_SECRET_DB", secretHash)(s)
	})
	createDeployment(t, ns, "untouched", 0, named("configmap", "app-config"), nil)
	createDeployment(t, ns, "missed", 0, named("configmap", "other"), collaborneVar("_RELOADER_CONFIGMAP_OTHER", collaborneHash("x=0")))
	createDeployment(t, ns, "changed-dep", 0, named("configmap", "changed"), nil)
	before := generations(t, ns)

	first := startController(t, ns, controllerOpts{})
	settle(t)
	want := map[string]int64{"missed": 1, "changed-dep": 1}
	if moved := changed(before, generations(t, ns)); fmt.Sprint(moved) != fmt.Sprint(want) {
		t.Fatalf("after the switch, template changes %v, want %v\n%s", moved, want, first.log.String())
	}
	if got, want := stateEntry(t, ns, "v1.ConfigMap_app-config"), confighash.ConfigMap(&corev1.ConfigMap{Data: map[string]string{"v": "A"}}); got != want {
		t.Fatalf("state entry of app-config %q, want it taken over as ours, %q", got, want)
	}
	if e := stateEntry(t, ns, "v1.Secret_db"); e == secretHash || !strings.HasPrefix(e, "hmac-") {
		t.Fatalf("state entry of db %q: want it re-recorded keyed", e)
	}
	if _, ok := env(getDeployment(t, ns, "missed"), "app", "_RELOADER_CONFIGMAP_OTHER"); ok {
		t.Fatal("the reload of missed kept Collaborne's variable")
	}

	first.stop(t)
	afterSwitch := generations(t, ns)
	startController(t, ns, controllerOpts{})
	settle(t)
	if moved := changed(afterSwitch, generations(t, ns)); len(moved) != 0 {
		t.Fatalf("a restart after the switch changed templates %v", moved)
	}

	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
	waitEnv(t, ns, "web", cmVar, hash)
	waitEnv(t, ns, "untouched", cmVar, hash)
	settle(t)
	want = map[string]int64{"web": 1, "untouched": 1}
	if moved := changed(afterSwitch, generations(t, ns)); fmt.Sprint(moved) != fmt.Sprint(want) {
		t.Fatalf("after the first real change, template changes %v, want %v", moved, want)
	}
	for _, c := range getDeployment(t, ns, "web").Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "_RELOADER_CONFIGMAP_") || strings.HasPrefix(e.Name, "_RELOADER_SECRET_") {
				t.Fatalf("Collaborne's variable %s is still on web after a reload", e.Name)
			}
		}
	}
}
