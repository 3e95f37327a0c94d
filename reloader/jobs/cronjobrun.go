package jobs

import (
	"log/slog"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/reloader/internal/report"
)

// The Job a CronJob's reload runs is named in the CronJob's PendingAnnotation until it
// exists. Whoever may patch a CronJob may write that annotation, on any CronJob, watched or
// not; so its value carries a MAC under the hash key's note sub-key for runs
// (confighash.NoteMAC) over the CronJob's UID and the Job's name, "<job> <mac>". Only a run
// this reloader recorded is started; any other value starts nothing and is removed, said once.

// cronRunPurpose names the sub-key of the hash key that recorded runs are signed with.
const cronRunPurpose = "cronjob-run"

// ReasonPendingJobDropped is the Warning, on the CronJob, of a recorded run not started.
const ReasonPendingJobDropped = "PendingJobDropped"

// RunKey is the key recorded runs and Job recreation notes are signed with (the reloader's
// HashKey.noteKey).
type RunKey func() confighash.Key

func runSigned(cj *batchv1.CronJob, job string) []byte {
	return []byte(string(cj.UID) + "\x00" + job)
}

// Record is the annotation's value naming job, the run of a reload of cj.
func (k RunKey) Record(cj *batchv1.CronJob, job string) string {
	return job + " " + k().NoteMAC(cronRunPurpose, runSigned(cj, job))
}

// recorded is the Job the annotation's value v names, or why it is not one this reloader
// recorded for cj (a value without a MAC was written by hand, by another actor, or by a version
// before runs were signed).
func (k RunKey) recorded(cj *batchv1.CronJob, v string) (job, why string) {
	job, mac, found := strings.Cut(v, " ")
	if !found || mac == "" {
		return "", "it carries no MAC"
	}
	switch ok, other := k().VerifyNote(cronRunPurpose, runSigned(cj, job), mac); {
	case other:
		return "", "its MAC names another hash key"
	case !ok:
		return "", "its MAC does not verify for this CronJob"
	}
	return job, ""
}

// DroppedRun: a CronJob's recorded run that is not started (RunKey.recorded), its annotation
// removed.
type DroppedRun struct{ why string }

func (e DroppedRun) Error() string {
	return "not started: " + e.why
}

// Tell says, once (the annotation is gone), that the recorded run of CronJob obj was not started.
func (d DroppedRun) Tell(obj any, reports *report.Reporter, log *slog.Logger) {
	cj := obj.(*batchv1.CronJob)
	log.Error("dropped a Job run recorded on a CronJob: no Job is created for it", "namespace", cj.Namespace,
		"name", cj.Name, "annotation", PendingAnnotation, "reason", d.why)
	reports.Event(cj, corev1.EventTypeWarning, ReasonPendingJobDropped,
		"Removed "+PendingAnnotation+", no Job created: "+d.why+" (written by someone other than this reloader)")
}
