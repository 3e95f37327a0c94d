package reloader_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/policy"
)

// A Secret's invalid YAML is held back, and neither its Event, nor the log, nor any Event in the
// namespace holds a byte of the value, though YAML's own errors quote their input.
func TestInvalidSecretYAMLIsHeldWithoutShowingTheValue(t *testing.T) {
	ns := cluster.NewNamespace(t)
	const secretVar = "_RELOADER_-secret-creds"
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Annotations: map[string]string{policy.ValidateAnnotation: "creds.yaml=yaml"}},
		StringData: map[string]string{"creds.yaml": "user: a\npassword: b\n"},
	}
	if _, err := cluster.Client().CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createDeployment(t, ns, "web", 0, named("secret", "creds"), nil)
	r := startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle()
	changes := templateChanges(t, ns, "web")

	const leaked = "hunter2hunter2"
	updateSecret(t, ns, "creds", map[string]string{"creds.yaml": leaked + ": 1\n" + leaked + ": 2\n"}) // a duplicate key
	waitFor(t, 10*time.Second, "InvalidConfig warning", func() (bool, error) {
		return countEvents(t, ns, "creds", "InvalidConfig") == 1, nil
	})
	updateSecret(t, ns, "creds", map[string]string{"creds.yaml": "password: [" + leaked + "\n"}) // unclosed
	waitFor(t, 10*time.Second, "a second InvalidConfig warning, for the other content", func() (bool, error) {
		return countEvents(t, ns, "creds", "InvalidConfig") == 2, nil
	})
	settle()
	all := strings.Join(append(eventMessages(t, ns, "creds"), eventMessages(t, ns, "web")...), "\n")
	if !strings.Contains(all, `key "creds.yaml" is not valid YAML`) {
		t.Fatalf("the warning does not name the key:\n%s", all)
	}
	for i := 0; i+4 <= len(leaked); i++ {
		if strings.Contains(all, leaked[i:i+4]) || strings.Contains(r.log.String(), leaked[i:i+4]) {
			t.Fatalf("part of the value %q reached an Event or the log:\n%s\n%s", leaked[i:i+4], all, r.log.String())
		}
	}
	if n := changes(); n != 0 {
		t.Fatalf("invalid content rolled out (%d template changes)", n)
	}
	hash := updateSecret(t, ns, "creds", map[string]string{"creds.yaml": "user: a\npassword: c\n"})
	waitFor(t, 10*time.Second, "the valid change rolled out", func() (bool, error) {
		v, _ := env(getDeployment(t, ns, "web"), "app", secretVar)
		return v == hash, nil
	})
	if n := changes(); n != 1 {
		t.Fatalf("template changed %d times, want 1", n)
	}
}

// A reloader/validate value that does not parse holds changes back, and says why.
func TestMalformedValidateAnnotationHoldsChanges(t *testing.T) {
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"config.json": "{}"})
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	settle()
	changes := templateChanges(t, ns, "web")
	cms := cluster.Client().CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(context.Background(), "app-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Annotations = map[string]string{policy.ValidateAnnotation: "config.json=xml"}
	cm.Data = map[string]string{"config.json": `{"a":1}`}
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "InvalidConfig warning", func() (bool, error) {
		return countEvents(t, ns, "app-config", "InvalidConfig") == 1, nil
	})
	if msgs := strings.Join(eventMessages(t, ns, "app-config"), "\n"); !strings.Contains(msgs, "is not <key>=json or <key>=yaml") {
		t.Fatalf("the warning does not say what is wrong with the annotation:\n%s", msgs)
	}
	if n := changes(); n != 0 {
		t.Fatalf("a change under a malformed annotation rolled out (%d template changes)", n)
	}
	setConfigMapAnnotation(t, ns, "app-config", policy.ValidateAnnotation, `"config.json=json"`)
	waitFor(t, 10*time.Second, "the change rolled out once the annotation is fixed", func() (bool, error) {
		_, ok := env(getDeployment(t, ns, "web"), "app", cmVar)
		return ok, nil
	})
	if n := changes(); n != 1 {
		t.Fatalf("template changed %d times, want 1", n)
	}
}

// A config first seen invalid is the baseline: its next valid change reloads a workload that
// carries no marker.
func TestConfigFirstSeenInvalidReloadsOnItsNextValidChange(t *testing.T) {
	ns := cluster.NewNamespace(t)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "app-config", Annotations: map[string]string{policy.ValidateAnnotation: "config.json=json"}},
		Data:       map[string]string{"config.json": "{"},
	}
	if _, err := cluster.Client().CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	startController(t, ns, controllerOpts{period: 100 * time.Millisecond})
	waitFor(t, 10*time.Second, "the invalid content recorded as the baseline", func() (bool, error) {
		return stateEntry(t, ns, "v1.ConfigMap_app-config") != "", nil
	})
	changes := templateChanges(t, ns, "web")
	waitFor(t, 10*time.Second, "one InvalidConfig warning at start", func() (bool, error) {
		return countEvents(t, ns, "app-config", "InvalidConfig") == 1, nil
	})
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"config.json": "{}"})
	waitEnv(t, ns, "web", cmVar, hash)
	if n := changes(); n != 1 {
		t.Fatalf("template changed %d times, want 1", n)
	}
}
