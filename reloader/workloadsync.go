package reloader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
)

// errStale: the patch was computed from a version of the workload that is no longer current
// (the cache has not yet seen our own last write, or someone else wrote). It is retried soon,
// from the newer version.
var errStale = errors.New("the workload changed since it was read")

// retryLater is an error that should be retried only after a while: a refused patch is not
// going to be accepted the next millisecond.
type retryLater struct{ err error }

func (e retryLater) Error() string { return e.err.Error() }
func (e retryLater) Unwrap() error { return e.err }

// A refused or reverted patch is tried again after refusedRetryMin, doubling up to
// refusedRetryMax: a policy lifted is noticed within seconds, one that stays costs a request
// every half minute.
const (
	refusedRetryMin = 2 * time.Second
	refusedRetryMax = 30 * time.Second
)

// syncWorkload patches, in one patch, every config marker of the workload that differs from
// what the rule wants.
func (c *Controller) syncWorkload(ctx context.Context, kind *workloadKind, k key) error {
	if kind.unfinished != nil {
		if err := kind.unfinished(ctx, k.namespace, k.name); err != nil {
			return err
		}
	}
	obj, exists, err := kind.informer.GetIndexer().GetByKey(k.namespace + "/" + k.name)
	if err != nil || !exists {
		return err
	}
	if kind.resume != nil {
		if err := kind.resume(ctx, obj); err != nil {
			return err
		}
	}
	w, ok := c.rule.view(kind, obj)
	if !ok {
		return nil
	}
	changes, reads := c.dueChanges(w)
	if len(changes) == 0 {
		return c.gates.settle(ctx, w) // gates.go
	}
	// Before the gate, so that no pause period starts for a reload that does not happen.
	if c.validation.holds(w) {
		return nil // validate.go
	}
	// Safe reloads (gates.go): a closed gate holds the reload until it opens.
	g := c.gates.of(w)
	if held, err := c.gates.apply(ctx, w, g, changes); held {
		return err
	}
	if err := c.lag.confirm(ctx, w, changes); err != nil {
		return err // lag.go
	}
	ops, err := w.target.Ops(w.meta, w.tmpl, changes, c.opts.Clock.Now())
	if err != nil || len(ops) == 0 {
		return err
	}
	ops = append(ops, c.gates.ops(w, g)...)
	return c.patch(ctx, w, changes, reads, ops)
}

// dueChanges are the changes the rule asks of the workload, in the order of its candidates, and
// what each existing config it reloads on was judged against (unseen.go).
func (c *Controller) dueChanges(w workloadView) ([]policy.Change, map[policy.ConfigRef]*read) {
	var changes []policy.Change
	reads := map[policy.ConfigRef]*read{}
	for _, r := range c.rule.reloadsOn(w) {
		if !c.caches.watched(r.Kind) {
			continue
		}
		rec := c.caches.lookup(configKey(r, w.key.namespace))
		j, triggers := c.rule.judge(w, r, rec)
		switch {
		case triggers && rec != nil:
			// A config this restart leaves behind its marker (its reload held, or left to the
			// state) is read by the new pods as it is: they run it whatever the marker says.
			reads[r] = &read{value: j.change.Value, keys: j.keys, vouched: j.vouched || j.behind && !j.reload}
		case triggers && policy.Waits(&w.tmpl.Spec, r):
			// Left as it is, or set to the deletion: the pods wait for the config (unseen.go).
			reads[r] = &read{keys: j.keys, absent: true}
		}
		if triggers && j.reload {
			changes = append(changes, j.change)
		}
	}
	return changes, reads
}

func (c *Controller) patch(ctx context.Context, w workloadView, changes []policy.Change, reads map[policy.ConfigRef]*read, ops []policy.JSONOp) error {
	ops, superseded, err := c.tracker.ops(ctx, w, changes, ops)
	if err != nil {
		return err
	}
	// Read before the patch: its own update event may come back, and let the state advance and
	// forget the change, before the call returns.
	since, known := c.changes.oldest(w.key.namespace, changes)
	c.restarts.begin(w.key, reads, c.rule.cachedVersion(w.key.namespace))
	out, err := send(ctx, w, ops, w.kind.patch)
	c.restarts.finished(w.key, writtenVersion(out, err))
	if errors.Is(err, errStale) {
		return errStale
	}
	what := describe(changes)
	if err != nil {
		return c.failed(w, "ReloadFailed", fmt.Sprintf("Reload for %s failed: %v", what, err), err)
	}
	if c.reverted(w, out, changes) {
		err := fmt.Errorf("patch of %s %s/%s was accepted, but the template does not hold the new values: an admission webhook or policy may be reverting it", w.kind.name, w.key.namespace, w.key.name)
		return c.failed(w, "ReloadReverted", fmt.Sprintf("Reload for %s was reverted by the API server; it is retried at least every %s", what, refusedRetryMax), err)
	}
	c.reports.clear(string(w.meta.GetUID()), "ReloadFailed", "ReloadReverted")
	c.gates.release(w)
	if known {
		c.metrics.ObserveReload(w.kind.name, w.key.namespace, since)
	} else {
		c.metrics.CountReload(w.kind.name, metrics.ResultSuccess, w.key.namespace)
	}
	c.reloaded(w, what)
	c.tracker.reloaded(w, changes, superseded)
	c.alertReload(w, changes)
	return nil
}

// writtenVersion is the resourceVersion a reload's patch wrote ("" when it failed).
func writtenVersion(out any, err error) string {
	if m, ok := out.(metav1.Object); ok && err == nil {
		return m.GetResourceVersion()
	}
	return ""
}

// send is the one patch sender: it encodes ops and applies them to w through write (the kind's
// patch, which restarts or runs, or its writeMeta, which never does). A patch computed from a
// version of w that is no longer current, or of an object gone from the cache, is errStale.
func send(ctx context.Context, w workloadView, ops []policy.JSONOp, write func(ctx context.Context, namespace, name string, body []byte) (any, error)) (any, error) {
	body, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encode patch of %s: %w", w.key, err)
	}
	out, err := write(ctx, w.key.namespace, w.key.name, body)
	if isStale(err) || errors.Is(err, errStale) {
		return out, errStale
	}
	return out, err
}

// isStale reports a failed test op of our patch (the resourceVersion, or an env entry's name).
// The API server answers a JSON patch that does not apply with a bare 422 whose detail it drops,
// unlike a validation error, which names its causes. Any such patch is recomputed from a fresher
// cache, which is right for both.
func isStale(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	return s.Code == http.StatusUnprocessableEntity && (s.Details == nil || len(s.Details.Causes) == 0) &&
		strings.HasPrefix(s.Message, "the server rejected our request due to an error in our request")
}

// failed reports a failure once per workload and reason, counts it, and picks when to retry:
// soon for a transient error, later for a refusal.
func (c *Controller) failed(w workloadView, reason, message string, err error) error {
	c.metrics.CountReload(w.kind.name, metrics.ResultFailure, w.key.namespace)
	c.reports.warn(w.obj, string(w.meta.GetUID()), reason, message)
	err = fmt.Errorf("patch %s: %w", w.key, err)
	if reason == "ReloadReverted" || refused(err) {
		return retryLater{err: err}
	}
	return err
}

// refused reports an answer that will not change by itself: forbidden, invalid, denied by
// admission, or over quota.
func refused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)
}

// reverted reports whether the object the patch returned still lacks a change: an admission
// webhook may have undone it.
func (c *Controller) reverted(w workloadView, out any, changes []policy.Change) bool {
	if out == nil {
		return false
	}
	after, ok := c.rule.view(w.kind, out)
	if !ok {
		return false
	}
	for _, ch := range changes {
		m := after.target.Marker(after.meta.GetAnnotations(), after.tmpl, ch.Ref, ch.Value)
		if m == policy.Stale || ch.Value != "" && m != policy.Current {
			return true
		}
	}
	return false
}

// reloaded records a successful patch: the audit Event and a log line. A workload
// whose update strategy is OnDelete restarts nothing on a template change; that is said, not
// hidden.
func (c *Controller) reloaded(w workloadView, what string) {
	c.reports.event(w.obj, corev1.EventTypeNormal, "Reloaded", "Reloaded for "+what)
	c.log.Info("reloaded workload", "kind", w.kind.name, "namespace", w.key.namespace, "name", w.key.name, "configs", what)
	if w.kind.onDelete(w.obj) {
		c.metrics.OnDeleteSkipped.WithLabelValues(w.kind.name).Inc()
		c.reports.event(w.obj, corev1.EventTypeWarning, "ReloadNeedsPodDeletion",
			"The pod template was updated, but the OnDelete update strategy restarts no pod: delete the pods to load the new config")
		c.log.Warn("template updated but OnDelete strategy restarts no pod", "kind", w.kind.name, "namespace", w.key.namespace, "name", w.key.name)
	}
}

// describe names the configs of a reload with their short hashes, in a stable order.
func describe(changes []policy.Change) string {
	parts := make([]string, 0, len(changes))
	for _, ch := range changes {
		v := short(ch.Value)
		if v == "" {
			v = policy.DeletedMarker
		}
		parts = append(parts, fmt.Sprintf("%s/%s (%s)", ch.Ref.Kind, ch.Ref.Name, v))
	}
	return strings.Join(parts, ", ")
}
