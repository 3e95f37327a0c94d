package reloader_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// noteOf is the Job a recreation note for Job ns/name creates: it reads app-config under the
// marker env, with annotations.
func noteOf(ns, name string, annotations map[string]string, env string) *batchv1.Job {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
		Spec: batchv1.JobSpec{Template: podTemplate(name)}}
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	job.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: cmVar, Value: env}}
	return job
}

// signedNote is the note the reloader whose state and hash key are in stateNS writes down to
// recreate job, replacing the Job of UID oldUID. With legacy, the note also carries the fields
// of an unsigned note as versions before signed notes wrote it, which those versions act on.
func signedNote(t *testing.T, stateNS string, oldUID types.UID, job *batchv1.Job, legacy bool) (key, value string) {
	t.Helper()
	s, err := cluster.Client().CoreV1().Secrets(stateNS).Get(context.Background(), reloader.DefaultHashKeySecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key, value, err = reloader.SignedJobNote(s, oldUID, job)
	if err != nil {
		t.Fatal(err)
	}
	if legacy {
		value = withLegacyFields(t, value, oldUID, job)
	}
	return key, value
}

// withLegacyFields adds to a note the fields of an unsigned one (oldUID, job).
func withLegacyFields(t *testing.T, value string, oldUID types.UID, job *batchv1.Job) string {
	t.Helper()
	var fields map[string]any
	if err := json.Unmarshal([]byte(value), &fields); err != nil {
		t.Fatal(err)
	}
	fields["oldUID"], fields["job"] = oldUID, job
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// unsignedNote is a note as versions before signed notes wrote it, with no MAC.
func unsignedNote(t *testing.T, oldUID types.UID, job *batchv1.Job) (key, value string) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"oldUID": oldUID, "job": job})
	if err != nil {
		t.Fatal(err)
	}
	return "reloader.job-recreation_" + job.Namespace + "_" + job.Name, string(b)
}

// deletedJob creates Job name reading app-config, then deletes it, as a reloader does before it
// creates it again; it returns the Job deleted.
func deletedJob(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	j := createJob(t, ns, name, named("configmap", "app-config"))
	background := metav1.DeletePropagationBackground
	if err := cluster.Client().BatchV1().Jobs(ns).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	return j
}

func jobExists(t *testing.T, ns, name string) bool {
	t.Helper()
	_, err := cluster.Client().BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// wantNotesDropped waits for n Warnings of dropped notes on the state ConfigMap of ns, and
// fails unless no note is left written down and the log says each once.
func wantNotesDropped(t *testing.T, r *running, ns string, n int) {
	t.Helper()
	waitFor(t, 10*time.Second, "the Warnings of dropped notes", func() (bool, error) {
		return countEvents(t, ns, "reloader-state", reloader.ReasonJobNoteDropped) >= n, nil
	})
	settle(t)
	if got := countEvents(t, ns, "reloader-state", reloader.ReasonJobNoteDropped); got != n {
		t.Errorf("%d Warnings of dropped notes, want %d", got, n)
	}
	if got := strings.Count(r.log.String(), "dropped a Job recreation written down in the state"); got != n {
		t.Errorf("the log says %d notes dropped, want %d", got, n)
	}
	if notes := stateValues(t, ns, "reloader.job-recreation_"); len(notes) != 0 {
		t.Errorf("notes still written down after the start: %v", notes)
	}
}

// A Job recreation note that the reloader did not write (anyone who may patch the state may
// add one) creates no Job at the next start: one with no MAC, as earlier versions wrote them,
// and one whose MAC another key made are dropped, each with one Warning. A note the reloader
// wrote before a stop between its delete and its create is finished in the same start (the
// positive control).
func TestAForgedJobNoteCreatesNoJob(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	first := startController(t, ns, controllerOpts{})
	settle(t)
	first.stop(t)
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})

	gone := deletedJob(t, ns, "gone")
	key, value := signedNote(t, ns, gone.UID, noteOf(ns, "gone", gone.Annotations, hash), false)
	setStateEntry(t, ns, key, value)
	key, value = unsignedNote(t, "none", noteOf(ns, "planted", nil, "x"))
	setStateEntry(t, ns, key, value)
	other := &corev1.Secret{Data: map[string][]byte{reloader.HashKeyField: []byte(strings.Repeat("k", 32))}}
	edited := noteOf(ns, "edited", nil, "x")
	key, value, err := reloader.SignedJobNote(other, "none", edited)
	if err != nil {
		t.Fatal(err)
	}
	setStateEntry(t, ns, key, withLegacyFields(t, value, "none", edited))

	second := startController(t, ns, controllerOpts{}) // ready once the notes are acted on
	settle(t)
	for _, name := range []string{"planted", "edited"} {
		if jobExists(t, ns, name) {
			t.Errorf("Job %s was created from a note the reloader did not write", name)
		}
	}
	if created := jobNow(ns, "gone"); created.UID == "" || created.UID == gone.UID || jobEnv(created, cmVar) != hash {
		t.Errorf("Job gone: UID %q (was %s), marker %q; want it created again with %q", created.UID, gone.UID, jobEnv(created, cmVar), hash)
	}
	wantNotesDropped(t, second, ns, 2)
}

// A note the reloader's own key signed, but for a Job in a namespace it does not watch (moved
// from another installation's state, or written under --namespace before it changed), creates
// nothing there: it is dropped with one Warning. The same note for its own namespace creates the
// Job (the positive control).
func TestAJobNoteForAnUnwatchedNamespaceCreatesNothing(t *testing.T) {
	t.Parallel()
	ns, outside := cluster.NewNamespace(t), cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
	createConfigMap(t, outside, "app-config", map[string]string{"v": "A"})
	first := startController(t, ns, controllerOpts{})
	settle(t)
	first.stop(t)

	in, out := deletedJob(t, ns, "run"), deletedJob(t, outside, "run")
	key, value := signedNote(t, ns, in.UID, noteOf(ns, "run", in.Annotations, "x"), false)
	setStateEntry(t, ns, key, value)
	key, value = signedNote(t, ns, out.UID, noteOf(outside, "run", out.Annotations, "x"), true)
	setStateEntry(t, ns, key, value)

	second := startController(t, ns, controllerOpts{}) // ready once the notes are acted on
	settle(t)
	if jobExists(t, outside, "run") {
		t.Error("a Job was created in a namespace the reloader does not watch")
	}
	if !jobExists(t, ns, "run") {
		t.Error("the note for the watched namespace created no Job")
	}
	wantNotesDropped(t, second, ns, 1)
}

// selectedNamespace is a new namespace, labelled in, and the options of a reloader that watches
// all namespaces selected by that label.
func selectedNamespace(t *testing.T) (ns string, in map[string]string, o controllerOpts) {
	t.Helper()
	ns = cluster.NewNamespace(t)
	in = map[string]string{"reloader-test": ns}
	labelNamespace(t, ns, in)
	return ns, in, controllerOpts{tweak: func(o *reloader.Options) {
		o.Namespace = ""
		o.NamespaceSelector = labels.SelectorFromSet(in)
	}}
}

// A Job that the running reloader deleted to create again, whose create is refused, is created
// once the refusal lifts even though its namespace left --namespace-selector meanwhile: the
// reloader deleted it, so it finishes what it started. One more change after the namespace came
// back recreates it once more (the positive control).
func aJobRecreationIsFinishedAfterItsNamespaceLeavesTheSelection(t *testing.T) {
	ns, in, selected := selectedNamespace(t)
	_, hash, lift, created := refuseARecreation(t, ns, selected)
	labelNamespace(t, ns, nil)
	lift()
	wantMigrateCreated(t, ns, hash, 45*time.Second, created, 1, "the Job was created %d times once its create was allowed, want 1")
	labelNamespace(t, ns, in)
	hash = updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
	wantMigrateCreated(t, ns, hash, 30*time.Second, created, 2, "the Job was created %d times after one more change, want 2")
}

// otherHash is a well-formed content hash that no content of the tests has.
var otherHash = strings.Repeat("f", 40)

// A forged state entry of each kind the reloader reads can make it restart only workloads that
// reload on the config it names, in the namespace it watches, or hold back a reload: never a
// workload that is not annotated (plain, which reads the config too), and it creates nothing.
// control reloads on the config and has no forged entry of its own. A change after the start
// reloads annotated and control once more and plain never (the positive control: the reloader
// works past the forgery).
func TestAForgedStateEntryRestartsOnlyWorkloadsThatReloadOnItsConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// changed: app-config changed while the reloader was stopped; hash is its content.
		changed bool
		forge   func(hash string) map[string]string
		// reloads at the start of annotated, control and plain.
		annotated, control int64
	}{
		{"config entry", false, func(string) map[string]string {
			return map[string]string{"v1.ConfigMap_app-config": otherHash}
		}, 1, 1},
		{"tombstone", false, func(string) map[string]string {
			return map[string]string{"v1.ConfigMap_app-config": fmt.Sprintf("deleted@%d:%s", time.Now().Unix()-60, otherHash)}
		}, 1, 1},
		{"strip", false, func(string) map[string]string {
			return map[string]string{"strip.ConfigMap.Deployment_annotated_app-config": otherHash,
				"strip.ConfigMap.Deployment_plain_app-config": otherHash}
		}, 1, 0},
		{"hold", true, func(hash string) map[string]string {
			return map[string]string{"hold.ConfigMap.Deployment_annotated_app-config": hash,
				"hold.ConfigMap.Deployment_plain_app-config": hash}
		}, 0, 1},
		{"pending", false, func(string) map[string]string {
			since := fmt.Sprintf("pending@%d", time.Now().Unix()-60)
			return map[string]string{"pending.Deployment_annotated": since, "pending.Deployment_plain": since}
		}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := cluster.NewNamespace(t)
			createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
			gen := map[string]int64{}
			for _, name := range []string{"annotated", "control", "plain"} {
				var annotations map[string]string
				if name != "plain" {
					annotations = named("configmap", "app-config")
				}
				gen[name] = createDeployment(t, ns, name, 0, annotations, envFromCM("app-config")).Generation
			}
			first := startController(t, ns, controllerOpts{})
			settle(t)
			first.stop(t)
			hash := ""
			if tc.changed {
				hash = updateConfigMap(t, ns, "app-config", map[string]string{"v": "B"})
			}
			for k, v := range tc.forge(hash) {
				setStateEntry(t, ns, k, v)
			}
			startController(t, ns, controllerOpts{})
			wantReloads(t, ns, "annotated", gen["annotated"], tc.annotated)
			wantReloads(t, ns, "control", gen["control"], tc.control)
			wantReloads(t, ns, "plain", gen["plain"], 0)
			if jobs, err := cluster.Client().BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{}); err != nil || len(jobs.Items) != 0 {
				t.Fatalf("Jobs in the namespace: %v, %v; want none", jobs, err)
			}

			hash = updateConfigMap(t, ns, "app-config", map[string]string{"v": "C"})
			waitEnv(t, ns, "annotated", cmVar, hash)
			waitEnv(t, ns, "control", cmVar, hash)
			wantReloads(t, ns, "annotated", gen["annotated"], tc.annotated+1)
			wantReloads(t, ns, "control", gen["control"], tc.control+1)
			wantReloads(t, ns, "plain", gen["plain"], 0)
		})
	}
}

// A strip forged while a reloader runs is not read by it: it judges by the strips it holds in
// memory, restarts nothing, and its next check of the shard writes the forgery away. Until then
// explain, which reads the state as a reloader started now does, says the workload reloads for
// it, and a reloader started then does restart it once, as SECURITY.md allows a strip: explain
// cannot tell a forged strip from the running reloader's own (docs/explain.md).
func TestAStripForgedUnderARunningReloaderRestartsNothingUntilAStartReadsIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		check time.Duration // the running reloader's StateCheckPeriod; 0: the tests' 2 s
	}{{"written away by the running reloader", 0}, {"read by the next start", time.Hour}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := cluster.NewNamespace(t)
			createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
			gen := createDeployment(t, ns, "web", 0, named("configmap", "app-config"), envFromCM("app-config")).Generation
			opts := controllerOpts{}
			if tc.check > 0 {
				opts.tweak = func(o *reloader.Options) { o.StateCheckPeriod = tc.check }
			}
			r := startController(t, ns, opts)
			settle(t)
			key := "strip.ConfigMap.Deployment_web_app-config"
			setStateEntry(t, ns, key, otherHash)
			done := configSyncs(t, r)
			touchConfigMap(t, ns, "app-config") // web is judged again, by the running reloader
			judgedAfter(t, r, done, "app-config touched")
			wantReloads(t, ns, "web", gen, 0)
			if tc.check == 0 {
				waitFor(t, 30*time.Second, "the forged strip written away", func() (bool, error) {
					_, ok := storedState(t, ns)[key]
					return !ok, nil
				})
				if e := explainNow(t, ns, "Deployment", "web", nil, nil); e.Next != "up-to-date" {
					t.Fatalf("explain after the write-back: %q, %s; want up-to-date", e.Next, e.Decision)
				}
				wantReloads(t, ns, "web", gen, 0)
				return
			}
			e := explainNow(t, ns, "Deployment", "web", nil, nil)
			if c := configOf(t, e, "ConfigMap", "app-config"); e.Next != "reload" || c.Why != policy.StripStale.String() {
				t.Fatalf("explain with the forged strip in the state: %q, why %q; want reload, for the strip", e.Next, c.Why)
			}
			r.stop(t)
			agrees(t, ns, "Deployment", "web", e) // a start reads the strip and restarts web
			wantReloads(t, ns, "web", gen, 1)
		})
	}
}

// Forged state entries that name a namespace outside --namespace-selector act on nothing there:
// a tombstone of its config, a strip and a pending entry of its annotated Deployment restart
// nothing, and its config's change, once the state is read, reloads nothing either. The same
// strip in the selected namespace restarts its Deployment (the positive control).
func forgedStateEntriesForAnUnselectedNamespaceActOnNothing(t *testing.T) {
	stateNS, in, out := cluster.NewNamespace(t), cluster.NewNamespace(t), cluster.NewNamespace(t)
	labelNamespace(t, in, map[string]string{"reloader-test": in})
	gen := map[string]int64{}
	for _, ns := range []string{in, out} {
		createConfigMap(t, ns, "app-config", map[string]string{"v": "A"})
		gen[ns] = createDeployment(t, ns, "web", 0, named("configmap", "app-config"), envFromCM("app-config")).Generation
	}
	selected := controllerOpts{tweak: func(o *reloader.Options) {
		o.Namespace = ""
		o.NamespaceSelector = labels.SelectorFromSet(labels.Set{"reloader-test": in})
	}}
	first := startController(t, stateNS, selected)
	settle(t)
	first.stop(t)
	for k, v := range map[string]string{
		"strip.ConfigMap.Deployment_" + in + "_web_app-config":  otherHash,
		"v1.ConfigMap_" + out + "_app-config":                   fmt.Sprintf("deleted@%d:%s", time.Now().Unix()-60, otherHash),
		"strip.ConfigMap.Deployment_" + out + "_web_app-config": otherHash,
		"pending.Deployment_" + out + "_web":                    fmt.Sprintf("pending@%d", time.Now().Unix()-60),
	} {
		setStateEntry(t, stateNS, k, v)
	}
	startController(t, stateNS, selected)
	wantReloads(t, in, "web", gen[in], 1)
	updateConfigMap(t, out, "app-config", map[string]string{"v": "B"})
	settle(t)
	wantReloads(t, out, "web", gen[out], 0)
}
