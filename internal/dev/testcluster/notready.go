package testcluster

import (
	"os"
	"path/filepath"
)

// NotReadyWhen is the environment variable that makes a pod fail the way a bad config makes an
// application fail: a container that sets it, and that has another variable holding the same
// value, runs but never becomes Ready. A test sets it to the marker value the reloader will
// write for a config content it calls broken (its hash); the pods of a rollout to that content
// never become Ready, so the Deployment's rollout really fails at its progress deadline.
const NotReadyWhen = "KWOK_NOT_READY_WHEN"

// notReadyStage is a kwok Stage that outweighs kwok's pod-ready stage for those pods: they are
// Running with a container waiting in CrashLoopBackOff, and Ready=False.
const notReadyStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-not-ready-when
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  weight: 1000000
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Pending'
    - key: >-
        [.spec.containers[] | (.env // []) as $e | $e[] | select(.name == "` + NotReadyWhen + `") | .value as $v
        | $e[] | select(.name != "` + NotReadyWhen + `" and $v != null and .value == $v)] | length > 0
      operator: 'In'
      values:
      - 'true'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 1
        state:
          waiting:
            reason: CrashLoopBackOff
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
`

// writeNotReadyStage writes notReadyStage into dir for kwok's --config.
func writeNotReadyStage(dir string) (string, error) {
	path := filepath.Join(dir, "kwok-not-ready-stage.yaml")
	return path, os.WriteFile(path, []byte(notReadyStage), 0o644)
}
