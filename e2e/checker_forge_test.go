package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/state"
)

// Generator version 9 (issue 48), drawn from a tenth random stream so that versions 1 to 8 keep
// their sequences:
//   - forge: a well-formed entry the reloader did not write, put into the state ConfigMap while a
//     replica is down, so that its next start reads it. Held to what SECURITY.md ("Who can
//     write the state can …") says each kind may make the reloader do: a Job recreation note
//     (unsigned, signed under another key, or signed under the real key for a namespace outside
//     --namespace) nothing; a config entry or a tombstone restart once the workloads that reload
//     on the config, and a tombstone keep those created since its date from a deletion the next
//     start judges by it; a strip restart once the workload it names, if it reloads on the
//     config; a hold keep the workload it names from the content held until the config changes
//     again.
//   - A state ConfigMap deleted under a running reloader, past writeBackWithin with nothing
//     else happening, then a replica down while a config changes: the running reloader must
//     have written the state back from memory, so no excuse of a lost state covers the change
//     (recorder.unknowable).
//   - An owner's `kubectl rollout pause` and resume of a Deployment (checker_ownerpause_test.go).
//   - In a third of the switches from stakater, a config whose stakater variable is cm--2's
//     (checker_fold_test.go).

// How often, after a main action, the tenth stream draws each of its actions.
const forgeEvery, lossEvery, ownerPauseEvery, foldUpdateEvery = 8, 60, 10, 6

// writeBackWithin bounds how long a running reloader takes to write back a state ConfigMap
// deleted under it (docs/design.md, "Repair"): it checks its shards every minute, and skips a
// shard one of its writes reached within the last minute, so an idle deletion waits up to two.
const writeBackWithin = 130 * time.Second

// tenthActions draws gen 9's actions after a main action. They change nothing the other streams
// read (the generator's world, its fresh values), so version 9 without them is version 8.
func (g *generator) tenthActions(s sequence) []action {
	var out []action
	if g.faults && g.tenth.IntN(forgeEvery) == 0 {
		out = append(out, g.forge(s)...)
	}
	if g.faults && g.tenth.IntN(lossEvery) == 0 {
		out = append(out, g.stateLostUnderARunningReloader()...)
	}
	if g.tenth.IntN(ownerPauseEvery) == 0 {
		out = append(out, g.ownerPause()...)
	}
	if s.Fold && g.tenth.IntN(foldUpdateEvery) == 0 {
		out = append(out, action{Op: "update", Target: foldedName, Key: pick(g.tenth, []string{"a", "a", "b"}), Value: pick(g.tenth, values),
			Pause: time.Duration(g.tenth.IntN(400)) * time.Millisecond})
	}
	for i := range out {
		out[i].Tenth = true
	}
	return out
}

// Forged entry kinds.
const (
	forgeUnsigned  = "note-unsigned"  // a Job recreation note with no MAC
	forgeOtherKey  = "note-other-key" // signed under a key that is not the reloader's
	forgeOutside   = "note-outside"   // signed under the reloader's key, for a namespace it does not watch
	forgeEntry     = "entry"          // a config entry holding a hash of no content the config had
	forgeTombstone = "tombstone"      // the same as a tombstone
	forgeStrip     = "strip"          // a strip of a workload for a config it reads, of another hash
	forgeHold      = "hold"           // a hold of a workload on its config's current content
)

// forge draws a replica down and a forged state entry, which its next start reads. Over all
// namespaces, only --namespace bounds which notes are acted on, so a note for another namespace
// is forged under another key instead.
func (g *generator) forge(s sequence) []action {
	a := action{Op: "forge", Value: pick(g.tenth, []string{forgeUnsigned, forgeOtherKey, forgeOutside, forgeEntry, forgeEntry, forgeTombstone, forgeStrip, forgeStrip, forgeHold, forgeHold})}
	if a.Value == forgeOutside && s.NsSelector {
		a.Value = forgeOtherKey
	}
	cms := configNames[:3] // forged config entries are of ConfigMaps: a Secret's hashes are keyed
	switch a.Value {
	case forgeEntry, forgeTombstone:
		a.Target = pick(g.tenth, cms)
	case forgeStrip, forgeHold:
		// A live workload whose template changes in place, and a ConfigMap it reloads on: where
		// a strip or a hold has something to act on.
		var pairs [][2]string
		for _, w := range workloadNames {
			for _, r := range g.refs[w] {
				reloads, _ := triggers(g.modes[w], g.refs[w], r.Config)
				if g.workloads[w] && reloads && slices.Contains(cms, r.Config) && slices.Contains(templateKinds[:3], kindOrDefault(g.kinds[w])) {
					pairs = append(pairs, [2]string{w, r.Config})
				}
			}
		}
		if len(pairs) == 0 {
			a.Value, a.Target = forgeEntry, pick(g.tenth, cms)
			break
		}
		p := pick(g.tenth, pairs)
		a.Key, a.Target = p[0], p[1]
	}
	// Forged while the replica is down: a running reloader writes back its own shard within
	// writeBackWithin, and removes what it did not write.
	a.Pause = time.Duration(g.tenth.IntN(400)) * time.Millisecond
	out := []action{{Op: "down", Dur: time.Duration(1500+g.tenth.IntN(1500)) * time.Millisecond, Pause: time.Duration(100+g.tenth.IntN(200)) * time.Millisecond}, a}
	if a.Value == forgeHold {
		// The hold ends with the config's next change, made while the replica is down, which
		// its workload must take: judged at once, before a later change heals a loss.
		out = append(out, action{Op: "update", Target: a.Target, Key: "a", Value: fmt.Sprint(2000 + g.tenth.IntN(1000)), Pause: g.coalesce + raceMargin}, action{Op: "quiet"})
	}
	return out
}

// stateLostUnderARunningReloader creates a workload reading a config (w-s<n>, a name the other
// streams never draw: it carries no marker, so the state judges it), deletes the state
// ConfigMap, waits past writeBackWithin, then stops a replica for a few seconds and changes the
// config meanwhile: the state the next leader loads must be the one written back, which knows
// the content before the change, so the workload restarts.
func (g *generator) stateLostUnderARunningReloader() []action {
	var live []string
	for _, c := range configNames {
		if g.configs[c] && !g.ignored[c] {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return nil
	}
	c := pick(g.tenth, live)
	g.lossRuns++
	return []action{
		{Op: "create-workload", Target: fmt.Sprintf("w-s%d", g.lossRuns), Mode: modeAuto, Refs: []ref{{Config: c, Whole: true}}, Kind: kindDeployment,
			Pause: time.Duration(2500+g.tenth.IntN(1000)) * time.Millisecond},
		{Op: "state-delete", Pause: writeBackWithin + time.Duration(2000+g.tenth.IntN(1500))*time.Millisecond},
		{Op: "down", Dur: time.Duration(2000+g.tenth.IntN(2000)) * time.Millisecond, Pause: time.Duration(100+g.tenth.IntN(300)) * time.Millisecond},
		// A JSON number no other action writes, valid where key a is validated.
		{Op: "update", Target: c, Key: "a", Value: fmt.Sprint(1000 + g.tenth.IntN(1000)), Pause: time.Duration(g.tenth.IntN(400)) * time.Millisecond},
	}
}

// forgery is a forged state entry, as the oracle holds the reloader to it.
type forgery struct {
	kind     string
	config   string // entries, tombstones, strips, holds
	workload string // strips, holds
	at       time.Time
	rv       int64     // the state ConfigMap's, after the forgery
	since    time.Time // a tombstone's date: when it says the config was deleted
	job      string
	jobNS    string // notes: the Job it names
}

// forgedHash is a well-formed content hash of no content any config has (not the 'f's a hold of
// a deletion holds).
var forgedHash = strings.Repeat("e", confighash.PlainLen)

// forge writes action a's forged entry into the state ConfigMap and records it.
func (w *world) forge(a action) error {
	w.faults["forged "+a.Value]++
	f := forgery{kind: a.Value, config: a.Target, workload: a.Key}
	var key, value string
	switch a.Value {
	case forgeUnsigned, forgeOtherKey, forgeOutside:
		var err error
		if key, value, err = w.forgedNote(&f); err != nil {
			return err
		}
	case forgeEntry:
		key, value = w.configKey(a.Target), forgedHash
	case forgeTombstone:
		f.since = time.Unix(time.Now().Unix()-60, 0)
		key, value = w.configKey(a.Target), fmt.Sprintf("deleted@%d:%s", f.since.Unix(), forgedHash)
	case forgeStrip, forgeHold:
		l := w.rec.live(a.Key)
		if l == nil {
			return nil // deleted since the generator drew it
		}
		kind := l.kind
		prefix, hash := "strip.", forgedHash
		if a.Value == forgeHold {
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
		f.at = time.Now()
		cm, err := w.cl.Client().CoreV1().ConfigMaps(w.ns).Patch(w.ctx, "reloader-state", types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return errNotThere // no state to forge into: the next start begins from nothing anyway
		}
		if err == nil {
			f.rv = rvOf(cm)
			w.rec.forged(f)
		}
		return err
	})
}

// configKey is config name's entry key in the state.
func (w *world) configKey(name string) string {
	kind, ns := "ConfigMap", ""
	if isSecret(name) {
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
func (w *world) forgedNote(f *forgery) (key, value string, err error) {
	w.mu.Lock()
	w.forgedJobs++
	f.job, f.jobNS = fmt.Sprintf("forged-%d", w.forgedJobs), w.ns
	w.mu.Unlock()
	if f.kind == forgeOutside {
		f.jobNS = w.outsideNamespace()
	}
	job := map[string]any{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": f.job, "namespace": f.jobNS},
		"spec":     map[string]any{"suspend": true, "template": podTemplate(kindJob, f.job, nil)}}
	key = "reloader.job-recreation_" + f.jobNS + "_" + f.job
	body, err := json.Marshal(map[string]any{"oldUID": "none", "job": job})
	if err != nil {
		return "", "", fmt.Errorf("encode a forged note: %w", err)
	}
	note := map[string]any{"oldUID": "none", "job": job, "note": json.RawMessage(body)}
	if f.kind != forgeUnsigned {
		secret := make([]byte, 32)
		for i := range secret {
			secret[i] = byte(w.rnd.IntN(256))
		}
		if f.kind == forgeOutside {
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
func (w *world) forgedJobsCreated() []violation {
	var out []violation
	for _, f := range w.rec.forgedNotes() {
		_, err := w.cl.Client().BatchV1().Jobs(f.jobNS).Get(w.ctx, f.job, metav1.GetOptions{})
		if err == nil {
			out = append(out, violation(fmt.Sprintf("forged: Job %s/%s exists, created from a forged note (%s, written at rv %d)", f.jobNS, f.job, f.kind, f.rv)))
		} else if !apierrors.IsNotFound(err) {
			w.t.Logf("read Job %s/%s of a forged note: %v", f.jobNS, f.job, err)
		}
	}
	return out
}

// forged records a forgery.
func (r *recorder) forged(f forgery) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgeries = append(r.forgeries, f)
}

// forgedNotes are the forged Job recreation notes.
func (r *recorder) forgedNotes() []forgery {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []forgery
	for _, f := range r.forgeries {
		if f.job != "" {
			out = append(out, f)
		}
	}
	return out
}

// forgedRestarts are the restarts of w for c a forged entry allows, each as a change a restart
// may take: one per forged entry or tombstone of c, and per forged strip of w for c, made while
// w reloaded on c (SECURITY.md: such an entry restarts once the workloads that reload on the
// config). Never one of a workload that does not reload on c. The caller holds r.mu.
func (r *recorder) forgedRestarts(w *workloadLife, c string) []change {
	var out []change
	for _, f := range r.forgeries {
		if f.config != c || f.kind == forgeHold || f.workload != "" && f.workload != w.name || f.at.Before(w.createdAt) {
			continue
		}
		if ok, _ := triggers(w.modeAt(f.at), w.refsAt(f.at), c); ok {
			out = append(out, change{rv: f.rv, at: f.at, by: "a forged " + f.kind})
		}
	}
	return out
}

// heldByForgery reports whether a forged hold of w on c's content stands: c has not changed
// since it was written (SECURITY.md: a hold keeps the workload from reloading to the content
// held, until the config changes again). The caller holds r.mu.
func (r *recorder) heldByForgery(w *workloadLife, c string) bool {
	es := r.configs[c]
	return slices.ContainsFunc(r.forgeries, func(f forgery) bool {
		return f.kind == forgeHold && f.workload == w.name && f.config == c && f.at.After(w.createdAt) &&
			(len(es) == 0 || es[len(es)-1].at.Before(f.at))
	})
}

// deletionMaskedByForgery reports whether a forged tombstone of c may have kept w from
// restarting for c's deletion (SECURITY.md: a tombstone may keep the workloads the state judges
// from restarting for a change). It holds when c is deleted now; the tombstone came after c's
// last content; no leader ran undisturbed through both it and the deletion, and one began after
// them, so the deletion was judged from the state holding the forgery; and w carries no marker
// of c and was created after the tombstone's date, so by it w never ran c
// (policy.CreatedAfterDeletion). The caller holds r.mu.
func (r *recorder) deletionMaskedByForgery(w *workloadLife, c string) bool {
	es := r.configs[c]
	if len(es) == 0 || es[len(es)-1].exists || markers(&w.tmpl)[c] != "" {
		return false
	}
	var content time.Time // c's last content
	deleted := es[0].at   // the deletion after it
	for i, e := range es {
		if e.exists && i+1 < len(es) {
			content, deleted = e.at, es[i+1].at
		}
	}
	return slices.ContainsFunc(r.forgeries, func(f forgery) bool {
		if f.kind != forgeTombstone || f.config != c || !f.at.After(content) || !w.createdAt.After(f.since) {
			return false
		}
		from, to := f.at, deleted
		if to.Before(from) {
			from, to = to, from
		}
		return r.disturbed(from, to) && slices.ContainsFunc(r.starts, func(s time.Time) bool { return s.After(to) })
	})
}

// modeAt is w's annotation mode at a moment.
func (w *workloadLife) modeAt(at time.Time) string {
	m := w.modes[0].mode
	for _, e := range w.modes[1:] {
		if e.at.After(at) {
			break
		}
		m = e.mode
	}
	return m
}

// unknowable reports whether the state's loss l may have been unknown to the next reloader to
// start: always for a corrupt entry or a tombstone with no hash; for the state ConfigMap
// deleted (or found gone), only if no leader ran undisturbed long enough to write it back from
// memory (writeBackWithin): an outage, an API server restart, a stop or a downtime meanwhile.
// The caller holds r.mu.
func (r *recorder) unknowable(l loss) bool {
	if l.deleted.IsZero() {
		return true
	}
	end := l.deleted.Add(writeBackWithin)
	if !l.at.After(end) {
		end = l.at.Add(writeBackWithin)
	}
	return r.disturbed(l.deleted, end)
}

// disturbed reports whether anything stopped the leader from writing between from and to.
// The caller holds r.mu.
func (r *recorder) disturbed(from, to time.Time) bool {
	if !r.leaderless.IsZero() && r.leaderless.Before(to) {
		return true
	}
	return slices.ContainsFunc(r.blind, func(b [2]time.Time) bool { return b[0].Before(to) && b[1].After(from) }) ||
		slices.ContainsFunc(r.kills, func(k time.Time) bool { return !k.Before(from) && k.Before(to) })
}

// loss is the state losing a config's entry at a moment; deleted, when the loss is the state
// ConfigMap deleted (or found gone), is when it was deleted.
type loss struct {
	at, deleted time.Time
}

// A hashkey action may delete the key Secret before a note-outside forgery (seed 4903@9): the
// executor then signs the note under another key and the sequence goes on, rather than stopping
// on the missing Secret. No reloader runs here: the forgery is only written and recorded.
func TestANoteOutsideForgedWithoutTheHashKeyIsWrittenUnderAnotherKey(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := newWorld(t, ctx, sequence{Seed: 4903, Gen: 9, Replicas: 1})
	states := w.cl.Client().CoreV1().ConfigMaps(w.ns)
	if _, err := states.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "reloader-state"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.forge(action{Op: "forge", Value: forgeOutside, Target: "cm-0"}); err != nil {
		t.Fatalf("forge %s without the hash key: %v", forgeOutside, err)
	}
	notes := w.rec.forgedNotes()
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
	if err := json.Unmarshal([]byte(cm.Data["reloader.job-recreation_"+notes[0].jobNS+"_"+notes[0].job]), &note); err != nil || note.MAC == "" {
		t.Fatalf("the forged note in the state: %v, mac %q, data %v", err, note.MAC, cm.Data)
	}
}

// A tombstone of cm-1 forged while no reloader runs, dated before w-1's creation, then cm-1's
// deletion: the next leader judges the deletion by the forgery, and w-1, without a marker of
// cm-1, was created after it by that date, so it is not restarted (SECURITY.md allows a
// tombstone to keep it from a change; seed 1796182876957345446@10). Not excused: the deletion
// without the forgery (the positive control), a workload created before the forged date, one
// carrying a marker of cm-1, and a leader that ran through the forgery and the deletion.
func TestATombstoneForgedBeforeADeletionMayHideItFromAWorkloadCreatedSinceItsDate(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	marked := podTemplate(kindCronJob, "w-1", nil)
	marked.Spec.Containers[0].Env = append(marked.Spec.Containers[0].Env,
		corev1.EnvVar{Name: policy.EnvVarName(configRef("cm-1")), Value: "0123abcd"})
	for _, tc := range []struct {
		name                       string
		forged, marked, runThrough bool
		createdAt, since           int // w-1's creation, the forged tombstone's date
		lost                       bool
	}{
		{name: "forged", forged: true, createdAt: 3, since: 0},
		{name: "not forged", createdAt: 3, since: 0, lost: true},
		{name: "created before the forged date", forged: true, createdAt: 3, since: 4, lost: true},
		{name: "marked", forged: true, marked: true, createdAt: 3, since: 0, lost: true},
		{name: "a leader ran through", forged: true, runThrough: true, createdAt: 3, since: 0, lost: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(sequence{OnDelete: true})
			r.configs["cm-1"] = []configEvent{
				{rv: 2, at: at(1), exists: true, data: content{"a": "0"}},
				{rv: 20, at: at(20), exists: false},
			}
			w := &workloadLife{kind: kindCronJob, name: "w-1", createdRV: 3, createdAt: at(tc.createdAt),
				refs: []ref{{Config: "cm-1", Optional: true}}, modes: []modeEvent{{mode: modeAuto}}, marks0: map[string]string{}}
			if tc.marked {
				w.tmpl = marked
			}
			r.workloads[types.UID("w-1")] = w
			if tc.forged {
				r.forgeries = []forgery{{kind: forgeTombstone, config: "cm-1", at: at(15), rv: 15, since: at(tc.since)}}
			}
			r.starts = []time.Time{at(0), at(25)}
			if !tc.runThrough {
				r.blind = [][2]time.Time{{at(12), at(25)}}
			}
			if got := len(r.lost()) > 0; got != tc.lost {
				t.Errorf("lost %v, want some %t", r.lost(), tc.lost)
			}
		})
	}
}
