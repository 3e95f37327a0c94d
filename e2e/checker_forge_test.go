package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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

// forgedHash is a well-formed content hash of no content any config has (not the 'f's a hold of
// a deletion holds).
var forgedHash = strings.Repeat("e", confighash.PlainLen)

// forge writes action a's forged entry into the state ConfigMap and records it.
func (w *world) forge(a checker.Action) error {
	w.faults["forged "+a.Value]++
	f := checker.Forgery{Kind: a.Value, Config: a.Target, Workload: a.Key}
	var key, value string
	switch a.Value {
	case checker.ForgeUnsigned, checker.ForgeOtherKey, checker.ForgeOutside:
		var err error
		if key, value, err = w.forgedNote(&f); err != nil {
			return err
		}
	case checker.ForgeEntry:
		key, value = w.configKey(a.Target), forgedHash
	case checker.ForgeTombstone:
		f.Since = time.Unix(time.Now().Unix()-60, 0)
		key, value = w.configKey(a.Target), fmt.Sprintf("deleted@%d:%s", f.Since.Unix(), forgedHash)
	case checker.ForgeStrip, checker.ForgeHold:
		l := w.rec.Workloads.Live(a.Key)
		if l == nil {
			return nil // deleted since the generator drew it
		}
		kind := l.Kind
		prefix, hash := "strip.", forgedHash
		if a.Value == checker.ForgeHold {
			cm, err := w.cl.Client().CoreV1().ConfigMaps(w.ns).Get(w.ctx, a.Target, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil // nothing to hold
			}
			if err != nil {
				return fmt.Errorf("read %s to forge a hold of its content: %w", a.Target, err)
			}
			prefix, hash = "hold.", confighash.ConfigMap(cm)
		}
		key, value = w.workloadEntryKey(prefix, kind, a.Key, a.Target), hash
	}
	return w.retry(a.String(), func() error {
		patch, err := json.Marshal(map[string]any{"data": map[string]string{key: value}})
		if err != nil {
			return err
		}
		f.At = time.Now()
		cm, err := w.cl.Client().CoreV1().ConfigMaps(w.ns).Patch(w.ctx, "reloader-state", types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return errNotThere // no state to forge into: the next start begins from nothing anyway
		}
		if err == nil {
			f.RV = checker.RVOf(cm)
			w.rec.Configs.Forged(f)
		}
		return err
	})
}

// configKey is config name's entry key in the state.
func (w *world) configKey(name string) string {
	kind, ns := "ConfigMap", ""
	if checker.IsSecret(name) {
		kind = "Secret"
	}
	if w.seq.NsSelector {
		ns = w.ns
	}
	return state.Key(kind, ns, name)
}

// workloadEntryKey is the key of a strip or hold of workload name for ConfigMap config, as
// docs/design.md names it: "<prefix>ConfigMap.<kind>_[<namespace>_]<workload>_<config>".
func (w *world) workloadEntryKey(prefix, kind, name, config string) string {
	if w.seq.NsSelector {
		return fmt.Sprintf("%sConfigMap.%s_%s_%s_%s", prefix, kind, w.ns, name, config)
	}
	return fmt.Sprintf("%sConfigMap.%s_%s_%s", prefix, kind, name, config)
}

// forgedNote is a Job recreation note for a Job that never existed, forged-<n>: with no MAC,
// signed under another key, or signed under the reloader's own key (read from its Secret, as
// anyone who may read it can) for a Job in a namespace the reloader does not watch. Each also
// carries the fields of an unsigned note, which versions before signed notes act on.
func (w *world) forgedNote(f *checker.Forgery) (key, value string, err error) {
	w.mu.Lock()
	w.forgedJobs++
	f.Job, f.JobNS = fmt.Sprintf("forged-%d", w.forgedJobs), w.ns
	w.mu.Unlock()
	if f.Kind == checker.ForgeOutside {
		f.JobNS = w.outsideNamespace()
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
			secret[i] = byte(w.rnd.IntN(256))
		}
		if f.Kind == checker.ForgeOutside {
			if secret, err = w.reloaderKey(secret); err != nil {
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
func (w *world) outsideNamespace() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.outside == "" {
		w.outside = w.cl.NewNamespace(w.t)
	}
	return w.outside
}

// forgedJobsCreated lists, as violations, the Jobs that forged notes named and that exist: a
// note the reloader did not write must create nothing.
func (w *world) forgedJobsCreated() []checker.Violation {
	var out []checker.Violation
	for _, f := range w.rec.Configs.ForgedNotes() {
		_, err := w.cl.Client().BatchV1().Jobs(f.JobNS).Get(w.ctx, f.Job, metav1.GetOptions{})
		if err == nil {
			out = append(out, checker.Violation(fmt.Sprintf("forged: Job %s/%s exists, created from a forged note (%s, written at rv %d)", f.JobNS, f.Job, f.Kind, f.RV)))
		} else if !apierrors.IsNotFound(err) {
			w.t.Logf("read Job %s/%s of a forged note: %v", f.JobNS, f.Job, err)
		}
	}
	return out
}

// A hashkey action may delete the key Secret before a note-outside forgery (seed 4903@9): the
// executor then signs the note under another key and the sequence goes on, rather than stopping
// on the missing Secret. No reloader runs here: the forgery is only written and recorded.
func TestANoteOutsideForgedWithoutTheHashKeyIsWrittenUnderAnotherKey(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := newWorld(t, ctx, checker.Sequence{Seed: 4903, Gen: 9, Replicas: 1})
	states := w.cl.Client().CoreV1().ConfigMaps(w.ns)
	if _, err := states.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "reloader-state"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.forge(checker.Action{Op: "forge", Value: checker.ForgeOutside, Target: "cm-0"}); err != nil {
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
