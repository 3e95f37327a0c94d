package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// ApplyFile creates every object of a multi-document YAML file, namespaced ones in namespace.
// See Apply.
func (c *Cluster) ApplyFile(ctx context.Context, namespace, path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	objs, err := c.Apply(ctx, namespace, b)
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", path, err)
	}
	return objs, nil
}

// Apply creates every object of multi-document YAML, namespaced ones in namespace, through the
// dynamic client, so any kind the API server serves (CRDs included) works. It returns the
// created objects.
func (c *Cluster) Apply(ctx context.Context, namespace string, manifest []byte) ([]*unstructured.Unstructured, error) {
	dyn, mapper, err := c.dynamicClients()
	if err != nil {
		return nil, err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var created []*unstructured.Unstructured
	for {
		var obj unstructured.Unstructured
		if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return created, nil
		} else if err != nil {
			return created, fmt.Errorf("decode document %d: %w", len(created)+1, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		out, err := create(ctx, dyn, mapper, namespace, &obj, metav1.CreateOptions{})
		if err != nil {
			return created, err
		}
		created = append(created, out)
	}
}

// Create creates one object of any kind the API server serves, a namespaced one in namespace,
// with opts (for example a server-side dry run or strict field validation). Discovery is read
// afresh, so kinds of CRDs registered a moment ago resolve.
func (c *Cluster) Create(ctx context.Context, namespace string, obj *unstructured.Unstructured, opts metav1.CreateOptions) (*unstructured.Unstructured, error) {
	dyn, mapper, err := c.dynamicClients()
	if err != nil {
		return nil, err
	}
	return create(ctx, dyn, mapper, namespace, obj, opts)
}

func (c *Cluster) dynamicClients() (dynamic.Interface, meta.RESTMapper, error) {
	dyn, err := dynamic.NewForConfig(c.admin)
	if err != nil {
		return nil, nil, fmt.Errorf("dynamic client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("discovery client: %w", err)
	}
	return dyn, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco)), nil
}

func create(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, namespace string, obj *unstructured.Unstructured, opts metav1.CreateOptions) (*unstructured.Unstructured, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", gvk, err)
	}
	client := dyn.Resource(mapping.Resource).Namespace("")
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		obj.SetNamespace(namespace)
		client = dyn.Resource(mapping.Resource).Namespace(namespace)
	}
	out, err := client.Create(ctx, obj, opts)
	if err != nil {
		return nil, fmt.Errorf("create %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	return out, nil
}

// DenyDeploymentUpdates puts in force a ValidatingAdmissionPolicy, named name, that refuses
// every update of a Deployment for which the CEL expression allowed is false, with message. It
// returns once the objects are created (the API server applies them shortly after); lift
// removes them, and treats objects already gone as removed.
func (c *Cluster) DenyDeploymentUpdates(ctx context.Context, name, allowed, message string) (lift func(context.Context) error, err error) {
	return c.DenyWrites(ctx, name, admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
		admissionv1.Update, allowed, message)
}

// DenyWrites is DenyDeploymentUpdates for the resources of rule and the operation op (an update's
// expression may use oldObject; a create's may not).
func (c *Cluster) DenyWrites(ctx context.Context, name string, rule admissionv1.Rule, op admissionv1.OperationType, allowed, message string) (lift func(context.Context) error, err error) {
	adm := c.client.AdmissionregistrationV1()
	fail := admissionv1.Fail
	_, err = adm.ValidatingAdmissionPolicies().Create(ctx, &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{op}, Rule: rule},
			}}},
			Validations: []admissionv1.Validation{{Expression: allowed, Message: message}},
		},
	}, metav1.CreateOptions{})
	if err == nil {
		_, err = adm.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
		}, metav1.CreateOptions{})
	}
	lift = func(ctx context.Context) error {
		gone := func(err error) error {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		return errors.Join(gone(adm.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})),
			gone(adm.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})))
	}
	if err != nil {
		return lift, fmt.Errorf("put admission policy %s in force: %w", name, err)
	}
	return lift, nil
}
