package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/policy"
)

// ErrStale: the patch was computed from a version of the workload that is no longer current
// (the cache has not yet seen our own last write, or someone else wrote). It is retried soon,
// from the newer version.
var ErrStale = errors.New("the workload changed since it was read")

// RetryLater is an error that should be retried only after a while: a refused patch is not
// going to be accepted the next millisecond.
type RetryLater struct{ Err error }

func (e RetryLater) Error() string { return e.Err.Error() }

func (e RetryLater) Unwrap() error { return e.Err }

// WrittenVersion is the resourceVersion a reload's patch wrote ("" when it failed).
func WrittenVersion(out any, err error) string {
	if m, ok := out.(metav1.Object); ok && err == nil {
		return m.GetResourceVersion()
	}
	return ""
}

// Send is the one patch sender: it encodes ops and applies them to w through write (the kind's
// reload, which restarts or runs, or its writeMeta, which never does). A patch computed from a
// version of w that is no longer current, or of an object gone from the cache, is ErrStale.
func Send(ctx context.Context, w View, ops []policy.JSONOp, write func(ctx context.Context, namespace, name string, body []byte) (any, error)) (any, error) {
	body, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encode patch of %s: %w", w.Key, err)
	}
	out, err := write(ctx, w.Key.Namespace, w.Key.Name, body)
	if IsStale(err) || errors.Is(err, ErrStale) {
		return out, ErrStale
	}
	return out, err
}

// IsStale reports a failed test op of our patch (the resourceVersion, or an env entry's name).
// The API server answers a JSON patch that does not apply with a bare 422 whose detail it drops,
// unlike a validation error, which names its causes. Any such patch is recomputed from a fresher
// cache, which is right for both.
func IsStale(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	return s.Code == http.StatusUnprocessableEntity && (s.Details == nil || len(s.Details.Causes) == 0) &&
		strings.HasPrefix(s.Message, "the server rejected our request due to an error in our request")
}

// Refused reports an answer that will not change by itself: forbidden, invalid, denied by
// admission, or over quota.
func Refused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)
}

// RefName names a config in Events and logs: "<Kind>/<name>".
func RefName(r policy.ConfigRef) string { return r.Kind + "/" + r.Name }

// Rolls reports whether a reload of the workload starts a rollout its status tells the end of.
// A CronJob's reload runs a Job and a Job's recreates it; under the OnDelete update strategy a
// template change rolls nothing. Those reloads are not followed.
func Rolls(obj any) bool {
	p, _ := policy.RolloutProgress(obj)
	return p != policy.Untracked
}

// CreatesAnnotations reports whether a patch creates the metadata annotations map.
func CreatesAnnotations(ops []policy.JSONOp) bool {
	for _, op := range ops {
		if op.Path == "/metadata/annotations" {
			return true
		}
	}
	return false
}

// ReasonHeldInvalid is the Warning on a workload held by a config's invalid content.
const ReasonHeldInvalid = "ReloadHeldInvalidConfig"

// Short abbreviates a hash for logs and Events: its first 8 hex digits, of the HMAC for a keyed
// value.
func Short(hash string) string {
	sum := confighash.SumOf(hash)
	return sum[:min(len(sum), 8)]
}
