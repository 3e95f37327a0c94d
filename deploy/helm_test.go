package deploy_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reloader/reloader/internal/dev/testcluster"
)

const (
	chartDir    = "helm/reloader"
	releaseName = "rl"
	// fullname is the chart's object name for release rl: <release>-<chart>.
	fullname = "rl-reloader"
)

// helmBinary builds (first run only) and returns the pinned helm of tools/helm.
var helmBinary = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	return testcluster.EnsureHelm(ctx, os.Stderr)
})

// helm runs the helm binary with its config, cache and data kept in a temporary directory.
func helm(t *testing.T, args ...string) (stdout []byte, err error) {
	t.Helper()
	bin, err := helmBinary()
	if err != nil {
		t.Fatalf("helm: %v", err)
	}
	home := t.TempDir()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"))
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// monitoringAPIs tells helm template that prometheus-operator's API exists, as the tests that
// render the chart register its CRDs; without it the chart skips the monitors.
var monitoringAPIs = []string{"--api-versions", "monitoring.coreos.com/v1/ServiceMonitor", "--api-versions", "monitoring.coreos.com/v1/PodMonitor"}

// render runs helm template for release rl in namespace ns with --set values.
func render(t *testing.T, ns string, set ...string) ([]byte, error) {
	t.Helper()
	args := append([]string{"template", releaseName, chartDir, "--namespace", ns}, monitoringAPIs...)
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return helm(t, args...)
}

func TestChartLint(t *testing.T) {
	for _, set := range [][]string{nil, {"watchGlobally=true", "leaderElection.enabled=true", "replicaCount=3",
		"serviceMonitor.enabled=true", "prometheusRule.enabled=true", "isArgoRollouts=true", "isOpenshift=true"}} {
		args := []string{"lint", "--strict", chartDir}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		if out, err := helm(t, args...); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

// TestChartRenders renders the chart with helm template for each supported combination of
// values, decodes the output strictly and creates it on the API server with a dry run. The
// ServiceMonitor and PrometheusRule go to minimal CRDs registered from testdata/, which check
// their group, version, kind and metadata; their specs are checked here.
func TestChartRenders(t *testing.T) {
	registerMonitoringCRDs(t)
	cases := []struct {
		name  string
		set   []string
		check func(t *testing.T, ns string, ms []manifest)
	}{
		{"defaults", nil, func(t *testing.T, ns string, ms []manifest) {
			wantKinds(t, ms, "Deployment", "Role", "RoleBinding", "Service", "ServiceAccount")
			flags := args(t, one[*appsv1.Deployment](t, ms))
			if flags["namespace"] != "$(POD_NAMESPACE)" {
				t.Errorf("watchGlobally=false must pass --namespace=$(POD_NAMESPACE), got %v", flags)
			}
			if hasFlag(flags, "leader-elect") || hasLeaseRule(one[*rbacv1.Role](t, ms).Rules) {
				t.Error("leader election is off by default: no --leader-elect and no Lease permissions")
			}
			plain := readManifestDir(t, "namespace")
			wantFlags(t, flags, args(t, one[*appsv1.Deployment](t, plain)))
		}},
		{"watchGlobally", []string{"watchGlobally=true"}, func(t *testing.T, ns string, ms []manifest) {
			wantKinds(t, ms, "ClusterRole", "ClusterRoleBinding", "Deployment", "Role", "RoleBinding", "Service", "ServiceAccount")
			if flags := args(t, one[*appsv1.Deployment](t, ms)); hasFlag(flags, "namespace") {
				t.Errorf("watchGlobally=true must not pass --namespace, got %v", flags)
			}
			crb := one[*rbacv1.ClusterRoleBinding](t, ms)
			if len(crb.Subjects) != 1 || crb.Subjects[0].Name != fullname || crb.Subjects[0].Namespace != ns {
				t.Errorf("ClusterRoleBinding must bind ServiceAccount %s/%s, got %+v", ns, fullname, crb.Subjects)
			}
		}},
		{"leaderElection", []string{"leaderElection.enabled=true", "replicaCount=2"}, func(t *testing.T, ns string, ms []manifest) {
			d := one[*appsv1.Deployment](t, ms)
			flags := args(t, d)
			if *d.Spec.Replicas != 2 || !hasFlag(flags, "leader-elect") || flags["leader-election-id"] != "reloader" {
				t.Errorf("want 2 replicas with --leader-elect --leader-election-id=reloader, got %d %v", *d.Spec.Replicas, flags)
			}
			// With leader election on, the chart's Role grants what deploy/namespace's does.
			plain := readManifestDir(t, "namespace")
			samePermissions(t, "chart Role vs deploy/namespace Role", one[*rbacv1.Role](t, ms).Rules, one[*rbacv1.Role](t, plain).Rules)
		}},
		{"watchGlobally+leaderElection", []string{"watchGlobally=true", "leaderElection.enabled=true"}, func(t *testing.T, ns string, ms []manifest) {
			plain := readManifestDir(t, "cluster")
			samePermissions(t, "chart ClusterRole vs deploy/cluster ClusterRole", one[*rbacv1.ClusterRole](t, ms).Rules, one[*rbacv1.ClusterRole](t, plain).Rules)
			samePermissions(t, "chart Role vs deploy/cluster Role", one[*rbacv1.Role](t, ms).Rules, one[*rbacv1.Role](t, plain).Rules)
			wantFlags(t, args(t, one[*appsv1.Deployment](t, ms)), args(t, one[*appsv1.Deployment](t, plain)))
		}},
		{"argoAndOpenshift", []string{"isArgoRollouts=true", "isOpenshift=true"}, func(t *testing.T, ns string, ms []manifest) {
			d := one[*appsv1.Deployment](t, ms)
			flags := args(t, d)
			if !hasFlag(flags, "is-argo-rollouts") || !hasFlag(flags, "is-openshift") {
				t.Errorf("want --is-argo-rollouts and --is-openshift, got %v", flags)
			}
			perms := permissions(one[*rbacv1.Role](t, ms).Rules)
			for _, p := range []string{`"argoproj.io" rollouts patch *`, `"apps.openshift.io" deploymentconfigs watch *`} {
				if !slices.Contains(perms, p) {
					t.Errorf("Role lacks %s", p)
				}
			}
			if psc := d.Spec.Template.Spec.SecurityContext; psc.RunAsUser != nil || psc.RunAsGroup != nil {
				t.Error("on OpenShift the SCC assigns the user: runAsUser and runAsGroup must be left out")
			}
		}},
		{"alerts through extraEnv", []string{"extraEnv[0].name=ALERT_SINK", "extraEnv[0].value=slack",
			"extraEnv[1].name=ALERT_WEBHOOK_URL", "extraEnv[1].valueFrom.secretKeyRef.name=reloader-alerts", "extraEnv[1].valueFrom.secretKeyRef.key=url"},
			func(t *testing.T, ns string, ms []manifest) {
				env := one[*appsv1.Deployment](t, ms).Spec.Template.Spec.Containers[0].Env
				if len(env) != 4 || env[0].Name != "POD_NAMESPACE" || env[1].Name != "RELOADER_MEMORY_LIMIT" || env[2].Name != "ALERT_SINK" || env[2].Value != "slack" ||
					env[3].ValueFrom == nil || env[3].ValueFrom.SecretKeyRef == nil || env[3].ValueFrom.SecretKeyRef.Key != "url" {
					t.Errorf("container env %+v, want POD_NAMESPACE, RELOADER_MEMORY_LIMIT, then extraEnv verbatim", env)
				}
			}},
		{"monitoring", []string{"serviceMonitor.enabled=true", "prometheusRule.enabled=true"}, func(t *testing.T, ns string, ms []manifest) {
			wantKinds(t, ms, "Deployment", "PrometheusRule", "Role", "RoleBinding", "Service", "ServiceAccount", "ServiceMonitor")
			checkServiceMonitor(t, one[*corev1.Service](t, ms), byKind(ms, "ServiceMonitor"))
			checkPrometheusRule(t, ns, byKind(ms, "PrometheusRule"))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := cluster.NewNamespace(t)
			out, err := render(t, ns, tc.set...)
			if err != nil {
				t.Fatal(err)
			}
			ms := decodeManifests(t, "helm template "+strings.Join(tc.set, ","), out)
			checkDeployment(t, one[*appsv1.Deployment](t, ms), one[*corev1.ServiceAccount](t, ms).Name)
			checkService(t, one[*corev1.Service](t, ms), one[*appsv1.Deployment](t, ms))
			tc.check(t, ns, ms)
			createAll(t, ms, ns, true)
			if t.Failed() {
				t.Logf("rendered:\n%s", out)
			}
		})
	}
}

// TestChartRejects checks the combinations the chart refuses to render, with their messages.
func TestChartRejects(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"replicaCount=2"}, "replicaCount=2 needs leaderElection.enabled=true"},
		{[]string{"namespaceSelector=team=a"}, "namespaceSelector and namespacesToIgnore need watchGlobally=true"},
		{[]string{"reloadStrategy=rolling"}, `at '/reloadStrategy': value must be one of`},
	} {
		out, err := render(t, "default", tc.set...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %v: want an error containing %q, got %v\n%s", tc.set, tc.want, err, out)
		}
	}
}

func wantKinds(t *testing.T, ms []manifest, want ...string) {
	t.Helper()
	if got := kinds(ms); !slices.Equal(got, want) {
		t.Errorf("kinds %v, want %v", got, want)
	}
}

// wantFlags checks that the chart passes every flag of a plain manifest with the same value.
func wantFlags(t *testing.T, chart, plain map[string]string) {
	t.Helper()
	for name, v := range plain {
		if got, ok := chart[name]; !ok || got != v {
			t.Errorf("chart passes --%s=%q, the plain manifest %q", name, got, v)
		}
	}
}

func hasLeaseRule(rules []rbacv1.PolicyRule) bool {
	for _, r := range rules {
		if slices.Contains(r.Resources, "leases") {
			return true
		}
	}
	return false
}

func checkService(t *testing.T, svc *corev1.Service, d *appsv1.Deployment) {
	t.Helper()
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("Service selector %s=%s does not match the pod labels %v", k, v, d.Spec.Template.Labels)
		}
	}
	if len(svc.Spec.Selector) == 0 || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "http" || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("Service must select the reloader pods and expose port http, got %+v", svc.Spec)
	}
}

func checkServiceMonitor(t *testing.T, svc *corev1.Service, sms []*unstructured.Unstructured) {
	t.Helper()
	if len(sms) != 1 {
		t.Fatalf("want one ServiceMonitor, got %d", len(sms))
	}
	sm := sms[0]
	if sm.GetAPIVersion() != "monitoring.coreos.com/v1" {
		t.Errorf("ServiceMonitor apiVersion %s", sm.GetAPIVersion())
	}
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range sel {
		if svc.Labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s, the Service has labels %v", k, v, svc.Labels)
		}
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(sel) == 0 || len(eps) != 1 {
		t.Fatalf("ServiceMonitor needs a selector and one endpoint: %v", sm.Object["spec"])
	}
	ep := eps[0].(map[string]any)
	if ep["port"] != svc.Spec.Ports[0].Name || ep["path"] != "/metrics" {
		t.Errorf("ServiceMonitor endpoint %v, want port %s path /metrics", ep, svc.Spec.Ports[0].Name)
	}
}

// checkPrometheusRule checks each alert's shape and that its expression queries only metrics
// the reloader serves (see dashboard_test.go).
func checkPrometheusRule(t *testing.T, ns string, prs []*unstructured.Unstructured) {
	t.Helper()
	if len(prs) != 1 {
		t.Fatalf("want one PrometheusRule, got %d", len(prs))
	}
	known := knownMetrics(t)
	groups, _, _ := unstructured.NestedSlice(prs[0].Object, "spec", "groups")
	var alerts []string
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			r := r.(map[string]any)
			alert, _ := r["alert"].(string)
			expr, _ := r["expr"].(string)
			severity, _, _ := unstructured.NestedString(r, "labels", "severity")
			summary, _, _ := unstructured.NestedString(r, "annotations", "summary")
			if alert == "" || expr == "" || summary == "" || !slices.Contains([]string{"warning", "critical"}, severity) {
				t.Errorf("rule %v needs alert, expr, a warning or critical severity and a summary", r)
			}
			checkSelectsEveryScrape(t, "alert "+alert, expr, ns, true)
			for _, name := range metricNames(expr) {
				if err := known.check(name); err != nil {
					t.Errorf("alert %s: %v", alert, err)
				}
			}
			alerts = append(alerts, alert)
		}
	}
	for _, want := range []string{"ReloaderDown", "ReloaderReloadFailures", "ReloaderStateWriteFailures",
		"ReloaderStateShardsNearlyExhausted", "ReloaderStateConfigMapNearSizeLimit", "ReloaderStateFull", "ReloaderPendingReloadsBacklog"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("PrometheusRule lacks alert %s (has %v)", want, alerts)
		}
	}
}

// TestChartNamespacesList: namespaces=[a, b] passes --namespaces and grants, in each, exactly
// what deploy/namespace's Role grants apart from the Lease; the Lease rules stay in the release
// namespace, and nothing is cluster-wide.
func TestChartNamespacesList(t *testing.T) {
	home, a, b := cluster.NewNamespace(t), cluster.NewNamespace(t), cluster.NewNamespace(t)
	out, err := render(t, home, "namespaces={"+a+","+b+"}", "leaderElection.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	ms := decodeManifests(t, "helm template namespaces", out)
	wantKinds(t, ms, "Deployment", "Role", "RoleBinding", "Service", "ServiceAccount")
	flags := args(t, one[*appsv1.Deployment](t, ms))
	if flags["namespaces"] != a+","+b || hasFlag(flags, "namespace") || hasFlag(flags, "state-namespace") {
		t.Errorf("want --namespaces=%s,%s without --namespace or --state-namespace, got %v", a, b, flags)
	}
	var plainWatch, plainLease []rbacv1.PolicyRule
	for _, r := range one[*rbacv1.Role](t, readManifestDir(t, "namespace")).Rules {
		if slices.Contains(r.Resources, "leases") {
			plainLease = append(plainLease, r)
		} else {
			plainWatch = append(plainWatch, r)
		}
	}
	roles := map[string]int{}
	for _, m := range ms {
		switch o := m.obj.(type) {
		case *rbacv1.Role:
			roles[o.Namespace]++
			want := plainWatch
			if o.Namespace == home {
				want = plainLease
			}
			samePermissions(t, "chart Role in "+o.Namespace, o.Rules, want)
		case *rbacv1.RoleBinding:
			if len(o.Subjects) != 1 || o.Subjects[0].Name != fullname || o.Subjects[0].Namespace != home {
				t.Errorf("RoleBinding in %s must bind ServiceAccount %s/%s, got %+v", o.Namespace, home, fullname, o.Subjects)
			}
		}
	}
	createEach(t, ms, home)
	if roles[a] != 1 || roles[b] != 1 || roles[home] != 1 {
		t.Errorf("Roles per namespace %v, want one in each of %s, %s and %s", roles, a, b, home)
	}
	if _, err := render(t, home, "namespaces={"+a+"}", "watchGlobally=true"); err == nil || !strings.Contains(err.Error(), "needs watchGlobally=false") {
		t.Errorf("namespaces with watchGlobally rendered: %v", err)
	}
	checkReleaseNamespaceListed(t, home, a)
}

// checkReleaseNamespaceListed: with the release namespace among namespaces, its one Role grants
// what deploy/namespace's Role grants, Lease included.
func checkReleaseNamespaceListed(t *testing.T, home, other string) {
	t.Helper()
	out, err := render(t, home, "namespaces={"+home+","+other+"}", "leaderElection.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	ms := decodeManifests(t, "helm template namespaces with the release namespace", out)
	plain := one[*rbacv1.Role](t, readManifestDir(t, "namespace")).Rules
	homeRoles := 0
	for _, r := range only[*rbacv1.Role](ms) {
		if r.Namespace == home {
			homeRoles++
			samePermissions(t, "chart Role in the release namespace", r.Rules, plain)
		}
	}
	if homeRoles != 1 {
		t.Errorf("want one Role in the release namespace %s, got %d", home, homeRoles)
	}
	createEach(t, ms, home)
}
