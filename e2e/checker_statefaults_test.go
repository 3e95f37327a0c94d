package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/e2e/checker"
	"github.com/reloader/reloader/state"
)

// stateFaults are the faults of the reloader's state: its ConfigMap deleted or an entry
// corrupted, entries, notes and pending runs forged, and the hash key Secret deleted or replaced.
type stateFaults struct {
	*env
	mu sync.Mutex
	// forgedJobs numbers the Jobs forged notes name; outside is a namespace the reloader does
	// not watch (gen 9).
	forgedJobs int
	outside    string
}

// forgedHash is a well-formed content hash of no content any config has (not the 'f's a hold of
// a deletion holds).
var forgedHash = strings.Repeat("e", confighash.PlainLen)

// forge writes action a's forged entry into the state ConfigMap and records it.
func (sf *stateFaults) forge(a checker.Action) error {
	sf.faults["forged "+a.Value]++
	f := checker.Forgery{Kind: a.Value, Config: a.Target, Workload: a.Key}
	var key, value string
	switch a.Value {
	case checker.ForgeUnsigned, checker.ForgeOtherKey, checker.ForgeOutside:
		var err error
		if key, value, err = sf.forgedNote(&f); err != nil {
			return err
		}
	case checker.ForgeEntry:
		key, value = sf.configKey(a.Target), forgedHash
	case checker.ForgeTombstone:
		f.Since = time.Unix(time.Now().Unix()-60, 0)
		key, value = sf.configKey(a.Target), fmt.Sprintf("deleted@%d:%s", f.Since.Unix(), forgedHash)
	case checker.ForgeStrip, checker.ForgeHold:
		l := sf.rec.Workloads.Live(a.Key)
		if l == nil {
			return nil // deleted since the generator drew it
		}
		kind := l.Kind
		prefix, hash := "strip.", forgedHash
		if a.Value == checker.ForgeHold {
			cm, err := sf.cl.Client().CoreV1().ConfigMaps(sf.ns).Get(sf.ctx, a.Target, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil // nothing to hold
			}
			if err != nil {
				return fmt.Errorf("read %s to forge a hold of its content: %w", a.Target, err)
			}
			prefix, hash = "hold.", confighash.ConfigMap(cm)
		}
		key, value = sf.workloadEntryKey(prefix, kind, a.Key, a.Target), hash
	}
	return sf.retry(a.String(), func() error {
		patch, err := json.Marshal(map[string]any{"data": map[string]string{key: value}})
		if err != nil {
			return err
		}
		f.At = time.Now()
		cm, err := sf.cl.Client().CoreV1().ConfigMaps(sf.ns).Patch(sf.ctx, "reloader-state", types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return errNotThere // no state to forge into: the next start begins from nothing anyway
		}
		if err == nil {
			f.RV = checker.RVOf(cm)
			sf.rec.Configs.Forged(f)
		}
		return err
	})
}

// configKey is config name's entry key in the state.
func (sf *stateFaults) configKey(name string) string {
	kind, ns := "ConfigMap", ""
	if checker.IsSecret(name) {
		kind = "Secret"
	}
	if sf.seq.NsSelector {
		ns = sf.ns
	}
	return state.Key(kind, ns, name)
}

// workloadEntryKey is the key of a strip or hold of workload name for ConfigMap config, as
// docs/design.md names it: "<prefix>ConfigMap.<kind>_[<namespace>_]<workload>_<config>".
func (w *env) workloadEntryKey(prefix, kind, name, config string) string {
	if w.seq.NsSelector {
		return fmt.Sprintf("%sConfigMap.%s_%s_%s_%s", prefix, kind, w.ns, name, config)
	}
	return fmt.Sprintf("%sConfigMap.%s_%s_%s", prefix, kind, name, config)
}

// forgedNote is a Job recreation note for a Job that never existed, forged-<n>: with no MAC,
// signed under another key, or signed under the reloader's own key (read from its Secret, as
// anyone who may read it can) for a Job in a namespace the reloader does not watch. Each also
// carries the fields of an unsigned note, which versions before signed notes act on.
func (sf *stateFaults) forgedNote(f *checker.Forgery) (key, value string, err error) {
	sf.mu.Lock()
	sf.forgedJobs++
	f.Job, f.JobNS = fmt.Sprintf("forged-%d", sf.forgedJobs), sf.ns
	sf.mu.Unlock()
	if f.Kind == checker.ForgeOutside {
		f.JobNS = sf.outsideNamespace()
	}
	job := map[string]any{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": f.Job, "namespace": f.JobNS},
		"spec":     map[string]any{"suspend": true, "template": checker.PodTemplate(checker.KindJob, f.Job, nil)}}
	key = "reloader.job-recreation_" + f.JobNS + "_" + f.Job
	body, err := json.Marshal(map[string]any{"oldUID": "none", "job": job})
	if err != nil {
		return "", "", fmt.Errorf("encode a forged note: %w", err)
	}
	note := map[string]any{"oldUID": "none", "job": job, "note": json.RawMessage(body)}
	if f.Kind != checker.ForgeUnsigned {
		secret := make([]byte, 32)
		for i := range secret {
			secret[i] = byte(sf.rnd.IntN(256))
		}
		if f.Kind == checker.ForgeOutside {
			if secret, err = sf.reloaderKey(secret); err != nil {
				return "", "", fmt.Errorf("read the hash key to sign a note: %w", err)
			}
		}
		k, err := confighash.NewKey(secret)
		if err != nil {
			return "", "", fmt.Errorf("the key to sign a note with: %w", err)
		}
		note["mac"] = k.NoteMAC("job-recreation", append([]byte(key+"\x00"), body...))
	}
	b, err := json.Marshal(note)
	return key, string(b), err
}

// outsideNamespace is a namespace of the world's own that the reloader does not watch, made on
// first use.
func (sf *stateFaults) outsideNamespace() string {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if sf.outside == "" {
		sf.outside = sf.cl.NewNamespace(sf.t)
	}
	return sf.outside
}

// forgeRun writes a forged pending-job annotation on CronJob a.Target, naming a Job
// forged-<n> that nothing else creates, and records it as a forgery whose Job must never exist.
func (sf *stateFaults) forgeRun(a checker.Action) error {
	if l := sf.rec.Workloads.Live(a.Target); l == nil || l.Kind != checker.KindCronJob {
		return nil
	}
	sf.mu.Lock()
	sf.forgedJobs++
	f := checker.Forgery{Kind: a.Value, Workload: a.Target, Job: fmt.Sprintf("forged-%d", sf.forgedJobs), JobNS: sf.ns}
	sf.mu.Unlock()
	value := f.Job
	if a.Value == checker.ForgeRunOther {
		mac, err := sf.runMAC(f.Job)
		if err != nil {
			return err
		}
		value += " " + mac
	}
	sf.faults["forged "+a.Value]++
	return sf.retry(a.String(), func() error {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{"reloader/pending-job": value}}})
		if err != nil {
			return err
		}
		f.At = time.Now()
		out, err := sf.workloads(checker.KindCronJob).Patch(sf.ctx, a.Target, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			f.RV = checker.RVOf(out)
			sf.rec.Configs.Forged(f)
		}
		return err
	})
}

// runMAC signs job as the reloader signs a run, under its own key (read from its Secret, as
// anyone who may read it can), for a CronJob UID that is not the target's.
func (sf *stateFaults) runMAC(job string) (string, error) {
	secret, err := sf.reloaderKey(make([]byte, 32))
	if err != nil {
		return "", fmt.Errorf("read the hash key to sign a run: %w", err)
	}
	k, err := confighash.NewKey(secret)
	if err != nil {
		return "", fmt.Errorf("the key to sign a run with: %w", err)
	}
	other := fmt.Sprintf("00000000-0000-0000-0000-%012d", sf.rnd.IntN(1e9))
	return k.NoteMAC("cronjob-run", []byte(other+"\x00"+job)), nil
}

// reloaderKey is the reloader's hash key, read from its Secret as anyone who may read it can,
// or fallback while that Secret is gone (a hashkey action deleted it and no replica has made
// another yet): a forgery is then signed under another key, and must create nothing all the same.
func (sf *stateFaults) reloaderKey(fallback []byte) ([]byte, error) {
	s, err := sf.cl.Client().CoreV1().Secrets(sf.ns).Get(sf.ctx, "reloader-hash-key", metav1.GetOptions{})
	switch {
	case err == nil:
		return s.Data["key"], nil
	case apierrors.IsNotFound(err):
		sf.t.Logf("no hash key Secret: a forgery is signed under another key")
		return fallback, nil
	}
	return nil, err
}

// replaceHashKey deletes the Secret holding the key of Secret hashes and, with replace, creates
// it with another key. Each running replica keeps the key it read at its start; the next start
// reads the new one, or makes one.
func (sf *stateFaults) replaceHashKey(replace bool) error {
	secrets := sf.cl.Client().CoreV1().Secrets(sf.ns)
	err := secrets.Delete(sf.ctx, "reloader-hash-key", metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	sf.rec.KeyLost()
	if !replace {
		return nil
	}
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(sf.rnd.IntN(256))
	}
	yes := true
	_, err = secrets.Create(sf.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "reloader-hash-key"}, Immutable: &yes,
		Data: map[string][]byte{"key": key}}, metav1.CreateOptions{})
	return err
}

// deleteState deletes the state ConfigMap (action a, state-delete).
func (sf *stateFaults) deleteState(a checker.Action) error {
	sf.faults[a.Op]++
	sf.rec.StateDeleted()
	return sf.retry(a.String(), func() error {
		return sf.cl.Client().CoreV1().ConfigMaps(sf.ns).Delete(sf.ctx, "reloader-state", metav1.DeleteOptions{})
	})
}

// corrupt writes what is not a hash as the state's entry for config a.Target (action a,
// state-corrupt).
func (sf *stateFaults) corrupt(a checker.Action) error {
	sf.faults[a.Op]++
	sf.rec.Forget(a.Target)
	kind := "ConfigMap"
	if checker.IsSecret(a.Target) {
		kind = "Secret"
	}
	patch := fmt.Sprintf(`{"data":{"v1.%s_%s":"not a hash"}}`, kind, a.Target)
	return sf.retry(a.String(), func() error {
		_, err := sf.cl.Client().CoreV1().ConfigMaps(sf.ns).Patch(sf.ctx, "reloader-state", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	})
}

// A hashkey action may delete the key Secret before a note-outside forgery (seed 4903@9): the
// executor then signs the note under another key and the sequence goes on, rather than stopping
// on the missing Secret. No reloader runs here: the forgery is only written and recorded.
func TestANoteOutsideForgedWithoutTheHashKeyIsWrittenUnderAnotherKey(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := newWorld(t, ctx, nil, checker.Sequence{Seed: 4903, Gen: 9, Replicas: 1})
	states := w.cl.Client().CoreV1().ConfigMaps(w.ns)
	if _, err := states.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "reloader-state"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.state.forge(checker.Action{Op: "forge", Value: checker.ForgeOutside, Target: "cm-0"}); err != nil {
		t.Fatalf("forge %s without the hash key: %v", checker.ForgeOutside, err)
	}
	notes := w.rec.Configs.ForgedNotes()
	if len(notes) != 1 {
		t.Fatalf("forged notes recorded: %d, want 1", len(notes))
	}
	cm, err := states.Get(ctx, "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var note struct {
		MAC string `json:"mac"`
	}
	if err := json.Unmarshal([]byte(cm.Data["reloader.job-recreation_"+notes[0].JobNS+"_"+notes[0].Job]), &note); err != nil || note.MAC == "" {
		t.Fatalf("the forged note in the state: %v, mac %q, data %v", err, note.MAC, cm.Data)
	}
}
