package reloader

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/policy"
)

// configRecord is what the informer cache keeps of a ConfigMap or Secret: its identity, the few
// annotations the reloader reads, and hashes of its content. The contents themselves are dropped
// on arrival, so memory grows with the number of configs and keys, not with their size, and no
// Secret value is ever held.
type configRecord struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Hash     string              // content hash (confighash): plain for a ConfigMap, keyed for a Secret
	Keys     []confighash.KeySum // per-key sums, for workloads that read single keys; keyed for a Secret
	Stakater string              // stakater Reloader's hash, to take over without restarts; never written
	// Collaborne is Collaborne kubernetes-reloader's hash, to take over its state entries and
	// variables without restarts (collaborne.go); never written.
	Collaborne string
	// Legacy holds a Secret's plain hashes, as versions before keyed hashes wrote them into the
	// state and workloads; nil for a ConfigMap. They are kept in memory only, so that those
	// values are compared as before and an upgrade restarts nothing that did not change.
	Legacy *legacyHashes
}

// legacyHashes are a Secret's plain content hash and per-key sums.
type legacyHashes struct {
	Hash string
	Keys []confighash.KeySum
}

func (r *configRecord) DeepCopyObject() runtime.Object {
	c := *r
	r.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Keys = append([]confighash.KeySum(nil), r.Keys...)
	if r.Legacy != nil {
		c.Legacy = &legacyHashes{Hash: r.Legacy.Hash, Keys: append([]confighash.KeySum(nil), r.Legacy.Keys...)}
	}
	return &c
}

// lastApplied is kubectl's copy of the whole manifest: for a config it repeats the data, for a
// workload the spec, so the cache never keeps it.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// transform strips objects before they enter the informer cache.
func (c *Controller) transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		r := c.newRecord(policy.KindConfigMap, &o.ObjectMeta, confighash.ConfigMap(o))
		r.Keys, r.Stakater = confighash.ConfigMapKeys(o), confighash.StakaterConfigMap(o)
		r.Collaborne = confighash.CollaborneConfigMap(o)
		return r, nil
	case *corev1.Secret:
		// Every hash of a Secret that is written is keyed (hashkey.go); stakater's and the
		// legacy plain ones are only compared with what others wrote.
		key := c.opts.HashKey.key
		r := c.newRecord(policy.KindSecret, &o.ObjectMeta, key.Secret(o))
		r.Keys, r.Stakater = key.SecretKeys(o), confighash.StakaterSecret(o)
		r.Collaborne = confighash.CollaborneSecret(o)
		r.Legacy = &legacyHashes{Hash: confighash.Secret(o), Keys: confighash.SecretKeys(o)}
		return r, nil
	case *appsv1.Deployment:
		o.Status = appsv1.DeploymentStatus{}
		stripTemplate(&o.Spec.Template)
	case *appsv1.StatefulSet:
		o.Status, o.Spec.VolumeClaimTemplates = appsv1.StatefulSetStatus{}, nil
		stripTemplate(&o.Spec.Template)
	case *appsv1.DaemonSet:
		o.Status = appsv1.DaemonSetStatus{}
		stripTemplate(&o.Spec.Template)
	case *batchv1.CronJob:
		o.Status = batchv1.CronJobStatus{}
	case *batchv1.Job:
		o.Status = batchv1.JobStatus{} // the template is kept whole: a reload creates a Job from it
	case *unstructured.Unstructured:
		unstructured.RemoveNestedField(o.Object, "status")
	}
	if m, ok := obj.(metav1.Object); ok { // workloads and namespaces
		m.SetManagedFields(nil)
		if a := m.GetAnnotations(); a != nil {
			delete(a, lastApplied)
			m.SetAnnotations(a)
		}
	}
	return obj, nil
}

// stripTemplate drops what the reloader never reads of a cached pod template: of each container
// it keeps the name and what references configs (env, envFrom, volume mounts). Patches are
// computed from these fields only, and guarded by the names they address.
func stripTemplate(t *corev1.PodTemplateSpec) {
	for _, cs := range [][]corev1.Container{t.Spec.Containers, t.Spec.InitContainers} {
		for i, c := range cs {
			cs[i] = corev1.Container{Name: c.Name, Env: c.Env, EnvFrom: c.EnvFrom, VolumeMounts: c.VolumeMounts}
		}
	}
	t.Spec.EphemeralContainers = nil
	t.Spec.Affinity, t.Spec.Tolerations, t.Spec.NodeSelector = nil, nil, nil
}

func (c *Controller) newRecord(kind string, m *metav1.ObjectMeta, hash string) *configRecord {
	r := &configRecord{
		TypeMeta: metav1.TypeMeta{Kind: kind, APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		},
		Hash: hash,
	}
	for _, k := range c.opts.Annotations.OnConfig() {
		if v, ok := m.Annotations[k]; ok {
			if r.Annotations == nil {
				r.Annotations = map[string]string{}
			}
			r.Annotations[k] = v
		}
	}
	return r
}

// hash is the record's content hash; a nil record (a config that does not exist) has none.
func (r *configRecord) hash() string {
	if r == nil {
		return ""
	}
	return r.Hash
}
