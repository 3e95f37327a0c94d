package deploy_test

import (
	"context"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// stakaterValues is a values file in stakater Reloader's chart layout (see its header).
var stakaterValues = filepath.Join("helm", "testdata", "stakater-values.yaml")

// renderWith runs helm template for release rl in namespace ns with a values file (none if
// empty) and --set values.
func renderWith(t *testing.T, ns, valuesFile string, set ...string) ([]byte, error) {
	t.Helper()
	args := append([]string{"template", releaseName, chartDir, "--namespace", ns}, monitoringAPIs...)
	if valuesFile != "" {
		args = append(args, "--values", valuesFile)
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return helm(t, args...)
}

// createEach dry-run creates every manifest in its own namespace, or in home when it names none.
func createEach(t *testing.T, ms []manifest, home string) {
	t.Helper()
	for _, m := range ms {
		ns := home
		if o, ok := m.obj.(interface{ GetNamespace() string }); ok && o.GetNamespace() != "" {
			ns = o.GetNamespace()
		}
		if err := create(context.Background(), m, ns, true); err != nil {
			t.Error(err)
		}
	}
}

// TestChartStakaterValues renders the chart with a stakater user's values file, unchanged,
// installs every object with a server-side dry run, and checks that each value does what it
// did in stakater's chart: the flags, the pod, the environment, the Service and the monitoring
// objects.
func TestChartStakaterValues(t *testing.T) {
	registerMonitoringCRDs(t)
	if out, err := helm(t, "lint", "--strict", chartDir, "--values", stakaterValues); err != nil {
		t.Errorf("%v\n%s", err, out)
	}
	ns := cluster.NewNamespace(t)
	out, err := renderWith(t, ns, stakaterValues)
	if err != nil {
		t.Fatal(err)
	}
	ms := decodeManifests(t, "helm template -f stakater-values.yaml", out)
	wantKinds(t, ms, "ClusterRole", "ClusterRoleBinding", "Deployment", "NetworkPolicy", "PodDisruptionBudget",
		"PodMonitor", "Role", "RoleBinding", "Secret", "Service", "ServiceAccount")
	d := one[*appsv1.Deployment](t, ms)
	checkDeployment(t, d, fullname)
	checkService(t, one[*corev1.Service](t, ms), d)

	wantArgs := map[string]string{
		"state-namespace": "$(POD_NAMESPACE)", "configmap": "reloader-state", "hash-key-secret": "reloader-hash-key",
		"port": "8080", "coalesce-period": "5s", "shutdown-grace": "20s",
		"reload-strategy": "annotations", "log-format": "json", "log-level": "debug",
		"leader-elect": "", "leader-election-id": "reloader", // enableHA
		"is-argo-rollouts": "", "metrics-by-namespace": "", // isArgoRollouts, enableMetricsByNamespace
		"reload-on-create": "", "reload-on-delete": "", "sync-after-restart": "",
		"namespace-selector":      "reloader:enabled", // stakater's key:value form, which the reloader reads
		"namespaces-to-ignore":    "kube-system,kube-public",
		"resource-label-selector": "config.example.com/reload=true",
		"ignored-workload-types":  "jobs",
		"configmap-annotation":    "config.example.com/reload-configmaps",
		"ignore-annotation":       "config.example.com/no-reload",
	}
	if got := args(t, d); !maps.Equal(got, wantArgs) {
		t.Errorf("flags\n got %v\nwant %v", got, wantArgs)
	}

	pod := d.Spec.Template.Spec
	c := reloaderContainer(t, d)
	if *d.Spec.Replicas != 2 || d.Spec.RevisionHistoryLimit == nil || *d.Spec.RevisionHistoryLimit != 3 {
		t.Errorf("replicas %d, revisionHistoryLimit %v: want 2 and 3", *d.Spec.Replicas, d.Spec.RevisionHistoryLimit)
	}
	if pod.PriorityClassName != "platform-critical" || pod.NodeSelector["kubernetes.io/os"] != "linux" ||
		len(pod.Tolerations) != 1 || pod.Tolerations[0].Key != "dedicated" || len(pod.TopologySpreadConstraints) != 1 {
		t.Errorf("scheduling values not applied: %+v", pod)
	}
	if a := pod.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("enableHA without an affinity: want a preferred anti-affinity by node, as stakater's chart sets, got %+v", a)
	}
	if len(pod.ImagePullSecrets) != 1 || pod.ImagePullSecrets[0].Name != "registry-credentials" {
		t.Errorf("global.imagePullSecrets: got %v", pod.ImagePullSecrets)
	}
	if d.Spec.Template.Annotations["team"] != "platform" {
		t.Errorf("deployment.pod.annotations: got %v", d.Spec.Template.Annotations)
	}
	if !c.Resources.Limits.Memory().Equal(resource.MustParse("384Mi")) || !c.Resources.Requests.Cpu().Equal(resource.MustParse("20m")) {
		t.Errorf("deployment.resources: got %v", c.Resources)
	}
	if p := c.LivenessProbe; p.TimeoutSeconds != 5 || p.FailureThreshold != 5 || p.PeriodSeconds != 20 {
		t.Errorf("livenessProbe: want stakater's timeoutSeconds 5 and failureThreshold 5 over the chart's periodSeconds 20, got %+v", p)
	}
	if c.ReadinessProbe.PeriodSeconds != 10 {
		t.Errorf("readinessProbe.periodSeconds %d, want 10", c.ReadinessProbe.PeriodSeconds)
	}
	checkStakaterEnv(t, c.Env, one[*corev1.Secret](t, ms))

	svc := one[*corev1.Service](t, ms)
	if svc.Spec.Ports[0].Port != 9090 || svc.Annotations["example.com/owner"] != "platform" {
		t.Errorf("reloader.service: want port 9090 and the annotation, got %+v %v", svc.Spec.Ports, svc.Annotations)
	}
	if sa := one[*corev1.ServiceAccount](t, ms); sa.Annotations["eks.amazonaws.com/role-arn"] == "" {
		t.Errorf("serviceAccount.annotations: got %v", sa.Annotations)
	}
	if pdb := one[*policyv1.PodDisruptionBudget](t, ms); pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("podDisruptionBudget.maxUnavailable: got %+v", pdb.Spec)
	}
	checkNetworkPolicy(t, one[*networkingv1.NetworkPolicy](t, ms), d, "monitoring", 0)
	pm := byKind(ms, "PodMonitor")[0]
	ep, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if pm.GetLabels()["release"] != "kube-prometheus-stack" || len(ep) != 1 ||
		ep[0].(map[string]any)["scrapeTimeout"] != "10s" || ep[0].(map[string]any)["relabelings"] == nil {
		t.Errorf("podMonitor: want the release label, scrapeTimeout 10s (stakater's timeout) and the relabelings, got %v", pm.Object)
	}
	createAll(t, ms, ns, true)
	if t.Failed() {
		t.Logf("rendered:\n%s", out)
	}
}

// checkStakaterEnv: env.open is a value, env.secret a key of the chart's Secret holding it,
// env.existing a key of the user's Secret, and gomemlimitOverride GOMEMLIMIT.
func checkStakaterEnv(t *testing.T, env []corev1.EnvVar, secret *corev1.Secret) {
	t.Helper()
	byName := map[string]corev1.EnvVar{}
	for _, e := range env {
		byName[e.Name] = e
	}
	ref := func(name string) *corev1.SecretKeySelector {
		if e := byName[name]; e.ValueFrom != nil {
			return e.ValueFrom.SecretKeyRef
		}
		return nil
	}
	if byName["ALERT_SINK"].Value != "slack" || byName["GOMEMLIMIT"].Value != "300MiB" {
		t.Errorf("env.open and gomemlimitOverride: got %v", env)
	}
	for _, name := range []string{"ALERT_ON_RELOAD", "ALERT_WEBHOOK_URL"} {
		if r := ref(name); r == nil || r.Name != secret.Name || r.Key != name || secret.StringData[name] == "" {
			t.Errorf("env.secret %s: want a key of Secret %s, got %+v (Secret keys %v)", name, secret.Name, r, slices.Sorted(maps.Keys(secret.StringData)))
		}
	}
	if r := ref("ALERT_ADDITIONAL_INFO"); r == nil || r.Name != "cluster-info" || r.Key != "cluster-name" {
		t.Errorf("env.existing: want cluster-info's key cluster-name, got %+v", r)
	}
}

// checkNetworkPolicy: the policy selects the reloader's pods, admits only port http from the
// namespace given, and lets out the API server's ports and extraEgress more rules.
func checkNetworkPolicy(t *testing.T, np *networkingv1.NetworkPolicy, d *appsv1.Deployment, from string, extraEgress int) {
	t.Helper()
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("NetworkPolicy selects %s=%s, the pods have %v", k, v, d.Spec.Template.Labels)
		}
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
		t.Errorf("NetworkPolicy must restrict both ingress and egress, got %v", np.Spec.PolicyTypes)
	}
	in, out := np.Spec.Ingress, np.Spec.Egress
	if len(in) != 1 || len(in[0].Ports) != 1 || in[0].Ports[0].Port.String() != "http" || len(in[0].From) != 1 ||
		in[0].From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != from {
		t.Errorf("ingress: want port http from namespace %s, got %+v", from, in)
	}
	if len(out) != 1+extraEgress {
		t.Fatalf("egress: want the API server rule and %d more, got %+v", extraEgress, out)
	}
	var ports []string
	for _, p := range out[0].Ports {
		ports = append(ports, p.Port.String())
	}
	if !slices.Equal(ports, []string{"443", "6443"}) {
		t.Errorf("egress: want the API server's ports 443 and 6443 first, got %+v", out[0])
	}
}

// TestChartStakaterDefaults: values left out of a stakater layout take stakater's meaning.
func TestChartStakaterDefaults(t *testing.T) {
	ns := cluster.NewNamespace(t)
	for _, tc := range []struct {
		name  string
		set   []string
		check func(t *testing.T, ms []manifest)
	}{
		{"any reloader value watches every namespace, as stakater's chart does", []string{"reloader.logLevel=warning"}, func(t *testing.T, ms []manifest) {
			flags := args(t, one[*appsv1.Deployment](t, ms))
			if hasFlag(flags, "namespace") || flags["log-level"] != "warning" || len(only[*rbacv1.ClusterRole](ms)) != 1 {
				t.Errorf("want all namespaces (no --namespace, a ClusterRole) and --log-level=warning, got %v", flags)
			}
		}},
		{"the chart's own watchGlobally=false still wins over that default", []string{"reloader.logLevel=debug", "watchGlobally=false"}, func(t *testing.T, ms []manifest) {
			if flags := args(t, one[*appsv1.Deployment](t, ms)); flags["namespace"] != "$(POD_NAMESPACE)" {
				t.Errorf("want --namespace=$(POD_NAMESPACE), got %v", flags)
			}
		}},
		{"reloader.watchGlobally wins over the chart's own key", []string{"reloader.watchGlobally=false", "watchGlobally=true"}, func(t *testing.T, ms []manifest) {
			if flags := args(t, one[*appsv1.Deployment](t, ms)); flags["namespace"] != "$(POD_NAMESPACE)" {
				t.Errorf("want --namespace=$(POD_NAMESPACE), got %v", flags)
			}
		}},
		{"strategy default and empty log format", []string{"reloader.reloadStrategy=default", "reloader.logFormat="}, func(t *testing.T, ms []manifest) {
			if flags := args(t, one[*appsv1.Deployment](t, ms)); flags["reload-strategy"] != "env-vars" || flags["log-format"] != "text" {
				t.Errorf("want env-vars and text, got %v", flags)
			}
		}},
		{"replicas without enableHA run one, as stakater's chart does", []string{"reloader.deployment.replicas=3"}, func(t *testing.T, ms []manifest) {
			d := one[*appsv1.Deployment](t, ms)
			if *d.Spec.Replicas != 1 || hasFlag(args(t, d), "leader-elect") {
				t.Errorf("want 1 replica without leader election, got %d %v", *d.Spec.Replicas, args(t, d))
			}
		}},
		{"namespaces as a comma-separated string, with the release namespace", []string{"reloader.watchGlobally=false", "reloader.namespaces=team-b\\,team-a"}, func(t *testing.T, ms []manifest) {
			want := strings.Join(slices.Sorted(slices.Values([]string{"team-a", "team-b", ns})), ",")
			if got := args(t, one[*appsv1.Deployment](t, ms))["namespaces"]; got != want {
				t.Errorf("--namespaces=%s, want %s", got, want)
			}
			if n := len(only[*rbacv1.Role](ms)); n != 3 {
				t.Errorf("want a Role in each of the three namespaces, got %d", n)
			}
		}},
		{"no ServiceAccount made: the namespace's default", []string{"reloader.serviceAccount.create=false"}, func(t *testing.T, ms []manifest) {
			if got := one[*appsv1.Deployment](t, ms).Spec.Template.Spec.ServiceAccountName; got != "default" || len(only[*corev1.ServiceAccount](ms)) != 0 {
				t.Errorf("want serviceAccountName default and no ServiceAccount, got %q", got)
			}
		}},
		{"webhookUrl, which stakater's chart passes only along with custom_annotations", []string{"reloader.webhookUrl=https://hooks.example/x"}, func(t *testing.T, ms []manifest) {
			if got := args(t, one[*appsv1.Deployment](t, ms))["webhook-url"]; got != "https://hooks.example/x" {
				t.Errorf("--webhook-url=%q", got)
			}
		}},
		{"rbac.enabled=false makes no Roles", []string{"reloader.rbac.enabled=false"}, func(t *testing.T, ms []manifest) {
			wantKinds(t, ms, "Deployment", "Service", "ServiceAccount")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := render(t, ns, tc.set...)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, decodeManifests(t, "helm template "+strings.Join(tc.set, ","), out))
		})
	}
}

// TestChartSchemaRejectsMisspeltValues: a key that is neither the chart's nor stakater's fails
// helm template with a message naming it, at every level the chart owns. The positive control
// renders the same values spelt right.
func TestChartSchemaRejectsMisspeltValues(t *testing.T) {
	for _, tc := range []struct{ wrong, right, key string }{
		{"watchGlobaly=true", "watchGlobally=true", "'watchGlobaly'"},
		{"reloader.watchGlobaly=true", "reloader.watchGlobally=true", "'watchGlobaly'"},
		{"reloader.deployment.replica=2", "reloader.deployment.replicas=1", "'replica'"},
		{"reloader.deployment.env.opne.A=b", "reloader.deployment.env.open.A=b", "'opne'"},
		{"reloader.custom_annotations.configmaps=x", "reloader.custom_annotations.configmap=x", "'configmaps'"},
		{"serviceMonitor.relabeling[0].action=keep", "serviceMonitor.relabelings[0].action=keep", "'relabeling'"},
		{"leaderElection.enable=true", "leaderElection.enabled=true", "'enable'"},
		{"livenessProbe.timeout=3", "livenessProbe.timeoutSeconds=3", "'timeout'"},
		{"global.imageRegistery=r.example", "global.imageRegistry=r.example", "'imageRegistery'"},
	} {
		if _, err := render(t, "default", tc.right); err != nil {
			t.Errorf("--set %s (positive control): %v", tc.right, err)
		}
		_, err := render(t, "default", tc.wrong)
		if err == nil || !strings.Contains(err.Error(), "additional properties "+tc.key+" not allowed") {
			t.Errorf("--set %s: want an error naming %s, got %v", tc.wrong, tc.key, err)
		}
	}
}

// TestChartRejectsStakaterValuesItCannotHonour: each stakater value the reloader does not do
// fails with one line saying why, rather than being ignored.
func TestChartRejectsStakaterValuesItCannotHonour(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"reloader.enableCSIIntegration=true"}, "reloader.enableCSIIntegration: not supported"},
		{[]string{"reloader.legacy.rbac=true"}, "reloader.legacy.rbac: not supported"},
		{[]string{"reloader.verticalPodAutoscaler.enabled=true"}, "reloader.verticalPodAutoscaler.enabled: not supported"},
		{[]string{"reloader.ignoreSecrets=true", "reloader.ignoreConfigMaps=true"}, "only one of them may be true"},
		{[]string{"image.repository=ghcr.io/stakater/reloader"}, "is stakater Reloader's image"},
		{[]string{"reloader.watchGlobally=false", "reloader.ignoreNamespaces=kube-system"}, "need watchGlobally=true"},
		{[]string{"reloader.reloadStrategy=rolling"}, "reloadStrategy"},
		{[]string{"reloader.namespaces={team-a}"}, "reloader.namespaces needs reloader.watchGlobally=false"},
	} {
		out, err := render(t, "default", tc.set...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %v: want an error containing %q, got %v\n%s", tc.set, tc.want, err, out)
		}
	}
}

// TestChartOperatorValues: the chart's own values for what operators add (image digest and
// registry, probes, topology spread, priority class, PodDisruptionBudget, NetworkPolicy,
// PodMonitor, a ServiceMonitor in the monitoring namespace with relabelings) render as asked
// and install with a server-side dry run, the monitors in their own namespace.
func TestChartOperatorValues(t *testing.T) {
	registerMonitoringCRDs(t)
	ns, monitoring := cluster.NewNamespace(t), cluster.NewNamespace(t)
	out, err := render(t, ns,
		"global.imageRegistry=registry.example.com/mirror", "image.digest=sha256:"+strings.Repeat("a", 64),
		"readinessProbe.failureThreshold=7", "priorityClassName=platform",
		"topologySpreadConstraints[0].maxSkew=1", "topologySpreadConstraints[0].topologyKey=kubernetes.io/hostname",
		"topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway", "topologySpreadConstraints[0].labelSelector.matchLabels.app\\.kubernetes\\.io/instance=rl",
		"leaderElection.enabled=true", "replicaCount=2", "podDisruptionBudget.enabled=true", "podDisruptionBudget.minAvailable=1",
		"networkPolicy.enabled=true", "networkPolicy.extraEgress[0].ports[0].port=53", "networkPolicy.extraEgress[0].ports[0].protocol=UDP",
		"networkPolicy.from[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=monitoring",
		"serviceMonitor.enabled=true", "serviceMonitor.namespace="+monitoring,
		"serviceMonitor.relabelings[0].targetLabel=cluster", "serviceMonitor.relabelings[0].replacement=prod",
		"podMonitor.enabled=true", "podMonitor.namespace="+monitoring)
	if err != nil {
		t.Fatal(err)
	}
	ms := decodeManifests(t, "helm template operator values", out)
	d := one[*appsv1.Deployment](t, ms)
	checkDeployment(t, d, fullname)
	pod, c := d.Spec.Template.Spec, reloaderContainer(t, d)
	if want := "registry.example.com/mirror/reloader/reloader@sha256:" + strings.Repeat("a", 64); c.Image != want {
		t.Errorf("image %s, want %s", c.Image, want)
	}
	if c.ReadinessProbe.FailureThreshold != 7 || c.ReadinessProbe.PeriodSeconds != 5 {
		t.Errorf("readinessProbe: want failureThreshold 7 over periodSeconds 5, got %+v", c.ReadinessProbe)
	}
	if pod.PriorityClassName != "platform" || len(pod.TopologySpreadConstraints) != 1 {
		t.Errorf("priorityClassName and topologySpreadConstraints: got %q %+v", pod.PriorityClassName, pod.TopologySpreadConstraints)
	}
	if pdb := one[*policyv1.PodDisruptionBudget](t, ms); pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 ||
		!reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("PodDisruptionBudget: want minAvailable 1 over the Deployment's pods, got %+v", pdb.Spec)
	}
	checkNetworkPolicy(t, one[*networkingv1.NetworkPolicy](t, ms), d, "monitoring", 1)
	for _, kind := range []string{"ServiceMonitor", "PodMonitor"} {
		m := byKind(ms, kind)
		if len(m) != 1 || m[0].GetNamespace() != monitoring {
			t.Fatalf("want one %s in namespace %s, got %d", kind, monitoring, len(m))
		}
		if names, _, _ := unstructured.NestedStringSlice(m[0].Object, "spec", "namespaceSelector", "matchNames"); !slices.Equal(names, []string{ns}) {
			t.Errorf("%s must select the release namespace %s, got %v", kind, ns, names)
		}
	}
	checkServiceMonitor(t, one[*corev1.Service](t, ms), byKind(ms, "ServiceMonitor"))
	eps, _, _ := unstructured.NestedSlice(byKind(ms, "ServiceMonitor")[0].Object, "spec", "endpoints")
	if rl, _ := eps[0].(map[string]any)["relabelings"].([]any); len(rl) != 1 {
		t.Errorf("serviceMonitor.relabelings: got %v", eps)
	}
	createEach(t, ms, ns)
	if t.Failed() {
		t.Logf("rendered:\n%s", out)
	}
}
