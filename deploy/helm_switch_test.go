package deploy_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/reloader/reloader/reloader"
	"github.com/reloader/reloader/state"
)

// stakaterChart stands in for stakater Reloader's chart (see its Chart.yaml).
const stakaterChart = "testdata/stakater-release"

// switchValues is a stakater user's values file (see its header).
const switchValues = "testdata/stakater-switch-values.yaml"

// stakaterRelease is a release of stakaterChart in a fresh namespace.
type stakaterRelease struct {
	name, ns, fullname string
}

// installStakater installs stakaterChart as release name with args, and removes its
// cluster-wide objects (and this chart's, named alike) when the test ends.
func installStakater(t *testing.T, name, fullname string, args ...string) stakaterRelease {
	t.Helper()
	r := stakaterRelease{name: name, ns: cluster.NewNamespace(t), fullname: fullname}
	t.Cleanup(func() {
		ctx := context.Background()
		rbac := cluster.Client().RbacV1()
		for _, n := range []string{fullname, fullname + "-role", fullname + "-role-binding"} {
			_ = rbac.ClusterRoleBindings().Delete(ctx, n, metav1.DeleteOptions{})
			_ = rbac.ClusterRoles().Delete(ctx, n, metav1.DeleteOptions{})
		}
	})
	r.helm(t, append([]string{"install", name, stakaterChart}, args...)...)
	return r
}

// helm runs a helm command on the release's namespace and returns its output.
func (r stakaterRelease) helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := r.try(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (r stakaterRelease) try(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := helm(t, append(args, "-n", r.ns, "--kubeconfig="+cluster.Kubeconfig)...)
	return string(out), err
}

func (r stakaterRelease) deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	d, err := cluster.Client().AppsV1().Deployments(r.ns).Get(context.Background(), r.fullname, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// watchAccess asks the API server, until the returned stop is called, whether the release's
// ServiceAccount may still read ConfigMaps and patch Deployments in appNS, and stop returns
// each refusal seen: a window without a working reloader there.
func (r stakaterRelease) watchAccess(t *testing.T, appNS string) (stop func() []string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var refused []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if err := r.mayReload(ctx, appNS); err != nil && ctx.Err() == nil {
				refused = append(refused, err.Error())
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	if err := r.mayReload(ctx, appNS); err != nil {
		t.Fatalf("before: %v", err)
	}
	return func() []string { cancel(); wg.Wait(); return refused }
}

// mayReload fails unless the release's ServiceAccount may read ConfigMaps and patch
// Deployments in appNS.
func (r stakaterRelease) mayReload(ctx context.Context, appNS string) error {
	for _, a := range []authorizationv1.ResourceAttributes{
		{Namespace: appNS, Verb: "watch", Resource: "configmaps"},
		{Namespace: appNS, Verb: "patch", Group: "apps", Resource: "deployments"},
	} {
		review, err := cluster.Client().AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               fmt.Sprintf("system:serviceaccount:%s:%s", r.ns, r.fullname),
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + r.ns},
				ResourceAttributes: &a,
			}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !review.Status.Allowed {
			return fmt.Errorf("%s %s in %s refused at %s", a.Verb, a.Resource, appNS, time.Now().Format("15:04:05.000"))
		}
	}
	return nil
}

// step runs a helm command that must keep the Deployment and, when appNS is not empty, never
// leave the release's ServiceAccount without the right to reload in appNS.
func (r stakaterRelease) step(t *testing.T, before *appsv1.Deployment, appNS string, args ...string) (*appsv1.Deployment, string) {
	t.Helper()
	stop := func() []string { return nil }
	if appNS != "" {
		stop = r.watchAccess(t, appNS)
	}
	out := r.helm(t, args...)
	if refused := stop(); len(refused) > 0 {
		t.Errorf("helm %s left a window without a reloader in %s: %v", args[0], appNS, refused)
	}
	d := r.deployment(t)
	if d.UID != before.UID {
		t.Fatalf("helm %s replaced Deployment %s: reloads stop between the delete and the new pods", args[0], d.Name)
	}
	return d, out
}

// checkOurs checks that d now runs the reloader, with stakater's selector and pod labels and
// the scope wanted, and that the reloader reloads with the rendered flags as the release's
// ServiceAccount: in a second namespace when clusterWide, else in its own.
func (r stakaterRelease) checkOurs(t *testing.T, d *appsv1.Deployment, clusterWide bool, podLabels map[string]string) {
	t.Helper()
	ctx := context.Background()
	if img := d.Spec.Template.Spec.Containers[0].Image; strings.Contains(img, "stakater") {
		t.Fatalf("the Deployment still runs %s", img)
	}
	if sel := d.Spec.Selector.MatchLabels; len(sel) != 2 || sel["app"] != r.fullname || sel["release"] != r.name {
		t.Errorf("selector %v, want stakater's", sel)
	}
	want := map[string]string{"app.kubernetes.io/name": "reloader", "app.kubernetes.io/instance": r.name}
	for k, v := range podLabels {
		want[k] = v
	}
	for k, v := range want {
		if got := d.Spec.Template.Labels[k]; got != v {
			t.Errorf("pod label %s=%q, want %q (NetworkPolicies and monitors select on it)", k, got, v)
		}
	}
	flags := args(t, d)
	if hasFlag(flags, "namespace") == clusterWide {
		t.Fatalf("flags %v: want cluster-wide %v, as the stakater release was", flags, clusterWide)
	}
	_, err := cluster.Client().RbacV1().ClusterRoles().Get(ctx, r.fullname+"-role", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("stakater's ClusterRole %s-role is left behind: %v", r.fullname, err)
	}

	// A namespaced reloader keys its state by name alone.
	appNS, keyNS := r.ns, ""
	opts := reloader.Options{Namespace: r.ns, StateNamespace: r.ns, StateName: flags["configmap"]}
	if clusterWide {
		appNS, opts.Namespace = cluster.NewNamespace(t), ""
		keyNS = appNS
	}
	cfg, err := cluster.ServiceAccountConfig(ctx, r.ns, d.Spec.Template.Spec.ServiceAccountName)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	poll(t, "the release's RBAC to take effect", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ConfigMaps(appNS).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	createApp(t, appNS)
	c := startController(t, cfg, opts)
	checkReload(t, appNS, r.ns, opts.StateName, state.Key("ConfigMap", keyNS, "app-config"))
	c.stopRefusedNothing(t)
}

// switchClusterWide upgrades a cluster-wide stakater release r to this chart with args, rolls
// back and upgrades again: the same Deployment throughout, reloading in a second namespace.
func switchClusterWide(t *testing.T, r stakaterRelease, podLabels map[string]string, args ...string) {
	t.Helper()
	appNS := cluster.NewNamespace(t)
	d := r.deployment(t)
	d, _ = r.step(t, d, appNS, append([]string{"upgrade", r.name, chartDir}, args...)...)
	r.checkOurs(t, d, true, podLabels)

	d, _ = r.step(t, d, appNS, "rollback", r.name, "1")
	if img := d.Spec.Template.Spec.Containers[0].Image; !strings.Contains(img, "stakater") {
		t.Fatalf("after the rollback the Deployment runs %s", img)
	}
	d, _ = r.step(t, d, appNS, append([]string{"upgrade", r.name, chartDir}, args...)...)
	r.checkOurs(t, d, true, podLabels)
}

// stakaterPodLabels are the pod labels of stakater's chart's default values.
var stakaterPodLabels = map[string]string{"provider": "stakater", "group": "com.stakater.platform"}

func TestHelmUpgradeOfADefaultStakaterReleaseNamedReloaderSwitchesClusterWide(t *testing.T) {
	r := installStakater(t, "reloader", "reloader-reloader")
	switchClusterWide(t, r, stakaterPodLabels)
}

func TestHelmUpgradeOfADefaultStakaterReleaseNamedStSwitchesClusterWide(t *testing.T) {
	r := installStakater(t, "st", "st-reloader")
	switchClusterWide(t, r, stakaterPodLabels)
}

func TestHelmUpgradeWithStakaterLabelsTrueOfADefaultStakaterReleaseSwitchesClusterWide(t *testing.T) {
	r := installStakater(t, "st", "st-reloader")
	switchClusterWide(t, r, stakaterPodLabels, "--set", "stakaterLabels=true")
}

func TestHelmUpgradeWithStakatersValuesFileSwitchesClusterWide(t *testing.T) {
	r := installStakater(t, "reloader", "reloader-reloader", "-f", switchValues)
	switchClusterWide(t, r, map[string]string{"team": "platform", "provider": "stakater"}, "-f", switchValues)
}

// --reuse-values renders the chart with the previous chart's defaults (helm's rule), which
// lack this chart's: it is refused, naming --reset-then-reuse-values, which switches.
func TestHelmUpgradeWithReuseValuesOfANamespacedStakaterReleaseRefusesThenResetThenReuseKeepsItsScope(t *testing.T) {
	r := installStakater(t, "st", "st-reloader", "-f", switchValues, "--set", "reloader.watchGlobally=false")
	r.refuses(t, "--reset-then-reuse-values", "--reuse-values")
	d, _ := r.step(t, r.deployment(t), "", "upgrade", r.name, chartDir, "--reset-then-reuse-values")
	r.checkOurs(t, d, false, map[string]string{"team": "platform"})
	if _, err := cluster.Client().RbacV1().ClusterRoles().Get(context.Background(), r.fullname, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a namespaced release got a ClusterRole: %v", err)
	}
}

// refuses runs an upgrade that must fail with a message naming flag, and checks that it
// changed nothing: the Deployment, stakater's RBAC and the release's revision stay.
func (r stakaterRelease) refuses(t *testing.T, flag string, args ...string) {
	t.Helper()
	ctx := context.Background()
	before := r.deployment(t)
	_, err := r.try(t, append([]string{"upgrade", r.name, chartDir}, args...)...)
	if err == nil || !strings.Contains(err.Error(), flag) {
		t.Fatalf("want a refusal naming %s, got %v", flag, err)
	}
	if d := r.deployment(t); d.ResourceVersion != before.ResourceVersion {
		t.Error("the refused upgrade changed the Deployment")
	}
	rbac, binding := cluster.Client().RbacV1(), r.fullname+"-role-binding"
	_, errCluster := rbac.ClusterRoleBindings().Get(ctx, binding, metav1.GetOptions{})
	if _, err := rbac.RoleBindings(r.ns).Get(ctx, binding, metav1.GetOptions{}); err != nil && errCluster != nil {
		t.Errorf("the refused upgrade removed stakater's binding %s: %v", binding, errCluster)
	}
	for _, get := range []func() error{
		func() error {
			_, err := cluster.Client().CoreV1().Services(r.ns).Get(ctx, r.fullname, metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := cluster.Client().RbacV1().ClusterRoles().Get(ctx, r.fullname, metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); !apierrors.IsNotFound(err) {
			t.Errorf("the refused upgrade left an object behind: %v", err)
		}
	}
	if out := r.helm(t, "history", r.name, "-o", "json"); strings.Count(out, `"revision"`) != 1 {
		t.Errorf("the refused upgrade made a revision: %s", out)
	}
}

func TestHelmUpgradeWithStakaterLabelsFalseOverAStakaterReleaseRefusesBeforeChangingAnything(t *testing.T) {
	r := installStakater(t, "st", "st-reloader")
	r.refuses(t, "--set stakaterLabels=true", "--set", "stakaterLabels=false")
}

// A stakater release named with fullnameOverride, upgraded with other values (with none, helm
// reuses the release's), is refused without it, and switches with it.
func TestHelmUpgradeOfAStakaterReleaseWithFullnameOverrideRefusesUntilItIsGiven(t *testing.T) {
	r := installStakater(t, "st", "my-reloader", "--set", "fullnameOverride=my-reloader")
	r.refuses(t, "--set fullnameOverride=my-reloader", "--set", "logLevel=debug")
	switchClusterWide(t, r, stakaterPodLabels, "--set", "fullnameOverride=my-reloader")
}
