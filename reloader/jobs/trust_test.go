package jobs

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/confighash"
)

// testNoteKey signs the notes of the in-process tests.
var testNoteKey, _ = confighash.NewKey(bytes.Repeat([]byte{7}, confighash.MinKeyLen))

// A Job recreation note is acted on only when this reloader wrote it: its MAC verifies under the
// hash key, over its key and its exact bytes, and its Job is the one its key names, in a
// namespace this reloader may act in. Anything else is dropped with its reason.
func TestOnlyAJobNoteThisReloaderWroteForItsScopeIsTrusted(t *testing.T) {
	f := newJobsFixture()
	job := func(ns, name string) *jobRecreation {
		return &jobRecreation{OldUID: "gone", Job: &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
	}
	signed := func(key string, r *jobRecreation) string {
		v, err := f.j.encode(key, r)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	genuine := signed(jobRecreationKey("ns", "run"), job("ns", "run"))
	other, _ := confighash.NewKey(bytes.Repeat([]byte{8}, confighash.MinKeyLen))
	underOther := func() string {
		body, _ := json.Marshal(job("ns", "run"))
		b, _ := json.Marshal(jobNote{Note: body, MAC: other.NoteMAC(jobNotePurpose, noteSigned(jobRecreationKey("ns", "run"), body))})
		return string(b)
	}()
	old, _ := json.Marshal(job("ns", "run")) // as versions before signed notes wrote it
	for _, tc := range []struct {
		name, key, value, why string
	}{
		{"genuine", jobRecreationKey("ns", "run"), genuine, ""},
		{"unsigned, as an earlier version wrote it", jobRecreationKey("ns", "run"), string(old), "no MAC"},
		{"not JSON", jobRecreationKey("ns", "run"), "{not json", "no MAC"},
		{"its Job edited", jobRecreationKey("ns", "run"), strings.Replace(genuine, `"gone"`, `"went"`, 1), "does not verify"},
		{"its MAC edited", jobRecreationKey("ns", "run"), editMAC(t, genuine), "does not verify"},
		{"moved under another key", jobRecreationKey("ns", "other"), genuine, "does not verify"},
		{"signed under another hash key", jobRecreationKey("ns", "run"), underOther, "another hash key"},
		{"its key naming another Job", jobRecreationKey("ns", "x"), signed(jobRecreationKey("ns", "x"), job("ns", "run")), "does not name its Job"},
		{"outside the scope", jobRecreationKey("elsewhere", "run"), signed(jobRecreationKey("elsewhere", "run"), job("elsewhere", "run")), "not one this reloader watches"},
		{"signed, without a Job", jobRecreationKey("ns", "run"), signed(jobRecreationKey("ns", "run"), &jobRecreation{OldUID: "gone"}), "unreadable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, why := f.j.trusted(tc.key, tc.value)
			switch {
			case tc.why == "" && (why != "" || r.Job == nil || r.Job.Name != "run" || r.OldUID != "gone"):
				t.Fatalf("trusted: %+v, %q; want the note as written", r, why)
			case tc.why != "" && !strings.Contains(why, tc.why):
				t.Fatalf("trusted: why %q, want it to say %q", why, tc.why)
			}
		})
	}
}

// editMAC changes the last digit of a stored note's MAC.
func editMAC(t *testing.T, v string) string {
	var n jobNote
	if err := json.Unmarshal([]byte(v), &n); err != nil {
		t.Fatal(err)
	}
	last := "0"
	if strings.HasSuffix(n.MAC, "0") {
		last = "1"
	}
	n.MAC = n.MAC[:len(n.MAC)-1] + last
	b, _ := json.Marshal(n)
	return string(b)
}
