package kube

import (
	"context"
	"log/slog"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
)

// ProbePermissions asks once, at start, for the optional permissions in namespace (empty: all)
// and stateNamespace (Collaborne's Role, seed 002, grants none of them), and says once what the
// reloader does without each. It reports whether Events may be sent. Watching all namespaces, a
// refusal cluster-wide may still leave some namespaces granted by a Role, so Events are sent and
// a refused one is dropped quietly (QuietSink).
func ProbePermissions(ctx context.Context, clients *Clients, namespace, stateNamespace string, log *slog.Logger) (events bool) {
	events = true
	noEvents := "no Events are recorded (Reloaded, ReloadFailed, InvalidAnnotation ...): this log is the only trail; grant create and patch on events for kubectl describe to show them"
	if namespace == "" {
		noEvents = "Events are recorded only in namespaces whose Role grants them; the first refused one is said once, and the refused ones are dropped"
	}
	for _, p := range []struct {
		Permission
		without string
	}{
		{Permission{Verb: "create", Resource: "events", Namespace: namespace}, noEvents},
		{Permission{Verb: "create", Resource: "configmaps", Namespace: stateNamespace},
			"a state ConfigMap that is missing (deleted, or a new shard past 800 KB) cannot be created: writing it fails, is logged and retried until the permission is granted or the ConfigMap is created"},
	} {
		ok, err := clients.Allowed(ctx, p.Permission)
		if err != nil {
			log.Warn("cannot check a permission; assuming it is granted", "permission", p.String(), "err", err)
			continue
		}
		if !ok {
			log.Warn("the reloader lacks a permission; it works without it", "permission", p.String(), "without_it", p.without)
			events = events && (p.Resource != "events" || namespace == "")
		}
	}
	return events
}

// QuietSink records Events through another sink, and turns a refusal into one warning: client-go's
// broadcaster would otherwise log every refused Event as an ERROR of about a kilobyte, at
// every reload. A refused Event is dropped, not retried; any other error is returned.
type QuietSink struct {
	sink record.EventSink
	log  *slog.Logger
	said atomic.Bool
}

// NewQuietSink returns a QuietSink over sink that warns on log.
func NewQuietSink(sink record.EventSink, log *slog.Logger) *QuietSink {
	return &QuietSink{sink: sink, log: log}
}

func (s *QuietSink) Create(e *corev1.Event) (*corev1.Event, error) {
	out, err := s.sink.Create(e)
	return s.check(e, out, err)
}

func (s *QuietSink) Update(e *corev1.Event) (*corev1.Event, error) {
	out, err := s.sink.Update(e)
	return s.check(e, out, err)
}

func (s *QuietSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	out, err := s.sink.Patch(e, data)
	return s.check(e, out, err)
}

func (s *QuietSink) check(e, out *corev1.Event, err error) (*corev1.Event, error) {
	if !apierrors.IsForbidden(err) {
		return out, err
	}
	if s.said.CompareAndSwap(false, true) {
		s.log.Warn("Events are refused: they are dropped from now on, and this log is the only trail; grant create and patch on events",
			"namespace", e.Namespace, "err", err)
	}
	return e, nil
}
