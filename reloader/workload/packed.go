package workload

import (
	"encoding/binary"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// Packed is what the informer cache keeps of a typed workload: its identity, and the stripped
// object (reloader/configs/record.go) as protobuf, decoded each time it is read (Unpacked). A stripped
// Deployment decoded takes about 2.5 KB of Go structs (ObjectMeta and PodSpec are large even
// when nearly empty), its protobuf a fifth of that; with a workload per five configs, that was
// about 0.4 KB per config at 50,000 (docs/lab/benchmarks-sessions.md). Reads decode: a few
// microseconds per workload a config change judges, or per workload event; the kind's memo keeps
// the last few decodes for the other reads of the same change (Kind.Decoded).
type Packed struct {
	kind            PackKind
	Name            string
	Namespace       string
	ResourceVersion string // the informer tells a resync from an update by it
	raw             []byte
}

// PackKind says which type a Packed decodes to.
type PackKind uint8

const (
	PackDeployment PackKind = iota + 1
	PackStatefulSet
	PackDaemonSet
	PackCronJob
	PackJob
)

// protoObject is a k8s.io/api type with its generated protobuf encoding.
type protoObject interface {
	metav1.Object
	Marshal() ([]byte, error)
}

// Pack encodes a stripped workload for the cache; one that does not encode is kept as it is.
func Pack(kind PackKind, o protoObject) any {
	raw, err := o.Marshal()
	if err != nil {
		return o
	}
	return &Packed{kind: kind, Name: o.GetName(), Namespace: o.GetNamespace(), ResourceVersion: o.GetResourceVersion(), raw: raw}
}

// decode returns a new object of the workload's type, decoded from its protobuf.
func (p *Packed) decode() (any, error) {
	var o interface{ Unmarshal([]byte) error }
	switch p.kind {
	case PackDeployment:
		o = &appsv1.Deployment{}
	case PackStatefulSet:
		o = &appsv1.StatefulSet{}
	case PackDaemonSet:
		o = &appsv1.DaemonSet{}
	case PackCronJob:
		o = &batchv1.CronJob{}
	case PackJob:
		o = &batchv1.Job{}
	default:
		return nil, fmt.Errorf("cached workload %s/%s: unknown packed kind %d", p.Namespace, p.Name, p.kind)
	}
	if err := o.Unmarshal(p.raw); err != nil {
		return nil, fmt.Errorf("decode cached workload %s/%s: %w", p.Namespace, p.Name, err)
	}
	return o, nil
}

// MetadataOf returns a cached object with its metadata alone decoded, when it is a packed
// workload (an object of its type, all else empty): a status update, the most frequent event
// during a rollout, needs no more. Anything else is returned as it is.
func MetadataOf(obj any) any {
	p, ok := obj.(*Packed)
	if !ok {
		return obj
	}
	// The protobuf encoding of every packed type starts with its metadata, field 1.
	n, w := binary.Uvarint(p.raw[min(1, len(p.raw)):])
	if len(p.raw) == 0 || p.raw[0] != 1<<3|2 || w <= 0 || n > uint64(len(p.raw)-1-w) {
		return Unpacked(obj)
	}
	var m metav1.ObjectMeta
	if err := m.Unmarshal(p.raw[1+w : 1+w+int(n)]); err != nil {
		return Unpacked(obj)
	}
	switch p.kind {
	case PackDeployment:
		return &appsv1.Deployment{ObjectMeta: m}
	case PackStatefulSet:
		return &appsv1.StatefulSet{ObjectMeta: m}
	case PackDaemonSet:
		return &appsv1.DaemonSet{ObjectMeta: m}
	case PackCronJob:
		return &batchv1.CronJob{ObjectMeta: m}
	}
	return &batchv1.Job{ObjectMeta: m}
}

// Unpacked returns a cached object as the rest of the reloader reads it: a packed workload
// decoded (a new object each time, which the caller may keep), a deletion tombstone with its
// object decoded, anything else as it is. The bytes were encoded by pack from a decoded object,
// so they decode: a failure is a broken invariant, not an input to handle.
func Unpacked(obj any) any {
	switch o := obj.(type) {
	case *Packed:
		out, err := o.decode()
		if err != nil {
			panic(err)
		}
		return out
	case cache.DeletedFinalStateUnknown:
		o.Obj = Unpacked(o.Obj)
		return o
	}
	return obj
}

func (p *Packed) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// GetObjectMeta is the workload's identity for meta.Accessor (cache keys, indexes, resyncs): a
// copy, made only when asked.
func (p *Packed) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, ResourceVersion: p.ResourceVersion}
}

func (p *Packed) DeepCopyObject() runtime.Object {
	c := *p
	c.raw = slices.Clone(p.raw)
	return &c
}
