package deploy_test

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/reloader/reloader/internal/dev/release"
)

// renderBase renders the kustomize base in dir as an overlay setting namespace would (none
// when empty).
func renderBase(t *testing.T, dir, namespace string) []manifest {
	t.Helper()
	data, err := release.Kustomize(dir, namespace, "")
	if err != nil {
		t.Fatal(err)
	}
	return decodeManifests(t, "kustomize "+dir, data)
}

// checkNamespaces checks that every namespaced object, the Namespace object and every
// ServiceAccount subject of a binding are in ns ("": the objects set none, for kubectl -n).
func checkNamespaces(t *testing.T, ms []manifest, ns string) {
	t.Helper()
	for _, m := range ms {
		switch o := m.obj.(type) {
		case *corev1.Namespace:
			if o.Name != ns {
				t.Errorf("%s: Namespace %q, want %q", m, o.Name, ns)
			}
		case *rbacv1.ClusterRoleBinding:
			for _, s := range o.Subjects {
				if s.Kind == "ServiceAccount" && s.Namespace != ns {
					t.Errorf("%s: subject %s in namespace %q, want %q", m, s.Name, s.Namespace, ns)
				}
			}
		case *rbacv1.ClusterRole:
		case metav1.Object:
			if o.GetNamespace() != ns {
				t.Errorf("%s: namespace %q, want %q", m, o.GetNamespace(), ns)
			}
		}
	}
}

// checkMetricsService: the Service reaches the reloader's pods on their metrics port.
func checkMetricsService(t *testing.T, svc *corev1.Service, d *appsv1.Deployment) {
	t.Helper()
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	if len(svc.Spec.Selector) == 0 || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("Service %s selector %v does not select the Deployment's pods %v", svc.Name, svc.Spec.Selector, d.Spec.Template.Labels)
	}
	port := args(t, d)["port"]
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "http" || fmt.Sprint(svc.Spec.Ports[0].Port) != port {
		t.Errorf("Service %s must expose port %s to the pods' http port, got %+v", svc.Name, port, svc.Spec.Ports)
	}
}
