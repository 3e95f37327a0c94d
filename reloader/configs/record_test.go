package configs

import (
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"
	"unique"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/reference"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
	"github.com/reloader/reloader/state/statetest"
)

func TestTheCacheKeepsWhatRolloutTrackingReadsOfACustomWorkloadsStatus(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"kind": "Rollout",
		"status": map[string]any{
			"observedGeneration": "4", "phase": "Degraded", "message": "ProgressDeadlineExceeded", "controllerPause": true,
			"pauseConditions": []any{map[string]any{"reason": "CanaryPauseStep", "startTime": "2026-11-23T16:00:00Z"}},
			"canary":          map[string]any{"weights": "large"}, "HPAReplicas": int64(3),
			"conditions": []any{map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
				"message": "a long message", "lastUpdateTime": "2026-11-23T16:00:00Z"}},
		},
	}}
	u.SetGeneration(4)
	before, why := policy.RolloutProgress(u.DeepCopy())
	paused, how := policy.OwnerPaused(u.DeepCopy(), "")
	keepRolloutStatus(u)
	want := map[string]any{"observedGeneration": "4", "phase": "Degraded", "message": "ProgressDeadlineExceeded", "controllerPause": true,
		"pauseConditions": []any{map[string]any{"reason": "CanaryPauseStep"}},
		"conditions":      []any{map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}}}
	if !reflect.DeepEqual(u.Object["status"], want) {
		t.Errorf("kept status %v, want %v", u.Object["status"], want)
	}
	if after, whyAfter := policy.RolloutProgress(u); after != before || whyAfter != why {
		t.Errorf("progress read from the kept status %v %q, from the whole %v %q", after, whyAfter, before, why)
	}
	if p, h := policy.OwnerPaused(u, ""); p != paused || h != how || !p {
		t.Errorf("pause read from the kept status %t %q, from the whole %t %q; want paused", p, h, paused, how)
	}
}

func TestAConfigRecordWithoutObjectMetaStillNamesItsConfigToTheCacheAndToEvents(t *testing.T) {
	c := &Records{annotations: policy.DefaultAnnotations(), hashKey: fixedKey{}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team", UID: "u-1", ResourceVersion: "42",
		Annotations: map[string]string{c.annotations.Ignore: "true", "unrelated": "x"}}, Data: map[string]string{"a": "1"}}
	obj, err := c.Transform(cm)
	if err != nil {
		t.Fatal(err)
	}
	if key, err := cache.MetaNamespaceKeyFunc(obj); err != nil || key != "team/app" {
		t.Errorf("cache key %q, %v", key, err)
	}
	m, err := meta.Accessor(obj)
	if err != nil || m.GetResourceVersion() != "42" || m.GetUID() != "u-1" || len(m.GetAnnotations()) != 1 {
		t.Errorf("accessor %+v, %v: want resourceVersion 42, uid u-1 and only the ignore annotation", m, err)
	}
	ref, err := reference.GetReference(runtime.NewScheme(), obj.(runtime.Object))
	if err != nil || ref.Kind != "ConfigMap" || ref.APIVersion != "v1" || ref.Namespace != "team" || ref.Name != "app" || ref.UID != "u-1" {
		t.Errorf("event reference %+v, %v", ref, err)
	}
	copied := obj.(*Record).DeepCopyObject().(*Record)
	copied.Annotations()["unrelated"] = "changed"
	if _, shared := obj.(*Record).Annotations()["unrelated"]; shared {
		t.Error("a deep copy shares its annotations with the original")
	}
	rec := obj.(*Record)
	if rec.Stakater.String() != confighash.StakaterConfigMap(cm) || rec.Collaborne.String() != confighash.CollaborneConfigMap(cm) {
		t.Errorf("stakater %s, collaborne %s: not the hashes they were made from", rec.Stakater, rec.Collaborne)
	}
}

func TestTheCacheKeepsOfAWorkloadWhatReferencesConfigsAndDropsTheRest(t *testing.T) {
	c := &Records{hashKey: fixedKey{}}
	mount := func(n string) corev1.VolumeMount { return corev1.VolumeMount{Name: n, MountPath: "/etc/" + n} }
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"a": "b"}},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"t": "1"}},
				Spec: corev1.PodSpec{SchedulerName: "default-scheduler", SecurityContext: &corev1.PodSecurityContext{},
					Containers: []corev1.Container{{Name: "app", Image: "app:1", VolumeMounts: []corev1.VolumeMount{mount("cfg"), mount("scratch"), mount("creds")},
						EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env"}}}}}},
					Volumes: []corev1.Volume{
						{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "files"},
							Items: []corev1.KeyToPath{{Key: "a.yaml", Path: "a.yaml"}}}}},
						{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "creds", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
							{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "token"}}}}}}},
					}}}},
	}
	before := policy.UsesOf(&d.DeepCopy().Spec.Template.Spec)
	obj, _ := c.Transform(d)
	got := workload.Unpacked(obj).(*appsv1.Deployment)
	spec := &got.Spec.Template.Spec
	if after := policy.UsesOf(spec); len(before) != 3 || !reflect.DeepEqual(after, before) {
		t.Errorf("uses after the transform %v, before %v (want the same 3)", after, before)
	}
	for _, r := range []policy.ConfigRef{{Kind: policy.KindConfigMap, Name: "files"}, {Kind: policy.KindSecret, Name: "token"}} {
		if !policy.ContainerUses(spec, &spec.Containers[0], r) {
			t.Errorf("the container no longer reads %v through its mounts", r)
		}
	}
	if len(spec.Volumes) != 2 || spec.SecurityContext != nil || spec.SchedulerName != "" || spec.Containers[0].Image != "" ||
		spec.Containers[0].VolumeMounts[0].MountPath != "" || got.Spec.Selector != nil || got.Labels != nil || got.Spec.Template.Labels != nil {
		t.Errorf("kept more than the references: %+v", got)
	}
	if got.Annotations["a"] != "b" || got.Spec.Template.Annotations["t"] != "1" {
		t.Errorf("annotations lost: %v, %v", got.Annotations, got.Spec.Template.Annotations)
	}
}

// client-go's informers may pass an object already in the cache through the transform again:
// a watch-list start (the default since client-go 1.35) transforms each object into a temporary
// store, then once more when it replaces the cache with it. A second pass must change nothing;
// above all the whole template's hash, or the first generation change after every start (a
// scale) is taken for another actor's restart of the pods (soak seed 1795691391691440059@4:
// noted as a restart whose pods waited for two deleted configs, it later vouched for content
// the pods never read, and that content was never rolled out).
func TestTransformingACachedObjectAgainChangesNothing(t *testing.T) {
	tmpl := func() corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"t": "1"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1",
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env"}}}}}}}}
	}
	meta := metav1.ObjectMeta{Name: "app", Namespace: "team", Generation: 3, Labels: map[string]string{"app": "x"},
		Annotations: map[string]string{"a": "b", lastApplied: "{}"}}
	rollout := &unstructured.Unstructured{Object: map[string]any{"kind": "Rollout", "status": map[string]any{"phase": "Healthy", "HPAReplicas": int64(3)}}}
	rollout.SetName("app")
	key, err := confighash.NewKey([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	c := &Records{annotations: policy.DefaultAnnotations(), hashKey: fixedKey{key}}
	for _, obj := range []runtime.Object{
		&appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Template: tmpl()}, Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2}},
		&appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Template: tmpl()}, Status: appsv1.StatefulSetStatus{ObservedGeneration: 3, CurrentReplicas: 1}},
		&appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Template: tmpl()}, Status: appsv1.DaemonSetStatus{ObservedGeneration: 3, NumberReady: 1}},
		&batchv1.CronJob{ObjectMeta: meta, Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl()}}}},
		&batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Template: tmpl()}, Status: batchv1.JobStatus{Active: 1}},
		rollout,
		&corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a": "1"}},
		&corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"a": []byte("1")}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"in": "yes"}}},
	} {
		once, err := c.Transform(obj.DeepCopyObject())
		if err != nil {
			t.Fatal(err)
		}
		twice, err := c.Transform(once.(runtime.Object).DeepCopyObject())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(once, twice) {
			t.Errorf("%T transformed twice differs from once:\n once  %+v\n twice %+v", obj, once, twice)
		}
	}
}

// The cache keeps typed workloads packed (workload.Pack): what the rest of the reloader reads back
// must be the stripped object, field for field, and the cache must still key, index and tell
// resyncs by the workload's identity.
func TestAPackedWorkloadReadsBackAsTheStrippedObject(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"t": "1"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1",
			Env:     []corev1.EnvVar{{Name: "_RELOADER_-configmap-env", Value: "abc"}},
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env"}}}}}}}}
	om := metav1.ObjectMeta{Name: "app", Namespace: "team", UID: "u-1", ResourceVersion: "42", Generation: 3,
		CreationTimestamp: metav1.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC), Annotations: map[string]string{"a": "b"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "CronJob", Name: "nightly", UID: "u-0", Controller: new(true)}}}
	c := &Records{annotations: policy.DefaultAnnotations(), hashKey: fixedKey{}}
	for _, obj := range []runtime.Object{
		&appsv1.Deployment{ObjectMeta: om, Spec: appsv1.DeploymentSpec{Paused: true, Replicas: new(int32(2)), Template: tmpl},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 3, UpdatedReplicas: 1, Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", LastUpdateTime: om.CreationTimestamp}}}},
		&appsv1.StatefulSet{ObjectMeta: om, Spec: appsv1.StatefulSetSpec{Template: tmpl,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}, Status: appsv1.StatefulSetStatus{UpdateRevision: "r2"}},
		&appsv1.DaemonSet{ObjectMeta: om, Spec: appsv1.DaemonSetSpec{Template: tmpl}, Status: appsv1.DaemonSetStatus{NumberAvailable: 2}},
		&batchv1.CronJob{ObjectMeta: om, Spec: batchv1.CronJobSpec{Schedule: "@daily", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}}},
		&batchv1.Job{ObjectMeta: om, Spec: batchv1.JobSpec{Template: tmpl}},
	} {
		cached, err := c.Transform(obj.DeepCopyObject())
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := cached.(*workload.Packed); !ok {
			t.Fatalf("%T cached as %T, not packed", obj, cached)
		}
		if key, err := cache.MetaNamespaceKeyFunc(cached); err != nil || key != "team/app" {
			t.Errorf("%T: cache key %q, %v", obj, key, err)
		}
		if m, err := meta.Accessor(cached); err != nil || m.GetResourceVersion() != "42" {
			t.Errorf("%T: accessor %+v, %v: want resourceVersion 42 (resyncs are told by it)", obj, m, err)
		}
		// What the cache held before packing: the same transform on a type it does not pack.
		want := obj.DeepCopyObject()
		stripForTest(t, want)
		if got := workload.Unpacked(cached); !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%T read back differs from the stripped object:\n got  %+v\n want %+v", obj, got, want)
		}
		if got := workload.Unpacked(cache.DeletedFinalStateUnknown{Key: "team/app", Obj: cached}).(cache.DeletedFinalStateUnknown).Obj; reflect.TypeOf(got) != reflect.TypeOf(obj) {
			t.Errorf("%T: a tombstone's object reads back as %T", obj, got)
		}
		// A status update reads the metadata alone: all of it, in an object of the same type.
		got := workload.MetadataOf(cached)
		if reflect.TypeOf(got) != reflect.TypeOf(obj) {
			t.Fatalf("%T: metadata read back as %T", obj, got)
		}
		gm, wm := got.(metav1.ObjectMetaAccessor).GetObjectMeta(), want.(metav1.ObjectMetaAccessor).GetObjectMeta()
		if !equality.Semantic.DeepEqual(gm, wm) {
			t.Errorf("%T: metadata read back differs:\n got  %+v\n want %+v", obj, gm, wm)
		}
	}
}

// stripForTest applies to obj, in place, what transform strips of its kind (record.go).
func stripForTest(t *testing.T, obj runtime.Object) {
	t.Helper()
	m := obj.(metav1.Object)
	m.SetManagedFields(nil)
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Status = rolloutStatus(o.Status)
		stripTemplate(&o.Spec.Template)
	case *appsv1.StatefulSet:
		o.Status = appsv1.StatefulSetStatus{UpdateRevision: o.Status.UpdateRevision}
		stripTemplate(&o.Spec.Template)
	case *appsv1.DaemonSet:
		o.Status = appsv1.DaemonSetStatus{NumberAvailable: o.Status.NumberAvailable}
		stripTemplate(&o.Spec.Template)
	case *batchv1.CronJob, *batchv1.Job:
	default:
		t.Fatalf("no strip for %T", obj)
	}
}

// A config record keeps a UID the API server made (a lower-case UUID) as its 16 bytes, and any
// other as it is: either reads back as written, for Events and reports.
func TestAConfigsUIDReadsBackAsWritten(t *testing.T) {
	for _, tc := range []struct {
		uid     types.UID
		compact bool
	}{
		{"0f8e2c1a-5b3d-4e6f-8a9b-1c2d3e4f5a6b", true},
		{"0F8E2C1A-5B3D-4E6F-8A9B-1C2D3E4F5A6B", false}, // upper case: its bytes read back lower
		{"cm-uid", false},
		{"0f8e2c1a-5b3d-4e6f-8a9b-1c2d3e4f5a6", false},  // 35 characters
		{"0f8e2c1a55b3d-4e6f-8a9b-1c2d3e4f5a6b", false}, // a digit where a dash goes
		{"zf8e2c1a-5b3d-4e6f-8a9b-1c2d3e4f5a6b", false}, // not hex
		{"", false},
	} {
		var r Record
		r.SetUID(tc.uid)
		if got := r.UID(); got != tc.uid {
			t.Errorf("%q reads back as %q", tc.uid, got)
		}
		if compact := r.rare == nil; compact != tc.compact {
			t.Errorf("%q kept as bytes: %v, want %v", tc.uid, compact, tc.compact)
		}
	}
}

// A config record is kept per config, so its size class is the per-config cost: what few configs
// have lives behind one pointer, nil for the rest.
func TestAConfigRecordFitsTheSizeClassOf160BytesAndMakesNoRarePartForAPlainConfig(t *testing.T) {
	if size := unsafe.Sizeof(Record{}); size > 160 {
		t.Errorf("a config record takes %d bytes, more than the 160-byte size class", size)
	}
	c := &Records{annotations: policy.DefaultAnnotations(), hashKey: fixedKey{}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team", UID: "0f8e2c1a-5b3d-4e6f-8a9b-1c2d3e4f5a6b",
		ResourceVersion: "42", Annotations: map[string]string{"unrelated": "x"}}, Data: map[string]string{"a": "1"}}
	obj, err := c.Transform(cm)
	if err != nil {
		t.Fatal(err)
	}
	if rec := obj.(*Record); rec.rare != nil || rec.Invalid() != "" || rec.Annotations() != nil {
		t.Errorf("a config with no reloader annotation, a valid content and a UUID has rare fields: %+v", rec.rare)
	}
	if rec := obj.(*Record); rec.ResourceVersion() != "42" || rec.Hash() != confighash.ConfigMap(cm) {
		t.Errorf("record reads back resourceVersion %q and hash %q, want 42 and %s", rec.ResourceVersion(), rec.Hash(), confighash.ConfigMap(cm))
	}
}

func TestAResourceVersionReadsBackAsWrittenWhateverItsForm(t *testing.T) {
	for _, rv := range []string{"0", "42", "18446744073709551615", "", "007", "+1", "abc", "18446744073709551616"} {
		r := &Record{ns: unique.Make("ns")}
		r.SetResourceVersion(rv)
		if got := r.ResourceVersion(); got != rv {
			t.Errorf("resourceVersion %q reads back %q", rv, got)
		}
		if got := r.GetObjectMeta().GetResourceVersion(); got != rv {
			t.Errorf("resourceVersion %q reads back %q through GetObjectMeta", rv, got)
		}
	}
}

// stripsSeen is a StripNotes that keeps nothing.
type stripsSeen struct{}

func (stripsSeen) Remember(workload.Key, policy.ConfigRef, string, []string) {}
func (stripsSeen) CaughtUp(workload.Key, policy.ConfigRef, string)           {}

// The fold applies a config's delta after the cache may hold a later version (reloader/journal.go):
// the records a delta carries, old and new, must read then as they did at the event.
func TestAConfigRecordIsNotChangedByWhatReadsItOrRecordsItsContent(t *testing.T) {
	store := state.New(statetest.NewConfigMaps(), "ns", "reloader-state", slog.New(slog.DiscardHandler))
	an := policy.DefaultAnnotations()
	key, err := confighash.NewKey([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	rs := NewRecords(an, fixedKey{key}, store.Configs(), entrykeys.Names{Single: true}, stripsSeen{})
	meta := metav1.ObjectMeta{Name: "app", Namespace: "ns", UID: "Not-A-UUID", ResourceVersion: "v7",
		Annotations: map[string]string{an.Ignore: "false"}}
	cm, _ := rs.Transform(&corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a": "1", "b": "2"}})
	secret, _ := rs.Transform(&corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"a": []byte("1")}})
	for _, obj := range []any{cm, secret} {
		rec := obj.(*Record)
		want := rec.DeepCopyObject()
		k := workload.Key{Kind: rec.kind.String(), Namespace: "ns", Name: rec.Name}
		deps := []workload.Dependent{
			{Workload: workload.Key{Kind: "Deployment", Namespace: "ns", Name: "w"}, Judgement: workload.Judgement{Keys: []string{"a"}}},
			{Workload: workload.Key{Kind: "Deployment", Namespace: "ns", Name: "v"}},
		}
		_, _, _, _, _ = rec.Annotations(), rec.Invalid(), rec.UID(), rec.ResourceVersion(), rec.Hash()
		_ = rec.SameContent(want.(*Record))
		_, _, _ = rs.Content(rec, nil), rs.Content(rec, []string{"a"}), rs.KeyContent(rec, "b")
		again, _ := rs.Transform(rec) // client-go may pass a cached object through the transform again
		rs.FirstSeen(k, rec)
		rs.Baseline(k, rec, deps)
		rs.RolledOut(k, rec, deps)
		rs.Write(k, rec)
		if !reflect.DeepEqual(rec, want) || again != any(rec) {
			t.Errorf("the %s record changed once stored:\n got %+v\nwant %+v", k.Kind, rec, want)
		}
	}
}
