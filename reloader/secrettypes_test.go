package reloader_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/reloader"
)

const (
	helmRelease  = "release-app-v1"
	accountToken = "robot-token"
)

// createTypedSecrets creates a Helm release Secret and a service-account token Secret (and its
// ServiceAccount), each with a data key the test may change.
func createTypedSecrets(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}
	if _, err := cluster.Client().CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: helmRelease},
			Type: "helm.sh/release.v1", StringData: map[string]string{"release": "r0"}},
		{ObjectMeta: metav1.ObjectMeta{Name: accountToken, Annotations: map[string]string{corev1.ServiceAccountNameKey: "robot"}},
			Type: corev1.SecretTypeServiceAccountToken, StringData: map[string]string{"extra": "e0"}},
	} {
		if _, err := cluster.Client().CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// updateSecretKey sets one data key of Secret name, keeping the others (a token's token).
func updateSecretKey(t *testing.T, ns, name, k, v string) {
	t.Helper()
	patch := `{"stringData":{"` + k + `":"` + v + `"}}`
	if _, err := cluster.Client().CoreV1().Secrets(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// invalidAnnotationWarnings waits for the InvalidAnnotation Events of workload name and returns
// their messages.
func invalidAnnotationWarnings(t *testing.T, ns, name string) string {
	t.Helper()
	var all string
	waitFor(t, 10*time.Second, "a warning on "+name, func() (bool, error) {
		list, err := cluster.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: "reason=InvalidAnnotation,involvedObject.name=" + name})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		var msgs []string
		for _, e := range list.Items {
			msgs = append(msgs, e.Message)
		}
		all = strings.Join(msgs, "\n")
		return true, nil
	})
	return all
}

func TestSecretsOfIgnoredTypesAreNeitherCachedNorRecorded(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createTypedSecrets(t, ns)
	createSecret(t, ns, "db", map[string]string{"password": "p0"})
	createDeployment(t, ns, "app", 0, named("secret", "db,"+helmRelease+","+accountToken), nil)
	r := startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) {
		o.IgnoreSecretTypes = []string{"helm.sh/release.v1", string(corev1.SecretTypeServiceAccountToken)}
	}})
	before := getDeployment(t, ns, "app").Generation

	updateSecretKey(t, ns, helmRelease, "release", "r1")
	updateSecretKey(t, ns, accountToken, "extra", "e1")
	hash := updateSecret(t, ns, "db", map[string]string{"password": "p1"}) // the positive control
	waitEnv(t, ns, "app", "_RELOADER_-secret-db", hash)
	wantReloads(t, ns, "app", before, 1)
	d := getDeployment(t, ns, "app")
	for _, name := range []string{helmRelease, accountToken} {
		if v, ok := env(d, "app", "_RELOADER_-secret-"+name); ok {
			t.Fatalf("a change of the ignored Secret %s reloaded the workload (%s)", name, v)
		}
		if got := r.ctrl.Recorded("v1.Secret_" + name); got != "" {
			t.Fatalf("the state records the ignored Secret %s as %q", name, got)
		}
	}
	if r.ctrl.Recorded("v1.Secret_db") != hash {
		t.Fatalf("the state does not record the Opaque Secret's change")
	}
	msg := invalidAnnotationWarnings(t, ns, "app")
	for _, name := range []string{helmRelease, accountToken} {
		if !strings.Contains(msg, `Secret "`+name+`" named in a reload annotation does not exist or is of a type in --ignore-secret-types`) {
			t.Fatalf("the warning does not say why Secret %s is unseen: %q", name, msg)
		}
	}
	if strings.Contains(msg, `"db" named`) {
		t.Fatalf("the Opaque Secret was reported missing: %q", msg)
	}
	r.stop(t)
	for _, name := range []string{helmRelease, accountToken} {
		if got := stateEntry(t, ns, "v1.Secret_"+name); got != "" {
			t.Fatalf("the state ConfigMap holds the ignored Secret %s: %q", name, got)
		}
	}
}

func TestNoIgnoredSecretTypesCachesHelmReleases(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createTypedSecrets(t, ns)
	createDeployment(t, ns, "app", 0, named("secret", helmRelease), nil)
	r := startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.IgnoreSecretTypes = nil }})
	waitFor(t, 10*time.Second, "the Helm release Secret recorded", func() (bool, error) {
		return r.ctrl.Recorded("v1.Secret_"+helmRelease) != "", nil
	})
	hash := updateSecret(t, ns, helmRelease, map[string]string{"release": "r1"})
	waitEnv(t, ns, "app", "_RELOADER_-secret-"+helmRelease, hash)
}
