package reloader

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/reloader/jobs"
)

// SignedJobNote is the state entry (key and value) that a reloader whose hash key Secret is s
// writes down before it deletes the Job of UID oldUID to create job in its place.
func SignedJobNote(s *corev1.Secret, oldUID types.UID, job *batchv1.Job) (key, value string, err error) {
	k, err := HashKeyOf(s)
	if err != nil {
		return "", "", err
	}
	key, value, err = jobs.SignedNote(k, oldUID, job)
	return key, value, err
}

// ReasonJobNoteDropped is the reason of the Warning on the state ConfigMap of a note dropped.
const ReasonJobNoteDropped = jobs.ReasonJobNoteDropped

// RecordedRun is the value of reloader/pending-job with which a reloader whose hash key is k
// records that its reload of cj is to run Job job.
func RecordedRun(k confighash.Key, cj *batchv1.CronJob, job string) string {
	return jobs.RunKey(func() confighash.Key { return k }).Record(cj, job)
}

// ReasonPendingJobDropped is the reason of the Warning on a CronJob whose recorded run is not
// started.
const ReasonPendingJobDropped = jobs.ReasonPendingJobDropped
