package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/reloader/reloader/internal/dev/testcluster"
	"github.com/reloader/reloader/state"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(testcluster.Main(m, testcluster.Options{Log: os.Stderr}, &cluster))
}

// crdGroups are API groups of CustomResourceDefinitions, which client-go's scheme does not
// know: their objects decode as unstructured.
var crdGroups = map[string]bool{"monitoring.coreos.com": true}

// strictDecoder rejects unknown and duplicate fields, so a misspelt key (resourceName:,
// readOnlyRootFileSystem:) fails instead of being silently dropped.
var strictDecoder = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// manifest is one YAML document of a file or of helm's output.
type manifest struct {
	source string // file#index, for messages
	json   []byte
	gvk    schema.GroupVersionKind
	name   string
	// obj is typed for built-in kinds and *unstructured.Unstructured for CRD kinds.
	obj runtime.Object
}

func (m manifest) String() string { return fmt.Sprintf("%s (%s %s)", m.source, m.gvk.Kind, m.name) }

// decodeManifests splits data into YAML documents and decodes each strictly with the
// Kubernetes decoder. Documents holding only comments are skipped.
func decodeManifests(t *testing.T, source string, data []byte) []manifest {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []manifest
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: split YAML: %v", source, err)
		}
		src := fmt.Sprintf("%s#%d", source, i)
		js, err := utilyaml.ToJSON(doc)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if s := strings.TrimSpace(string(js)); s == "null" || s == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		m := manifest{source: src, json: js, gvk: u.GroupVersionKind(), name: u.GetName(), obj: u}
		if !crdGroups[m.gvk.Group] {
			obj, gvk, err := strictDecoder.Decode(doc, nil, nil)
			if err != nil {
				t.Errorf("%s: %v", src, err)
				continue
			}
			m.obj, m.gvk = obj, *gvk
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no objects", source)
	}
	return out
}

// readManifestDir returns the objects `kubectl apply -k dir` applies: the kustomize base in
// dir, rendered with the kustomize library.
func readManifestDir(t *testing.T, dir string) []manifest {
	t.Helper()
	return renderBase(t, dir, "")
}

// kinds returns the sorted, de-duplicated kinds of ms.
func kinds(ms []manifest) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.gvk.Kind)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// only returns the objects of type T among ms.
func only[T runtime.Object](ms []manifest) []T {
	var out []T
	for _, m := range ms {
		if o, ok := m.obj.(T); ok {
			out = append(out, o)
		}
	}
	return out
}

// one returns the single object of type T among ms.
func one[T runtime.Object](t *testing.T, ms []manifest) T {
	t.Helper()
	objs := only[T](ms)
	if len(objs) != 1 {
		var zero T
		t.Fatalf("want exactly one %T, got %d", zero, len(objs))
	}
	return objs[0]
}

func byKind(ms []manifest, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, m := range ms {
		if u, ok := m.obj.(*unstructured.Unstructured); ok && m.gvk.Kind == kind {
			out = append(out, u)
		}
	}
	return out
}

// create creates m on the test API server, namespaced kinds in ns; with dryRun the server runs
// admission, validation and the RBAC escalation checks but stores nothing. Field validation is
// strict.
func create(ctx context.Context, m manifest, ns string, dryRun bool) error {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(m.json); err != nil {
		return err
	}
	if got := u.GetNamespace(); got != "" && got != ns {
		return fmt.Errorf("%s: namespace %q, want %q or none", m, got, ns)
	}
	opts := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := cluster.Create(ctx, ns, u, opts); err != nil {
		return fmt.Errorf("%s: %w", m, err)
	}
	return nil
}

func createAll(t *testing.T, ms []manifest, ns string, dryRun bool) {
	t.Helper()
	for _, m := range ms {
		if err := create(context.Background(), m, ns, dryRun); err != nil {
			t.Error(err)
		}
	}
}

// registerMonitoringCRDs creates the minimal ServiceMonitor and PrometheusRule CRDs of
// testdata/ once per test binary and waits until they are served.
func registerMonitoringCRDs(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "monitoring-crds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	crds := decodeCRDs(t, data)
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	dyn := dynamic.NewForConfigOrDie(cluster.Config)
	for _, crd := range crds {
		_, err := cluster.Create(ctx, "", crd, metav1.CreateOptions{})
		if err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("register CRD %s: %v", crd.GetName(), err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, crd := range crds {
			got, err := dyn.Resource(gvr).Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			established := false
			for _, c := range conds {
				c, _ := c.(map[string]any)
				if c["type"] == "Established" && c["status"] == "True" {
					established = true
				}
			}
			if !established {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for the monitoring CRDs: %v", err)
	}
}

// decodeCRDs reads CustomResourceDefinitions as unstructured: client-go's scheme lacks
// apiextensions.
func decodeCRDs(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		js, err := utilyaml.ToJSON(doc)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(js)) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
}

// knownFlags are the reloader's flags, present and announced. A manifest passing anything
// else has a typo.
var knownFlags = map[string]bool{
	"namespace": true, "configmap": true, "state-namespace": true, "hash-key-secret": true, "port": true,
	"coalesce-period": true, "coalesce-max-wait": true, "shutdown-grace": true, "kubeconfig": true,
	"reload-strategy": true, "log-format": true, "log-level": true, "kube-api-qps": true,
	"kube-api-burst": true, "enable-pprof": true, "leader-elect": true, "leader-election-id": true,
	"metrics-by-namespace": true, "is-argo-rollouts": true, "is-openshift": true,
	"namespace-selector": true, "resource-label-selector": true, "namespaces-to-ignore": true,
	"ignored-workload-types": true, "resources-to-ignore": true, "reload-on-create": true,
	"reload-on-delete": true, "alternative-configmap-annotation": true,
	"alternative-secret-annotation": true, "namespaces": true,
	"auto-reload-all": true, "sync-after-restart": true, "pprof-addr": true, "webhook-url": true,
	"configmap-annotation": true, "secret-annotation": true, "auto-annotation": true,
	"configmap-auto-annotation": true, "secret-auto-annotation": true, "auto-search-annotation": true,
	"search-match-annotation": true, "ignore-annotation": true, "pause-deployment-annotation": true,
	"pause-deployment-time-annotation": true, "ignore-secret-types": true,
}

// args returns the reloader container's flags as name → value ("" for a bare boolean flag).
func args(t *testing.T, d *appsv1.Deployment) map[string]string {
	t.Helper()
	c := reloaderContainer(t, d)
	out := map[string]string{}
	for _, a := range c.Args {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !knownFlags[name] {
			t.Errorf("deployment %s: unknown argument %q", d.Name, a)
		}
		if _, dup := out[name]; dup {
			t.Errorf("deployment %s: flag --%s given twice", d.Name, name)
		}
		out[name] = value
	}
	return out
}

func reloaderContainer(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Name != "reloader" {
		t.Fatalf("deployment %s: want one container named reloader, got %d", d.Name, len(cs))
	}
	return cs[0]
}

// checkDeployment checks the hardening and wiring every reloader Deployment must have.
func checkDeployment(t *testing.T, d *appsv1.Deployment, sa string) {
	t.Helper()
	pod := d.Spec.Template.Spec
	c := reloaderContainer(t, d)
	fail := func(format string, a ...any) { t.Errorf("deployment %s: "+format, append([]any{d.Name}, a...)...) }
	if pod.ServiceAccountName != sa {
		fail("serviceAccountName %q, want %q", pod.ServiceAccountName, sa)
	}
	psc, sc := pod.SecurityContext, c.SecurityContext
	switch {
	case psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot:
		fail("pod must set runAsNonRoot: true")
	case psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		fail("pod must use the RuntimeDefault seccomp profile")
	}
	switch {
	case sc == nil:
		fail("container has no securityContext")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		fail("container must set allowPrivilegeEscalation: false")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		fail("container must set readOnlyRootFilesystem: true")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		fail("container must drop ALL capabilities and add none")
	case sc.Privileged != nil && *sc.Privileged:
		fail("container must not be privileged")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		fail("container needs cpu and memory requests and a memory limit, got %v", c.Resources)
	}
	probe := func(what string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "http" {
			fail("%s probe must GET %s on port http", what, path)
		}
	}
	probe("liveness", c.LivenessProbe, "/healthz")
	probe("readiness", c.ReadinessProbe, "/readyz")
	flags := args(t, d)
	port := flags["port"]
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || fmt.Sprint(c.Ports[0].ContainerPort) != port {
		fail("container port http must be --port (%s), got %v", port, c.Ports)
	}
	a := d.Spec.Template.Annotations
	if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != port || a["prometheus.io/path"] != "/metrics" {
		fail("pod needs the Prometheus scrape annotations for port %s, got %v", port, a)
	}
	if flags["state-namespace"] != "" || flags["namespace"] != "" {
		for _, v := range []string{flags["state-namespace"], flags["namespace"]} {
			if v != "" && v != "$(POD_NAMESPACE)" {
				fail("namespaces come from the downward API, got %q", v)
			}
		}
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
				e.ValueFrom.FieldRef.FieldPath == "metadata.namespace"
		}) {
			fail("POD_NAMESPACE must come from metadata.namespace")
		}
	}
	// The runtime's soft limit follows the container's (main.go's memoryLimit).
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "RELOADER_MEMORY_LIMIT" && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil &&
			e.ValueFrom.ResourceFieldRef.Resource == "limits.memory" && e.ValueFrom.ResourceFieldRef.ContainerName == ""
	}) {
		fail("RELOADER_MEMORY_LIMIT must come from the container's limits.memory")
	}
	// $KUBERNETES_NAMESPACE scopes the reloader to one namespace, as it scopes stakater's: set in
	// an all-namespaces manifest, it would silently watch only its own.
	if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "KUBERNETES_NAMESPACE" }) {
		fail("KUBERNETES_NAMESPACE must not be set: it scopes the reloader to one namespace")
	}
	if (d.Spec.Replicas == nil || *d.Spec.Replicas > 1) && !hasFlag(flags, "leader-elect") {
		fail("more than one replica without --leader-elect")
	}
	if !hasFlag(flags, "leader-elect") && d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		fail("without leader election the strategy must be Recreate, so two reloaders never overlap")
	}
}

func hasFlag(flags map[string]string, name string) bool {
	_, ok := flags[name]
	return ok
}

// permissions expands RBAC rules into sorted "group resource verb [name]" tuples, so two rule
// lists compare by what they grant and not by how they are written.
func permissions(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{"*"}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					for _, n := range names {
						out = append(out, fmt.Sprintf("%q %s %s %s", g, res, v, n))
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func samePermissions(t *testing.T, what string, got, want []rbacv1.PolicyRule) {
	t.Helper()
	g, w := permissions(got), permissions(want)
	for _, p := range g {
		if !slices.Contains(w, p) {
			t.Errorf("%s grants %s, which it should not", what, p)
		}
	}
	for _, p := range w {
		if !slices.Contains(g, p) {
			t.Errorf("%s lacks %s", what, p)
		}
	}
}

// TestPlainManifests renders deploy/namespace and deploy/cluster with kustomize, decodes them
// strictly and creates every object on the API server with a server-side dry run: the
// namespace base into a fresh namespace given as kubectl -n would, the cluster base through an
// overlay that moves it to a fresh namespace, which must carry the ClusterRoleBinding's subject
// with it.
func TestPlainManifests(t *testing.T) {
	for _, tc := range []struct {
		dir   string
		kinds []string
	}{
		{"namespace", []string{"ConfigMap", "Deployment", "Role", "RoleBinding", "Service", "ServiceAccount"}},
		{"cluster", []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "Namespace", "Role", "RoleBinding", "Service", "ServiceAccount"}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			ms := readManifestDir(t, tc.dir)
			if got := kinds(ms); !slices.Equal(got, tc.kinds) {
				t.Errorf("kinds %v, want %v", got, tc.kinds)
			}
			want := map[string]string{"namespace": "", "cluster": "reloader"}[tc.dir]
			checkNamespaces(t, ms, want)
			d := one[*appsv1.Deployment](t, ms)
			checkDeployment(t, d, one[*corev1.ServiceAccount](t, ms).Name)
			flags := args(t, d)
			if tc.dir == "namespace" && flags["namespace"] != "$(POD_NAMESPACE)" {
				t.Errorf("namespace mode must pass --namespace=$(POD_NAMESPACE), got %v", flags)
			}
			if tc.dir == "cluster" && hasFlag(flags, "namespace") {
				t.Errorf("cluster mode must not pass --namespace, got %v", flags)
			}
			if cm := one[*corev1.ConfigMap](t, ms); cm.Name != flags["configmap"] {
				t.Errorf("state ConfigMap %q, but --configmap=%s", cm.Name, flags["configmap"])
			}
			checkMetricsService(t, one[*corev1.Service](t, ms), d)
			ns := cluster.NewNamespace(t)
			if tc.dir == "namespace" {
				createAll(t, ms, ns, true)
				return
			}
			moved := renderBase(t, tc.dir, ns)
			checkNamespaces(t, moved, ns)
			// The Namespace exists already (NewNamespace made it), as kubectl apply would find it.
			createAll(t, slices.DeleteFunc(moved, func(m manifest) bool { return m.gvk.Kind == "Namespace" }), ns, true)
		})
	}
}

// TestClusterManifestRules pins the cluster manifests' permissions: reads, restarts (Jobs:
// create and delete) and Events everywhere, writes only to the state shards, the hash key
// Secret and the Lease in the reloader's namespace. Argo Rollouts and
// OpenShift are only in the chart.
func TestClusterManifestRules(t *testing.T) {
	ms := readManifestDir(t, "cluster")
	cr := one[*rbacv1.ClusterRole](t, ms)
	samePermissions(t, "ClusterRole", cr.Rules, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets", "namespaces"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{"batch"}, Resources: []string{"cronjobs"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	})
	role := one[*rbacv1.Role](t, ms)
	samePermissions(t, "Role", role.Rules, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"patch"}, ResourceNames: stateShards("reloader-state")},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "update"}, ResourceNames: []string{"reloader"}},
	})
	sa := one[*corev1.ServiceAccount](t, ms).Name
	crb := one[*rbacv1.ClusterRoleBinding](t, ms)
	if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != cr.Name ||
		len(crb.Subjects) != 1 || crb.Subjects[0].Kind != "ServiceAccount" || crb.Subjects[0].Name != sa || crb.Subjects[0].Namespace != "reloader" {
		t.Errorf("ClusterRoleBinding must bind ClusterRole %s to ServiceAccount reloader/%s only, got %+v %+v", cr.Name, sa, crb.RoleRef, crb.Subjects)
	}
	rb := one[*rbacv1.RoleBinding](t, ms)
	if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name ||
		len(rb.Subjects) != 1 || rb.Subjects[0].Kind != "ServiceAccount" || rb.Subjects[0].Name != sa || rb.Subjects[0].Namespace != "reloader" {
		t.Errorf("RoleBinding must bind Role %s to ServiceAccount %s of its own namespace only, got %+v %+v", role.Name, sa, rb.RoleRef, rb.Subjects)
	}
}

// stateShards returns the names of the state ConfigMap and all its shards, as the state
// package names them.
func stateShards(name string) []string {
	st := state.New(nil, "", name, nil)
	out := make([]string, state.MaxShards)
	for i := range out {
		out[i] = st.ShardName(i)
	}
	return out
}
