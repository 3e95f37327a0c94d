package kube

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// refusingSink answers every call with err.
type refusingSink struct{ err error }

func (s refusingSink) Create(*corev1.Event) (*corev1.Event, error)        { return nil, s.err }
func (s refusingSink) Update(*corev1.Event) (*corev1.Event, error)        { return nil, s.err }
func (s refusingSink) Patch(*corev1.Event, []byte) (*corev1.Event, error) { return nil, s.err }

// A refused Event is dropped as recorded (client-go then logs nothing), and said once; any other
// error still reaches client-go, which retries it.
func TestRefusedEventsAreSaidOnceAndDropped(t *testing.T) {
	var log strings.Builder
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "e", errors.New("rbac"))
	s := NewQuietSink(refusingSink{forbidden}, slog.New(slog.NewTextHandler(&log, nil)))
	e := &corev1.Event{}
	e.Namespace = "ns"
	for range 3 {
		if out, err := s.Create(e); err != nil || out != e {
			t.Fatalf("Create: %v, %v; want the event and no error", out, err)
		}
		if _, err := s.Patch(e, nil); err != nil {
			t.Fatalf("Patch: %v", err)
		}
	}
	if n := strings.Count(log.String(), "Events are refused"); n != 1 {
		t.Fatalf("said %d times, want once:\n%s", n, log.String())
	}
	other := errors.New("connection refused")
	s = NewQuietSink(refusingSink{other}, slog.New(slog.NewTextHandler(&log, nil)))
	if _, err := s.Create(e); !errors.Is(err, other) {
		t.Fatalf("a transient error was hidden: %v", err)
	}
}
