package deploy_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/internal/dev/testcluster"
	"github.com/reloader/reloader/internal/kube"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
	"github.com/reloader/reloader/state"
)

func poll(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// controller is a reloader run in-process by startController.
type controller struct {
	log  *testcluster.LogBuffer
	stop func() // ends the controller and waits for it; later calls do nothing
}

// startController runs the controller authenticated by cfg with opts, completed with a 100 ms
// coalescing period, a 5 s shutdown grace, the default annotations, a debug log and metrics of
// its own, and waits until it is ready. It stops when the test ends, which prints its log if the
// test failed.
func startController(t *testing.T, cfg *rest.Config, opts reloader.Options) *controller {
	t.Helper()
	log := &testcluster.LogBuffer{}
	opts.CoalescePeriod, opts.CoalesceMaxWait, opts.ShutdownGrace = 100*time.Millisecond, 500*time.Millisecond, 5*time.Second
	opts.Annotations = policy.DefaultAnnotations()
	opts.Log = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.Metrics = metrics.New("test")
	clients, err := kube.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := reloader.New(clients, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	c := &controller{log: log, stop: sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller Run: %v", err)
		}
	})}
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			t.Logf("controller log:\n%s", log.String())
		}
	})
	poll(t, "controller ready", func(context.Context) (bool, error) { return ctrl.Ready(), nil })
	return c
}

// stopRefusedNothing stops the controller and fails the test if the API server refused it
// anything.
func (c *controller) stopRefusedNothing(t *testing.T) {
	t.Helper()
	c.stop()
	if strings.Contains(strings.ToLower(c.log.String()), "forbidden") {
		t.Errorf("the controller was refused something:\n%s", c.log.String())
	}
}

func createConfigMap(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
	if _, err := cluster.Client().CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ConfigMap %s: %v", name, err)
	}
}

// createDeployment creates a Deployment of one replica of one container "app".
func createDeployment(t *testing.T, ns, name string, annotations map[string]string) {
	t.Helper()
	replicas := int32(1)
	labels := map[string]string{"app": name}
	_, err := cluster.Client().AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "fake"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Deployment %s: %v", name, err)
	}
}

// createApp creates ConfigMap app-config and Deployment app, which reloads on it, in ns.
func createApp(t *testing.T, ns string) {
	t.Helper()
	createConfigMap(t, ns, "app-config", map[string]string{"k": "v1"})
	createDeployment(t, ns, "app", map[string]string{"configmap.reloader.stakater.com/reload": "app-config"})
}

// checkReload waits until the state ConfigMap stateNS/stateName holds a hash under key (that of
// createApp's ConfigMap in appNS), changes that ConfigMap, and waits until the Deployment app
// carries the new hash and has a Reloaded Event. It returns the new hash, which the state holds
// at the latest once the controller has stopped (checkStateHolds): the app's marker says it, so
// its entry goes with the state's next write.
func checkReload(t *testing.T, appNS, stateNS, stateName, key string) string {
	t.Helper()
	ctx := context.Background()
	admin := cluster.Client()
	stateValue := func(ctx context.Context) string {
		got, err := admin.CoreV1().ConfigMaps(stateNS).Get(ctx, stateName, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return got.Data[key]
	}
	poll(t, "the first hash in the state", func(ctx context.Context) (bool, error) { return stateValue(ctx) != "", nil })

	cms := admin.CoreV1().ConfigMaps(appNS)
	cm, err := cms.Get(ctx, "app-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"k": "v2"}
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	hash := confighash.ConfigMap(cm)
	poll(t, "the Deployment to be reloaded", func(ctx context.Context) (bool, error) {
		d, err := admin.AppsV1().Deployments(appNS).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "_RELOADER_-configmap-app-config" {
				return e.Value == hash, nil
			}
		}
		return false, nil
	})
	poll(t, "a Reloaded Event in the app's namespace", func(ctx context.Context) (bool, error) {
		evs, err := admin.CoreV1().Events(appNS).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Deployment,involvedObject.name=app,reason=Reloaded"})
		return err == nil && len(evs.Items) > 0, err
	})
	return hash
}

// checkStateHolds fails unless the state ConfigMap stateNS/stateName holds hash under key.
func checkStateHolds(t *testing.T, stateNS, stateName, key, hash string) {
	t.Helper()
	got, err := cluster.Client().CoreV1().ConfigMaps(stateNS).Get(context.Background(), stateName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Data[key] != hash {
		t.Fatalf("the state holds %q under %s after the stop, want %q", got.Data[key], key, hash)
	}
}

// TestClusterManifestsReload installs deploy/cluster's ServiceAccount, state ConfigMap,
// ClusterRole, ClusterRoleBinding, Role and RoleBinding for real, runs the controller
// in-process in all-namespaces mode (with a namespace selector, which needs the namespaces
// rule) as that ServiceAccount, and reloads a Deployment in another namespace. The base is
// rendered as an overlay moving it to a fresh namespace would, which also moves the
// ClusterRoleBinding's subject.
func TestClusterManifestsReload(t *testing.T) {
	ctx := context.Background()
	admin := cluster.Client()
	ns := cluster.NewNamespace(t)
	appNS := cluster.NewNamespace(t)
	ms := renderBase(t, "cluster", ns)

	sa := one[*corev1.ServiceAccount](t, ms)
	stateCM := one[*corev1.ConfigMap](t, ms)
	cr := one[*rbacv1.ClusterRole](t, ms)
	crb := one[*rbacv1.ClusterRoleBinding](t, ms)
	if len(crb.Subjects) != 1 || crb.Subjects[0].Namespace != ns {
		t.Fatalf("ClusterRoleBinding subjects %+v, want the ServiceAccount in namespace %s", crb.Subjects, ns)
	}
	mustCreate := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("create %s: %v", what, err)
		}
	}
	_, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
	mustCreate("ServiceAccount", err)
	_, err = admin.CoreV1().ConfigMaps(ns).Create(ctx, stateCM, metav1.CreateOptions{})
	mustCreate("state ConfigMap", err)
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{})
	mustCreate("ClusterRole", err)
	t.Cleanup(func() { _ = admin.RbacV1().ClusterRoles().Delete(ctx, cr.Name, metav1.DeleteOptions{}) })
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	mustCreate("ClusterRoleBinding", err)
	t.Cleanup(func() { _ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, crb.Name, metav1.DeleteOptions{}) })
	_, err = admin.RbacV1().Roles(ns).Create(ctx, one[*rbacv1.Role](t, ms), metav1.CreateOptions{})
	mustCreate("Role", err)
	_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, one[*rbacv1.RoleBinding](t, ms), metav1.CreateOptions{})
	mustCreate("RoleBinding", err)

	cfg, err := cluster.ServiceAccountConfig(ctx, ns, sa.Name)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	poll(t, "the RBAC objects to take effect", func(ctx context.Context) (bool, error) {
		_, errList := client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 1})
		_, errLease := client.CoordinationV1().Leases(ns).Get(ctx, "reloader", metav1.GetOptions{})
		return errList == nil && apierrors.IsNotFound(errLease), nil
	})

	// The workload lives in a namespace the selector picks.
	_, err = admin.CoreV1().Namespaces().Patch(ctx, appNS, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"reloader-test":"watched"}}}`), metav1.PatchOptions{})
	mustCreate("namespace label", err)
	createApp(t, appNS)
	jobUID := createBatchApp(t, appNS)

	r := startController(t, cfg, reloader.Options{
		StateNamespace: ns, StateName: stateCM.Name,
		NamespaceSelector: labels.SelectorFromSet(labels.Set{"reloader-test": "watched"}),
	})
	appKey := state.Key("ConfigMap", appNS, "app-config")
	hash := checkReload(t, appNS, ns, stateCM.Name, appKey)
	checkBatchReloaded(t, appNS, jobUID)
	r.stopRefusedNothing(t)
	checkStateHolds(t, ns, stateCM.Name, appKey, hash)
	checkHashKeySecret(t, ns)

	// Reads are cluster-wide; writes are not.
	patch := []byte(`{"metadata":{"labels":{"rbac-test":"x"}}}`)
	wantForbidden(t, map[string]func() error{
		"patch an app ConfigMap": func() error {
			_, err := client.CoreV1().ConfigMaps(appNS).Patch(ctx, "app-config", types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		},
		"create a Secret outside its namespace": func() error {
			_, err := client.CoreV1().Secrets(appNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: reloader.DefaultHashKeySecret}}, metav1.CreateOptions{})
			return err
		},
		"create a ConfigMap outside its namespace": func() error {
			_, err := client.CoreV1().ConfigMaps(appNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: stateCM.Name}}, metav1.CreateOptions{})
			return err
		},
		"patch a ConfigMap named like the state outside its namespace": func() error {
			_, err := client.CoreV1().ConfigMaps(appNS).Patch(ctx, stateCM.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		},
		"get the Lease outside its namespace": func() error {
			_, err := client.CoordinationV1().Leases(appNS).Get(ctx, "reloader", metav1.GetOptions{})
			return err
		},
		"delete a Deployment": func() error {
			return client.AppsV1().Deployments(appNS).Delete(ctx, "app", metav1.DeleteOptions{})
		},
		"list pods": func() error {
			_, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			return err
		},
		"patch a namespace": func() error {
			_, err := client.CoreV1().Namespaces().Patch(ctx, appNS, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		},
	})
}

// wantForbidden makes each call and fails the test for each one the API server does not refuse.
func wantForbidden(t *testing.T, calls map[string]func() error) {
	t.Helper()
	for what, call := range calls {
		if err := call(); !apierrors.IsForbidden(err) {
			t.Errorf("%s: want Forbidden, got %v", what, err)
		}
	}
}
