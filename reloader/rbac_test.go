package reloader_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/state"
)

const namespaceManifest = "../deploy/namespace/reloader.yaml"

// wantNamespaceRole is the exact rule list of deploy/namespace's Role. Widening the Role (a
// verb, a resource, a group, a dropped resourceNames) fails TestRBACRoleIsExact; change this
// list only together with the reason the reloader needs the new permission.
var wantNamespaceRole = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"patch"},
		ResourceNames: []string{"reloader-state", "reloader-state-1", "reloader-state-2", "reloader-state-3",
			"reloader-state-4", "reloader-state-5", "reloader-state-6", "reloader-state-7"}},
	{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
	{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets"}, Verbs: []string{"get", "list", "watch", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "update"}, ResourceNames: []string{"reloader"}},
}

// namespaceManifestObjects is deploy/namespace/reloader.yaml, decoded strictly.
type namespaceManifestObjects struct {
	serviceAccount *corev1.ServiceAccount
	state          *corev1.ConfigMap
	role           *rbacv1.Role
	binding        *rbacv1.RoleBinding
}

func readNamespaceManifest(t *testing.T) namespaceManifestObjects {
	t.Helper()
	data, err := os.ReadFile(namespaceManifest)
	if err != nil {
		t.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var objs []runtime.Object
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if js, err := utilyaml.ToJSON(doc); err != nil || string(bytes.TrimSpace(js)) == "null" {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", namespaceManifest, err)
		}
		objs = append(objs, obj)
	}
	var m namespaceManifestObjects
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.ServiceAccount:
			m.serviceAccount = o
		case *corev1.ConfigMap:
			m.state = o
		case *rbacv1.Role:
			m.role = o
		case *rbacv1.RoleBinding:
			m.binding = o
		}
	}
	if m.serviceAccount == nil || m.state == nil || m.role == nil || m.binding == nil {
		t.Fatalf("%s: want a ServiceAccount, a ConfigMap, a Role and a RoleBinding", namespaceManifest)
	}
	return m
}

// TestRBACRoleIsExact pins deploy/namespace's Role and RoleBinding.
func TestRBACRoleIsExact(t *testing.T) {
	m := readNamespaceManifest(t)
	if !reflect.DeepEqual(m.role.Rules, wantNamespaceRole) {
		t.Errorf("Role rules changed:\n got %+v\nwant %+v", m.role.Rules, wantNamespaceRole)
	}
	wantRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: m.role.Name}
	wantSubjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: m.serviceAccount.Name}}
	if m.binding.RoleRef != wantRef || !reflect.DeepEqual(m.binding.Subjects, wantSubjects) {
		t.Errorf("RoleBinding must bind only ServiceAccount %s to Role %s, got %+v %+v",
			m.serviceAccount.Name, m.role.Name, m.binding.RoleRef, m.binding.Subjects)
	}
	// The Role names the shards the state package uses.
	st := state.New(nil, "", m.state.Name, nil)
	for i := range state.MaxShards {
		if got := wantNamespaceRole[1].ResourceNames[i]; got != st.ShardName(i) {
			t.Errorf("shard %d is %s, the Role names %s", i, st.ShardName(i), got)
		}
	}
}

// installNamespaceManifest creates exactly the ServiceAccount, state ConfigMap, Role and
// RoleBinding of deploy/namespace in ns, and returns a config authenticated as that
// ServiceAccount once RBAC has caught up.
func installNamespaceManifest(t *testing.T, ns string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	m := readNamespaceManifest(t)
	admin := cluster.Client()
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, m.serviceAccount, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, m.state, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, m.role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, m.binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := cluster.ServiceAccountConfig(ctx, ns, m.serviceAccount.Name)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	// The authorizer sees new bindings through an informer: wait until the last rule applies.
	waitFor(t, 10*time.Second, "the Role to take effect", func() (bool, error) {
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
		createConfigMap(t, ns, "app-config", map[string]string{"k": "v1"})
		createDeployment(t, ns, "app", 1, named("configmap", "app-config"), nil)
		r := startControllerAs(t, saConfig, ns, controllerOpts{period: 100 * time.Millisecond, grace: 5 * time.Second})

		key := state.Key("ConfigMap", "", "app-config")
		waitFor(t, 30*time.Second, "the first hash in the state", func() (bool, error) {
			return stateEntry(t, ns, key) != "", nil
		})
		cms := cluster.Client().CoreV1().ConfigMaps(ns)
		cm, err := cms.Get(ctx, "app-config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data = map[string]string{"k": "v2"}
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		hash := confighash.ConfigMap(cm)

		waitEnv(t, ns, "app", "_RELOADER_-configmap-app-config", hash)
		waitFor(t, 30*time.Second, "a Reloaded Event", func() (bool, error) {
			evs, err := cluster.Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.kind=Deployment,involvedObject.name=app,reason=Reloaded"})
			return err == nil && len(evs.Items) > 0, err
		})
		waitFor(t, 30*time.Second, "the new hash in the state", func() (bool, error) {
			return stateEntry(t, ns, key) == hash, nil
		})
		r.stop(t)
		for _, bad := range []string{"forbidden", "Forbidden"} {
			if bytes.Contains([]byte(r.log.String()), []byte(bad)) {
				t.Errorf("the controller was refused something:\n%s", r.log.String())
				break
			}
		}
	})

	t.Run("leader election", func(t *testing.T) {
		// The Lease calls of client-go's leader election, which --leader-elect uses.
		lock := &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: "reloader"},
			Client:     sa.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: "rbac-test"},
		}
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		var led atomic.Bool
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: time.Second,
			ReleaseOnCancel: true, Name: "rbac-test",
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) { led.Store(true); cancel() },
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		elector.Run(lctx) // returns after the release on cancel
		if !led.Load() {
			t.Fatal("never became leader with the Role's Lease permissions")
		}
		l, err := cluster.Client().CoordinationV1().Leases(ns).Get(ctx, "reloader", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "" {
			t.Errorf("the Lease was not released (an update): holder %v", l.Spec.HolderIdentity)
		}
	})

	t.Run("forbidden", func(t *testing.T) {
		createDeployment(t, other, "elsewhere", 1, nil, nil)
		createConfigMap(t, ns, "not-state", map[string]string{"k": "v"})
		createSecret(t, ns, "some-secret", map[string]string{"k": "v"})
		patch := []byte(`{"metadata":{"labels":{"rbac-test":"x"}}}`)
		for what, call := range map[string]func() error{
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
			"delete a deployment": func() error {
				return sa.AppsV1().Deployments(ns).Delete(ctx, "app", metav1.DeleteOptions{})
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
		} {
			if err := call(); !apierrors.IsForbidden(err) {
				t.Errorf("%s: want Forbidden, got %v", what, err)
			}
		}
	})
}
