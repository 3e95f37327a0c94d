package testcluster_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/reloader/reloader/internal/dev/testcluster"
)

const eventually = 60 * time.Second

var cluster *testcluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(testcluster.Main(m, testcluster.Options{Pods: true, Log: os.Stderr}, &cluster))
}

func TestAdminClientReachesAPIServer(t *testing.T) {
	ctx := t.Context()
	for _, name := range []string{"default", "kube-system", "kube-public"} {
		if _, err := cluster.Client().CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("get namespace %s as admin: %v", name, err)
		}
	}
	if _, err := os.Stat(cluster.Kubeconfig); err != nil {
		t.Errorf("admin kubeconfig: %v", err)
	}
}

func TestNewNamespaceIsUniqueAndValid(t *testing.T) {
	first, second := cluster.NewNamespace(t), cluster.NewNamespace(t)
	if first == second {
		t.Fatalf("NewNamespace returned %q twice", first)
	}
	if len(first) > 63 {
		t.Errorf("namespace %q is longer than 63 characters", first)
	}
}

func TestServiceAccountHasOnlyRBACGrantedAccess(t *testing.T) {
	listSecrets := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list"}}
	listConfigMaps := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}
	tests := []struct {
		name          string
		rules         []rbacv1.PolicyRule // nil: no Role and RoleBinding
		wantForbidden bool
	}{
		{name: "no role binding is forbidden", wantForbidden: true},
		{name: "role for configmaps only is forbidden", rules: []rbacv1.PolicyRule{listConfigMaps}, wantForbidden: true},
		{name: "role for secrets may list", rules: []rbacv1.PolicyRule{listSecrets}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			ns := cluster.NewNamespace(t)
			createServiceAccount(t, ns, "reader")
			if tt.rules != nil {
				grant(t, ns, "reader", tt.rules)
				waitForGrant(t, ns, "reader", tt.rules[0])
			}
			cfg, err := cluster.ServiceAccountConfig(ctx, ns, "reader")
			if err != nil {
				t.Fatal(err)
			}
			client := kubernetes.NewForConfigOrDie(cfg)
			listSecrets := func() error {
				_, err := client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
				return err
			}
			if !tt.wantForbidden {
				if err := poll(ctx, listSecrets); err != nil {
					t.Fatalf("list secrets as granted service account: %v", err)
				}
				return
			}
			if err := listSecrets(); !apierrors.IsForbidden(err) {
				t.Fatalf("list secrets as service account: got %v, want Forbidden", err)
			}
		})
	}
}

func TestDeploymentRollsOutOnKwokNode(t *testing.T) {
	ctx := t.Context()
	ns := cluster.NewNamespace(t)
	labels := map[string]string{"app": "demo"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "demo"},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "fake"}}},
			},
		},
	}
	client := cluster.Client()
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	err := poll(ctx, func() error {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas != 2 {
			return fmt.Errorf("available replicas = %d, want 2", d.Status.AvailableReplicas)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("deployment did not become available: %v", err)
	}
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=demo"})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	for _, pod := range pods.Items {
		if pod.Spec.NodeName != testcluster.NodeName || pod.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s: node %q phase %s, want node %q phase Running", pod.Name, pod.Spec.NodeName, pod.Status.Phase, testcluster.NodeName)
		}
	}
}

func createServiceAccount(t *testing.T, ns, name string) {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cluster.Client().CoreV1().ServiceAccounts(ns).Create(t.Context(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service account: %v", err)
	}
}

// grant binds a Role with rules to the service account ns/name.
func grant(t *testing.T, ns, name string, rules []rbacv1.PolicyRule) {
	t.Helper()
	rbac := cluster.Client().RbacV1()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	if _, err := rbac.Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create role: %v", err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
	}
	if _, err := rbac.RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create role binding: %v", err)
	}
}

// waitForGrant waits until the authorizer allows rule's first verb and
// resource to the service account, so a later Forbidden is not a stale cache.
func waitForGrant(t *testing.T, ns, name string, rule rbacv1.PolicyRule) {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: fmt.Sprintf("system:serviceaccount:%s:%s", ns, name),
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: rule.Verbs[0], Resource: rule.Resources[0],
		},
	}}
	err := poll(t.Context(), func() error {
		got, err := cluster.Client().AuthorizationV1().SubjectAccessReviews().Create(t.Context(), review, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !got.Status.Allowed {
			return fmt.Errorf("%s %s not allowed yet", rule.Verbs[0], rule.Resources[0])
		}
		return nil
	})
	if err != nil {
		t.Fatalf("wait for role binding to take effect: %v", err)
	}
}

// poll calls check until it returns nil or eventually passes, and returns
// the last error.
func poll(ctx context.Context, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, eventually)
	defer cancel()
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func TestWritesKeepTheLastWriteOfEachObjectOfTheAdminClients(t *testing.T) {
	ctx := t.Context()
	ns := cluster.NewNamespace(t)
	cms := cluster.Client().CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"k": "v"}
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got := map[string]testcluster.Write{}
	for _, w := range cluster.Writes.InNamespace(ns) {
		got[w.Resource+"/"+w.Name] = w
	}
	if w := got["configmaps/kept"]; len(got) != 2 || w.ResourceVersion != cm.ResourceVersion || w.Deleted {
		t.Errorf("writes = %+v, want configmaps/kept at %s and configmaps/gone deleted", got, cm.ResourceVersion)
	}
	if !got["configmaps/gone"].Deleted {
		t.Errorf("configmaps/gone: %+v, want deleted", got["configmaps/gone"])
	}
	// Config is the controllers' under test: its writes are not the test's.
	other, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := len(cluster.Writes.InNamespace(ns)); n != 2 {
		t.Errorf("%d writes after a write through Config, want 2", n)
	}
}
