package e2e

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/e2e/checker"
)

// scope is the namespace selection of a sequence over all namespaces (a namespace selector):
// the label that puts the sequence's namespace in it, and the reloader's flags that select it.
type scope struct {
	*env
}

// label is the namespace label the selector of this sequence matches: only its namespace
// ever carries it.
func (s *scope) label() string { return "reloader-checker/" + s.ns }

// args run the reloader over all namespaces, selected by the sequence's label, its state in
// the sequence's namespace. A later --namespace overrides the one launchAs gives.
func (s *scope) args() []string {
	return []string{"--namespace=", "--state-namespace", s.ns, "--namespace-selector", s.label() + "=in"}
}

// set puts the namespace in the selection (in) or takes it out, and records the change.
func (s *scope) set(in bool) error {
	value := "null"
	if in {
		value = `"in"`
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, s.label(), value)
	before := time.Now()
	ns, err := s.cl.Client().CoreV1().Namespaces().Patch(s.ctx, s.ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err == nil {
		s.rec.Scoped(in, before, time.Now(), checker.RVOf(ns))
	}
	return err
}
