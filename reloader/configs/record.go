// Package configs is what a config (a ConfigMap or Secret) is to the reloader: the Record the
// informer cache keeps in place of the object, built by the cache's Transform, which strips
// workloads too; the content values a marker or a state entry is compared with; and the
// config entries of the state, which Records and Tombstones alone write.
package configs

import (
	"crypto/sha1"
	"encoding/hex"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// Record is what the informer cache keeps of a ConfigMap or Secret: its identity, the few
// annotations the reloader reads, and hashes of its content. The contents themselves are dropped
// on arrival, so memory grows with the number of configs and keys, not with their size, and no
// Secret value is ever held. It holds no metav1.ObjectMeta (232 bytes, most of them fields a
// config record never fills): meta.Accessor reaches its identity through GetObjectMeta.
type Record struct {
	Name string
	// ns is the namespace, interned: every config of a namespace shares one copy.
	ns unique.Handle[string]
	// rv is the resourceVersion, as the number the API server writes (else rare holds it): the
	// informer tells a resync from an update by it.
	rv   uint64
	Keys []confighash.KeySum // per-key sums, for workloads that read single keys; keyed for a Secret
	// Legacy holds a Secret's plain hashes, as versions before keyed hashes wrote them into the
	// state and workloads; nil for a ConfigMap. They are kept in memory only, so that those
	// values are compared as before and an upgrade restarts nothing that did not change.
	Legacy *legacyHashes
	// rare holds what few configs have (reloader annotations, an invalid content, a UID that is
	// not a UUID); nil for the others, so that a record fits the 160-byte size class.
	rare     *recordRare
	uid      uuidBytes // the UID, unless rare holds it
	Stakater hexSum    // stakater Reloader's hash, to take over without restarts; never written
	// Collaborne is Collaborne kubernetes-reloader's hash, to take over its state entries and
	// variables without restarts (collaborne.go); never written.
	Collaborne hexSum
	// content is the content hash (confighash): plain for a ConfigMap, keyed for a Secret.
	content confighash.Packed
	kind    recordKind
	// created is the creationTimestamp in seconds since 1970 (0: none), as the API server sets it.
	created uint32
}

// recordRare is what a config record holds only for the configs that have it.
type recordRare struct {
	annotations map[string]string // the reloader's annotations the config carries
	// invalid says which key declared by reloader/validate does not parse, and where (never the
	// value); "" when the content is valid or nothing is declared (validate.go).
	invalid string
	uid     *types.UID // a UID that is not a lower-case UUID, as written
	rv      *string    // a resourceVersion that is not a canonical decimal (or none), as written
}

// rareFields returns r.rare, made if r had none.
func (r *Record) rareFields() *recordRare {
	if r.rare == nil {
		r.rare = &recordRare{}
	}
	return r.rare
}

// Annotations are the reloader's annotations the config carries; nil if none.
func (r *Record) Annotations() map[string]string {
	if r.rare == nil {
		return nil
	}
	return r.rare.annotations
}

// Invalid says which declared key of the content does not parse, and where; "" if none.
func (r *Record) Invalid() string {
	if r.rare == nil {
		return ""
	}
	return r.rare.invalid
}

// SetInvalid records what validation found ("" for nothing), making no rare part for "".
func (r *Record) SetInvalid(problem string) {
	if problem != "" || r.rare != nil {
		r.rareFields().invalid = problem
	}
}

// UID is the config's UID as the API server wrote it.
func (r *Record) UID() types.UID {
	if r.rare != nil && r.rare.uid != nil {
		return *r.rare.uid
	}
	return r.uid.UID()
}

// SetUID keeps u as its 16 bytes when it is a lower-case UUID, else as written in the rare part.
func (r *Record) SetUID(u types.UID) {
	if b, ok := uuidOf(u); ok {
		r.uid = b
		return
	}
	r.rareFields().uid = &u
}

// ResourceVersion is the config's resourceVersion as the API server wrote it.
func (r *Record) ResourceVersion() string {
	if r.rare != nil && r.rare.rv != nil {
		return *r.rare.rv
	}
	return strconv.FormatUint(r.rv, 10)
}

// SetResourceVersion keeps v as a number when it reads back the same, else as written in the
// rare part. The API server writes etcd's revisions, numbers; clients must not rely on it, so
// any other form is kept too.
func (r *Record) SetResourceVersion(v string) {
	if n, err := strconv.ParseUint(v, 10, 64); err == nil && strconv.FormatUint(n, 10) == v {
		r.rv = n
		return
	}
	r.rareFields().rv = &v
}

// legacyHashes are a Secret's plain content hash and per-key sums.
type legacyHashes struct {
	Hash hexSum
	Keys []confighash.KeySum
}

// hexSum is a SHA1 written elsewhere as 40 hex characters (stakater's and Collaborne's hashes,
// a Secret's plain hash), kept as its 20 bytes: the string would take a 48-byte allocation and its 16-byte header.
type hexSum [sha1.Size]byte

// sumOfHex reads a hex SHA1 as the confighash functions return it.
func sumOfHex(s string) hexSum {
	var h hexSum
	_, _ = hex.Decode(h[:], []byte(s)) // 40 hex characters: confighash writes them
	return h
}

func (h hexSum) String() string { return hex.EncodeToString(h[:]) }

// recordKind is a record's kind, a byte for policy.KindConfigMap or KindSecret, which it reports
// as its GroupVersionKind: Events name the config through it.
type recordKind uint8

const (
	recordConfigMap recordKind = iota
	recordSecret
)

// kindOfRecord is the recordKind of a config kind (policy.KindConfigMap or KindSecret).
func kindOfRecord(kind string) recordKind {
	if kind == policy.KindSecret {
		return recordSecret
	}
	return recordConfigMap
}

func (k recordKind) String() string {
	if k == recordSecret {
		return policy.KindSecret
	}
	return policy.KindConfigMap
}

func (k recordKind) SetGroupVersionKind(schema.GroupVersionKind) {}

func (k recordKind) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Version: "v1", Kind: k.String()}
}

func (r *Record) GetObjectKind() schema.ObjectKind { return r.kind }

// GetObjectMeta is the record's identity for meta.Accessor (cache keys, indexes, Events): a
// copy, made only when asked.
func (r *Record) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: r.Name, Namespace: r.Namespace(), UID: r.UID(), ResourceVersion: r.ResourceVersion(),
		Annotations: r.Annotations()}
}

// Namespace is the config's namespace.
func (r *Record) Namespace() string { return r.ns.Value() }

// uuidBytes is a UID as its 16 bytes, as the API server makes every UID (a UUID): the text
// would take a 48-byte allocation and its 16-byte header per config.
type uuidBytes [16]byte

// uuidOf reads u as a UUID; ok is false for any form that would not read back the same.
func uuidOf(u types.UID) (b uuidBytes, ok bool) {
	s := string(u)
	// Only the lower-case 8-4-4-4-12 form reads back the same from its bytes.
	if len(s) == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-' && strings.ToLower(s) == s {
		if _, err := hex.Decode(b[:], []byte(s[:8]+s[9:13]+s[14:18]+s[19:23]+s[24:])); err == nil {
			return b, true
		}
	}
	return uuidBytes{}, false
}

// UID writes the bytes back as a UUID.
func (b uuidBytes) UID() types.UID {
	h := hex.EncodeToString(b[:])
	return types.UID(h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:])
}

func (r *Record) DeepCopyObject() runtime.Object {
	c := *r
	if r.rare != nil {
		rare := *r.rare
		rare.annotations = maps.Clone(rare.annotations)
		c.rare = &rare
	}
	c.Keys = append([]confighash.KeySum(nil), r.Keys...)
	if r.Legacy != nil {
		c.Legacy = &legacyHashes{Hash: r.Legacy.Hash, Keys: append([]confighash.KeySum(nil), r.Legacy.Keys...)}
	}
	return &c
}

// lastApplied is kubectl's copy of the whole manifest: for a config it repeats the data, for a
// workload the spec, so the cache never keeps it.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Records is what a config is to the reloader: the record its informer keeps in place of the
// object (hashes, per-key sums, what does not validate) and the values a marker or a state
// entry is compared with (Content, KeyContent in content.go), and the state entries that say a
// content is fully rolled out: it is the one part that writes them, with Tombstones. Its transform also strips workloads before they enter their caches.
type Records struct {
	annotations policy.Annotations
	hashKey     Keyer          // loaded at start (the root's hashkey.go)
	store       *state.Configs // nil in unit tests
	names       entrykeys.Names
	strips      StripNotes // a Baseline notes who runs another content
}

// NewRecords returns the records of configs whose reloader annotations are annotations, hashed
// under the key of hashKey, with their entries in store.
func NewRecords(annotations policy.Annotations, hashKey Keyer, store *state.Configs, names entrykeys.Names, strips StripNotes) *Records {
	return &Records{annotations: annotations, hashKey: hashKey, store: store, names: names, strips: strips}
}

// Keyer gives the key of Secret hashes, once loaded (the root's HashKey).
type Keyer interface {
	Key() confighash.Key
}

// StripNotes is what records tell of the workloads a config entry cannot speak for (reloader/runs/strips.go):
// one that runs another content than the entry's, and one that caught up with it.
type StripNotes interface {
	Remember(w workload.Key, r policy.ConfigRef, value string, keys []string)
	CaughtUp(w workload.Key, r policy.ConfigRef, value string)
}

// FirstSeen records rec's content as config k's entry when the state holds none of it: the
// content its dependents are taken to run, whether it validates or not.
func (rs *Records) FirstSeen(k workload.Key, rec *Record) {
	if _, known := rs.store.Get(rs.names.Config(k)); !known {
		rs.store.Set(rs.names.Config(k), rec.Hash())
	}
}

// Recorded is the content hash config k's entry records, when it has one of a config that
// exists (not a tombstone).
func (rs *Records) Recorded(k workload.Key) (hash string, ok bool) {
	e, known := rs.store.Get(rs.names.Config(k))
	return e.Hash, known && !e.Deleted
}

// EntryHash is the content hash config k's entry records, a tombstone's too ("" in one of a
// config never seen with content), and whether it has an entry.
func (rs *Records) EntryHash(k workload.Key) (hash string, known bool) {
	e, known := rs.store.Get(rs.names.Config(k))
	return e.Hash, known
}

// MarkSpare marks config k's entries spare or not: a full state gives a spare config's room to
// a read one's (state.Configs.SetSpare).
func (rs *Records) MarkSpare(k workload.Key, spare bool) {
	rs.store.SetSpare(rs.names.Config(k), spare)
}

// Unread drops the entry of config k, which exists, and its per-key entries: no workload reads
// it, so none is judged by them.
func (rs *Records) Unread(k workload.Key) {
	skey := rs.names.Config(k)
	if _, known := rs.store.Get(skey); known {
		rs.store.Delete(skey)
	}
}

// Write records rec's content as config k's entry as it is, with no per-key entries: a
// --webhook-url sync, which rolls nothing out, takes every content as current.
func (rs *Records) Write(k workload.Key, rec *Record) {
	rs.store.Set(rs.names.Config(k), rec.Hash())
}

// Transform strips objects before they enter the informer cache, and packs typed workloads
// (workload.Pack): read them through workload.Kind.Cached and List, or workload.Unpacked.
func (rs *Records) Transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		r := rs.newRecord(policy.KindConfigMap, &o.ObjectMeta, confighash.ConfigMap(o))
		r.Keys, r.Stakater = confighash.ConfigMapKeys(o), sumOfHex(confighash.StakaterConfigMap(o))
		r.SetInvalid(validateConfigMap(o))
		r.Collaborne = sumOfHex(confighash.CollaborneConfigMap(o))
		return r, nil
	case *corev1.Secret:
		// Every hash of a Secret that is written is keyed (the root's hashkey.go); stakater's and the
		// legacy plain ones are only compared with what others wrote.
		key := rs.hashKey.Key()
		r := rs.newRecord(policy.KindSecret, &o.ObjectMeta, key.Secret(o))
		r.Keys, r.Stakater = key.SecretKeys(o), sumOfHex(confighash.StakaterSecret(o))
		r.Collaborne = sumOfHex(confighash.CollaborneSecret(o))
		r.Legacy = &legacyHashes{Hash: sumOfHex(confighash.Secret(o)), Keys: confighash.SecretKeys(o)}
		r.SetInvalid(validateSecret(o))
		return r, nil
	case *workload.Packed:
		return o, nil // already in the cache: client-go may transform a cached object again
	}
	if m, ok := obj.(metav1.Object); ok { // workloads and namespaces
		m.SetManagedFields(nil)
		if a := m.GetAnnotations(); a != nil {
			delete(a, lastApplied)
			m.SetAnnotations(a)
		}
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Status = rolloutStatus(o.Status)
		o.Labels, o.Spec.Selector, o.Spec.Strategy = nil, nil, appsv1.DeploymentStrategy{}
		stripTemplate(&o.Spec.Template)
		return workload.Pack(workload.PackDeployment, o), nil
	case *appsv1.StatefulSet:
		s := o.Status
		o.Status, o.Spec.VolumeClaimTemplates = appsv1.StatefulSetStatus{ObservedGeneration: s.ObservedGeneration,
			ReadyReplicas: s.ReadyReplicas, UpdatedReplicas: s.UpdatedReplicas,
			CurrentRevision: s.CurrentRevision, UpdateRevision: s.UpdateRevision}, nil
		o.Labels, o.Spec.Selector = nil, nil
		stripTemplate(&o.Spec.Template)
		return workload.Pack(workload.PackStatefulSet, o), nil
	case *appsv1.DaemonSet:
		s := o.Status
		o.Status = appsv1.DaemonSetStatus{ObservedGeneration: s.ObservedGeneration, DesiredNumberScheduled: s.DesiredNumberScheduled,
			UpdatedNumberScheduled: s.UpdatedNumberScheduled, NumberAvailable: s.NumberAvailable}
		o.Labels, o.Spec.Selector = nil, nil
		stripTemplate(&o.Spec.Template)
		return workload.Pack(workload.PackDaemonSet, o), nil
	case *batchv1.CronJob:
		o.Status = batchv1.CronJobStatus{}
		return workload.Pack(workload.PackCronJob, o), nil
	case *batchv1.Job:
		o.Status = batchv1.JobStatus{} // the template is kept whole: a reload creates a Job from it
		return workload.Pack(workload.PackJob, o), nil
	case *unstructured.Unstructured:
		keepRolloutStatus(o)
	}
	return obj, nil
}

// stripTemplate drops what the reloader never reads of a cached pod template: of each container
// it keeps the name and what references configs (env, envFrom, the names of volume mounts), of
// the pod spec the containers and the volumes that are configs, and no labels. Patches are
// computed from these fields only, and guarded by the names they address. Deployments,
// StatefulSets and DaemonSets are the most numerous objects cached after the configs: with one
// workload per five configs, each byte kept of a workload costs a fifth of a byte per config.
//
// Stripping a stripped template changes nothing: client-go may pass a cached object through the
// transform again (a watch-list start transforms into a temporary store, then replaces the cache
// from it), and a hash of the stripped template would read as another actor's change of it.
func stripTemplate(t *corev1.PodTemplateSpec) {
	whole, stripped := strings.CutPrefix(t.GenerateName, wholeHashPrefix)
	if !stripped {
		whole = policy.TemplateHash(t)
	}
	defer func() { t.GenerateName = wholeHashPrefix + whole }()
	for _, cs := range [][]corev1.Container{t.Spec.Containers, t.Spec.InitContainers} {
		for i, c := range cs {
			cs[i] = corev1.Container{Name: c.Name, Env: c.Env, EnvFrom: c.EnvFrom, VolumeMounts: mountNames(c.VolumeMounts)}
		}
	}
	t.Spec = corev1.PodSpec{Containers: t.Spec.Containers, InitContainers: t.Spec.InitContainers, Volumes: configVolumes(t.Spec.Volumes)}
	t.Labels = nil
}

// wholeHashPrefix marks the hash of the whole pod template, which the cache keeps in the
// stripped template's generateName: a field no pod template uses (pods take their names from
// their controller), so that another actor's change of the template is told from a metadata
// write (reloader/runs/unseen.go) without reading the template from the API server.
const wholeHashPrefix = "reloader-whole-template-"

// WholeTemplateHash is the hash of the whole pod template the cached tmpl was stripped from, or
// of tmpl itself where the cache keeps it whole (an Argo Rollout).
func WholeTemplateHash(tmpl *corev1.PodTemplateSpec) string {
	if h, ok := strings.CutPrefix(tmpl.GenerateName, wholeHashPrefix); ok {
		return h
	}
	return policy.TemplateHash(tmpl)
}

// mountNames keeps the volume name of each mount: policy.ContainerUses matches mounts to volumes
// by it.
func mountNames(ms []corev1.VolumeMount) []corev1.VolumeMount {
	for i, m := range ms {
		ms[i] = corev1.VolumeMount{Name: m.Name}
	}
	return ms
}

// configVolumes keeps the volumes that are ConfigMaps, Secrets or projections of them, with only
// their config sources.
func configVolumes(vs []corev1.Volume) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range vs {
		src := corev1.VolumeSource{ConfigMap: v.ConfigMap, Secret: v.Secret, Projected: v.Projected}
		if src.ConfigMap == nil && src.Secret == nil && src.Projected == nil {
			continue
		}
		out = append(out, corev1.Volume{Name: v.Name, VolumeSource: src})
	}
	return out
}

func (rs *Records) newRecord(kind string, m *metav1.ObjectMeta, hash string) *Record {
	r := NewRecord(kind, m, hash)
	for _, k := range rs.annotations.OnConfig() {
		if v, ok := m.Annotations[k]; ok {
			rare := r.rareFields()
			if rare.annotations == nil {
				rare.annotations = map[string]string{}
			}
			rare.annotations[k] = v
		}
	}
	return r
}

// NewRecord is the record of a config of kind (policy.KindConfigMap or KindSecret) with m's
// identity and content hash, and none of its annotations.
func NewRecord(kind string, m *metav1.ObjectMeta, hash string) *Record {
	// confighash makes only values that pack (TestPackReadsBackEveryValueItAccepts).
	content, _ := confighash.Pack(hash)
	r := &Record{kind: kindOfRecord(kind), Name: m.Name, ns: unique.Make(m.Namespace), content: content}
	r.SetUID(m.UID)
	r.SetResourceVersion(m.ResourceVersion)
	if c := m.CreationTimestamp.Unix(); !m.CreationTimestamp.IsZero() && c > 0 && c <= math.MaxUint32 {
		r.created = uint32(c)
	}
	return r
}

// Created is the config's creationTimestamp, to the second; zero when it has none.
func (r *Record) Created() time.Time {
	if r.created == 0 {
		return time.Time{}
	}
	return time.Unix(int64(r.created), 0)
}

// SameContent reports whether r and o hold the same content hash.
func (r *Record) SameContent(o *Record) bool { return r.content == o.content }

// Hash is the record's content hash; a nil record (a config that does not exist) has none.
func (r *Record) Hash() string {
	if r == nil {
		return ""
	}
	return r.content.String()
}

// rolloutStatus keeps of a Deployment's status what policy.RolloutProgress and
// policy.RollbackStarts read: the counts and the Progressing condition's type, status and reason
// (not its message or times).
func rolloutStatus(s appsv1.DeploymentStatus) appsv1.DeploymentStatus {
	out := appsv1.DeploymentStatus{ObservedGeneration: s.ObservedGeneration, Replicas: s.Replicas,
		UpdatedReplicas: s.UpdatedReplicas, AvailableReplicas: s.AvailableReplicas}
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentProgressing {
			out.Conditions = []appsv1.DeploymentCondition{{Type: c.Type, Status: c.Status, Reason: c.Reason, LastUpdateTime: c.LastUpdateTime}}
		}
	}
	return out
}

// keepRolloutStatus keeps of an Argo Rollout's or DeploymentConfig's status what
// policy.RolloutProgress, policy.OwnerPaused and policy.RollbackStarts read: observedGeneration,
// phase, message, controllerPause, the replica counts, and the conditions' and pause conditions'
// types and reasons.
func keepRolloutStatus(u *unstructured.Unstructured) {
	status, ok := u.Object["status"].(map[string]any)
	if !ok {
		return
	}
	kept := map[string]any{}
	for _, f := range []string{"observedGeneration", "phase", "message", "controllerPause", "replicas", "updatedReplicas"} {
		if v, ok := status[f]; ok {
			kept[f] = v
		}
	}
	if conds, ok := status["conditions"].([]any); ok {
		var slim []any
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok {
				slim = append(slim, map[string]any{"type": m["type"], "status": m["status"], "reason": m["reason"]})
			}
		}
		kept["conditions"] = slim
	}
	if pauses, ok := status["pauseConditions"].([]any); ok {
		var slim []any
		for _, c := range pauses {
			if m, ok := c.(map[string]any); ok {
				slim = append(slim, map[string]any{"reason": m["reason"]})
			}
		}
		kept["pauseConditions"] = slim
	}
	u.Object["status"] = kept
}

// Baseline records a config the state holds nothing comparable for (a first start, a
// corrupt entry, an entry made under a lost hash key) as it is now, though some dependents are
// still due by their markers. The workloads the state judges take it as what they run, and
// restart nothing for it; unrecorded, its next change would find nothing to compare with either
// and be taken as current again, lost for them, for as long as a dependent stays due (a refusal,
// a gate; soak seeds 1795657828041649806@4, a workload listed by a new leader never restarted
// while a closed window held a lagging one, and 1795691391691440064@4, the same under a lost
// key). A dependent the state judges that is due (a stakater variable that lags) is first noted
// as running another content (a strip), so that the entry does not hide its reload, after a
// restart too. An entry that holds the content gains the per-key entries its key readers need
// (keysRolledOut).
func (rs *Records) Baseline(k workload.Key, rec *Record, deps []workload.Dependent) {
	if rec == nil {
		return
	}
	skey := rs.names.Config(k)
	e, known := rs.store.Get(skey)
	switch m := rs.Content(rec, nil).Match(e.Hash); {
	case known && !e.Deleted && m == policy.Same:
		rs.keysRolledOut(skey, rec, deps) // the entry holds this content: so do its keys
		return
	case known && m != policy.OtherKey:
		return
	}
	r := policy.ConfigRef{Kind: k.Kind, Name: k.Name}
	for _, d := range deps {
		if d.Reload && d.ByState {
			rs.strips.Remember(d.Workload, r, policy.UnrecordedContent, d.Keys)
		}
	}
	rs.RolledOut(k, rec, deps)
}

// RolledOut writes a config's content as fully rolled out, with the per-key values its key-level
// dependents need. A Secret's values are keyed, so this also re-records, under the current key,
// what an earlier version wrote plain or what was made under a lost key.
//
// What a dependent without a marker was noted to run (reloader/runs/strips.go), the entry now says too: the
// note goes, and the entry judges the config's later changes.
//
// A change of a config the state knows, whose every dependent's own marker now holds the
// content, goes with the next state write (needed asks for it sooner): that saves a request
// per change, and a crash before that write costs only a restart the reloader could not have
// told apart anyway (a workload created, or its marker removed, while no reloader ran:
// docs/design.md). A first record, a recreation's, and one that re-records a content in
// another form (under the current hash key, as ours after Collaborne's) are written at once.
func (rs *Records) RolledOut(k workload.Key, rec *Record, deps []workload.Dependent) {
	skey := rs.names.Config(k)
	set := rs.store.Set
	if e, known := rs.store.Get(skey); known && !e.Deleted && rs.Content(rec, nil).Match(e.Hash) == policy.Differs && restated(deps) {
		set = rs.store.SetRedundant
	}
	set(skey, rec.Hash())
	r := policy.ConfigRef{Kind: k.Kind, Name: k.Name}
	for _, d := range deps {
		if d.Stripped && !d.Behind {
			rs.strips.CaughtUp(d.Workload, r, d.Change.Value)
		}
	}
	// A per-key entry left from an earlier content would vouch for a key it no longer
	// describes (policy.Content.Undecided relies on it): only this content's entries stay.
	rs.store.KeepDataKeys(skey, rs.keysRolledOut(skey, rec, deps))
}

// keysRolledOut writes the per-key entries of the keys the dependents read, for rec's content,
// which the config's entry skey records as rolled out, and returns their keys. A key reader the
// entry judges needs its key's entry, even while another dependent holds the entry back: one
// never recorded counts as changed (checker seed 13@8: a workload made to read a key while
// another was held restarted for a change of another key).
func (rs *Records) keysRolledOut(skey string, rec *Record, deps []workload.Dependent) map[string]bool {
	read := map[string]bool{}
	for _, d := range deps {
		for _, dk := range d.Keys {
			read[state.KeyOf(skey, dk)] = true
			rs.store.Set(state.KeyOf(skey, dk), rs.KeyContent(rec, dk).Value)
		}
	}
	return read
}

// restated reports whether every dependent's own marker says what it runs of the config.
func restated(deps []workload.Dependent) bool {
	for _, d := range deps {
		if !d.OwnMarker() {
			return false
		}
	}
	return true
}

// Needed has the state write the entries of the configs in ns whose entry, not a marker, says
// what a workload runs of them (refs), if RolledOut left them to a later write: the workload
// is judged by it after a crash too.
func (rs *Records) Needed(ns string, refs []policy.ConfigRef) {
	for _, r := range refs {
		rs.store.Need(rs.names.Config(workload.ConfigKey(r, ns)))
	}
}
