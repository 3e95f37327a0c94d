package deploy_test

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/reloader"
	"github.com/reloader/reloader/state"
)

const namespaceManifest = "namespace/reloader.yaml"

// wantNamespaceRole is the exact rule list of deploy/namespace's Role. Widening the Role (a
// verb, a resource, a group, a dropped resourceNames) fails TestRBACRoleIsExact; change this
// list only together with the reason the reloader needs the new permission.
var wantNamespaceRole = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"patch"},
		ResourceNames: numberedShards("reloader-state", 32)},
	{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
	// The hash key Secret, made on the first start; create cannot be limited by name.
	{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
	{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets"}, Verbs: []string{"get", "list", "watch", "patch"}},
	// A CronJob's reload patches it and creates a Job; a Job's reload deletes and creates it.
	{APIGroups: []string{"batch"}, Resources: []string{"cronjobs"}, Verbs: []string{"get", "list", "watch", "patch"}},
	{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "update"}, ResourceNames: []string{"reloader"}},
}

// numberedShards returns name, name-1, ... name-(n-1): the names of n state shards.
func numberedShards(name string, n int) []string {
	out := []string{name}
	for i := 1; i < n; i++ {
		out = append(out, fmt.Sprintf("%s-%d", name, i))
	}
	return out
}

// readNamespaceManifest is deploy/namespace/reloader.yaml, decoded strictly.
func readNamespaceManifest(t *testing.T) []manifest {
	t.Helper()
	data, err := os.ReadFile(namespaceManifest)
	if err != nil {
		t.Fatal(err)
	}
	return decodeManifests(t, namespaceManifest, data)
}

// TestRBACRoleIsExact pins deploy/namespace's Role and RoleBinding.
func TestRBACRoleIsExact(t *testing.T) {
	ms := readNamespaceManifest(t)
	sa, role, binding := one[*corev1.ServiceAccount](t, ms), one[*rbacv1.Role](t, ms), one[*rbacv1.RoleBinding](t, ms)
	if !reflect.DeepEqual(role.Rules, wantNamespaceRole) {
		t.Errorf("Role rules changed:\n got %+v\nwant %+v", role.Rules, wantNamespaceRole)
	}
	wantRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}
	wantSubjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name}}
	if binding.RoleRef != wantRef || !reflect.DeepEqual(binding.Subjects, wantSubjects) {
		t.Errorf("RoleBinding must bind only ServiceAccount %s to Role %s, got %+v %+v",
			sa.Name, role.Name, binding.RoleRef, binding.Subjects)
	}
	// The Role names the shards the state package uses, every one of them.
	if got, want := wantNamespaceRole[1].ResourceNames, stateShards(one[*corev1.ConfigMap](t, ms).Name); !reflect.DeepEqual(got, want) {
		t.Errorf("the Role names the shards %v, the state package uses %v", got, want)
	}
}

// installNamespaceManifest creates exactly the ServiceAccount, state ConfigMap, Role and
// RoleBinding of deploy/namespace in ns, and returns a config authenticated as that
// ServiceAccount once RBAC has caught up.
func installNamespaceManifest(t *testing.T, ns string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	ms := readNamespaceManifest(t)
	for _, m := range ms {
		switch m.obj.(type) {
		case *corev1.ServiceAccount, *corev1.ConfigMap, *rbacv1.Role, *rbacv1.RoleBinding:
			if err := create(ctx, m, ns, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg, err := cluster.ServiceAccountConfig(ctx, ns, one[*corev1.ServiceAccount](t, ms).Name)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	// The authorizer sees new bindings through an informer: wait until the last rule applies.
	poll(t, "the Role to take effect", func(ctx context.Context) (bool, error) {
		_, err := client.CoordinationV1().Leases(ns).Get(ctx, "reloader", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	return cfg
}

// TestRBACNamespaceManifest runs the controller as deploy/namespace's ServiceAccount, with
// exactly the manifest's Role: a full reload works, and nothing outside the namespace, or
// beyond the Role inside it, is reachable.
func TestRBACNamespaceManifest(t *testing.T) {
	ctx := context.Background()
	ns := cluster.NewNamespace(t)
	other := cluster.NewNamespace(t)
	saConfig := installNamespaceManifest(t, ns)
	sa := kubernetes.NewForConfigOrDie(saConfig)

	t.Run("reload", func(t *testing.T) {
		createApp(t, ns)
		jobUID := createBatchApp(t, ns)
		r := startController(t, saConfig, reloader.Options{Namespace: ns, StateNamespace: ns, StateName: "reloader-state"})
		appKey := state.Key("ConfigMap", "", "app-config")
		hash := checkReload(t, ns, ns, "reloader-state", appKey)
		checkBatchReloaded(t, ns, jobUID)
		r.stopRefusedNothing(t)
		checkStateHolds(t, ns, "reloader-state", appKey, hash)
		// It made the key of its Secret hashes, as that ServiceAccount.
		checkHashKeySecret(t, ns)
	})

	t.Run("leader election", func(t *testing.T) {
		// The Lease calls of --leader-elect (internal/leader): create the Lease, read it, and
		// update it to renew or release it. Direct calls, so the check does not depend on an
		// elector's timing.
		leases := sa.CoordinationV1().Leases(ns)
		holder, released := "rbac-test", ""
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "reloader"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
		if _, err := leases.Create(ctx, l, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create the Lease: %v", err)
		}
		l, err := leases.Get(ctx, "reloader", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get the Lease: %v", err)
		}
		l.Spec.HolderIdentity = &released
		if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("release the Lease (an update): %v", err)
		}
	})

	t.Run("forbidden", func(t *testing.T) {
		createDeployment(t, other, "elsewhere", nil)
		createConfigMap(t, ns, "not-state", map[string]string{"k": "v"})
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "some-secret"}, StringData: map[string]string{"k": "v"}}
		if _, err := cluster.Client().CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		patch := []byte(`{"metadata":{"labels":{"rbac-test":"x"}}}`)
		wantForbidden(t, map[string]func() error{
			"list configmaps in another namespace": func() error {
				_, err := sa.CoreV1().ConfigMaps(other).List(ctx, metav1.ListOptions{})
				return err
			},
			"list secrets in another namespace": func() error {
				_, err := sa.CoreV1().Secrets(other).List(ctx, metav1.ListOptions{})
				return err
			},
			"list configmaps cluster-wide": func() error {
				_, err := sa.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
				return err
			},
			"list secrets cluster-wide": func() error {
				_, err := sa.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
				return err
			},
			"list namespaces": func() error {
				_, err := sa.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
				return err
			},
			"get a deployment in another namespace": func() error {
				_, err := sa.AppsV1().Deployments(other).Get(ctx, "elsewhere", metav1.GetOptions{})
				return err
			},
			"list deployments cluster-wide": func() error {
				_, err := sa.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
				return err
			},
			"patch a configmap that is not the state": func() error {
				_, err := sa.CoreV1().ConfigMaps(ns).Patch(ctx, "not-state", types.MergePatchType, patch, metav1.PatchOptions{})
				return err
			},
			"update the state configmap": func() error {
				cm, err := sa.CoreV1().ConfigMaps(ns).Get(ctx, "reloader-state", metav1.GetOptions{})
				if err != nil {
					return err
				}
				_, err = sa.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
				return err
			},
			"delete the state configmap": func() error {
				return sa.CoreV1().ConfigMaps(ns).Delete(ctx, "reloader-state", metav1.DeleteOptions{})
			},
			"patch a secret": func() error {
				_, err := sa.CoreV1().Secrets(ns).Patch(ctx, "some-secret", types.MergePatchType, patch, metav1.PatchOptions{})
				return err
			},
			"delete the hash key secret": func() error {
				return sa.CoreV1().Secrets(ns).Delete(ctx, reloader.DefaultHashKeySecret, metav1.DeleteOptions{})
			},
			"update the hash key secret": func() error {
				s, err := sa.CoreV1().Secrets(ns).Get(ctx, reloader.DefaultHashKeySecret, metav1.GetOptions{})
				if err != nil {
					return err
				}
				_, err = sa.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
				return err
			},
			"create a secret in another namespace": func() error {
				_, err := sa.CoreV1().Secrets(other).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: reloader.DefaultHashKeySecret}}, metav1.CreateOptions{})
				return err
			},
			"delete a deployment": func() error {
				return sa.AppsV1().Deployments(ns).Delete(ctx, "app", metav1.DeleteOptions{})
			},
			"delete a cronjob": func() error {
				return sa.BatchV1().CronJobs(ns).Delete(ctx, "app-cron", metav1.DeleteOptions{})
			},
			"list pods": func() error {
				_, err := sa.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
				return err
			},
			"update another lease": func() error {
				l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "someone-else"}}
				if _, err := cluster.Client().CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{}); err != nil {
					return err
				}
				_, err := sa.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{})
				return err
			},
		})
	})
}

// checkHashKeySecret checks that the reloader made the key of its Secret hashes in ns: an
// immutable Secret holding a key of confighash.MinKeyLen bytes.
func checkHashKeySecret(t *testing.T, ns string) {
	t.Helper()
	s, err := cluster.Client().CoreV1().Secrets(ns).Get(context.Background(), reloader.DefaultHashKeySecret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the hash key Secret: %v", err)
	}
	if _, err := reloader.HashKeyOf(s); err != nil || len(s.Data[reloader.HashKeyField]) != confighash.MinKeyLen || s.Immutable == nil || !*s.Immutable {
		t.Fatalf("the hash key Secret holds %d bytes (immutable %v): %v", len(s.Data[reloader.HashKeyField]), s.Immutable, err)
	}
}
