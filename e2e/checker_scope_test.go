package e2e

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/e2e/checker"
)

// scopeLabel is the namespace label the selector of this sequence matches: only its namespace
// ever carries it.
func (w *world) scopeLabel() string { return "reloader-checker/" + w.ns }

// scopeArgs run the reloader over all namespaces, selected by the sequence's label, its state in
// the sequence's namespace. A later --namespace overrides the one launchAs gives.
func (w *world) scopeArgs() []string {
	return []string{"--namespace=", "--state-namespace", w.ns, "--namespace-selector", w.scopeLabel() + "=in"}
}

// setScope puts the namespace in the selection (in) or takes it out, and records the change.
func (w *world) setScope(in bool) error {
	value := "null"
	if in {
		value = `"in"`
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, w.scopeLabel(), value)
	before := time.Now()
	ns, err := w.cl.Client().CoreV1().Namespaces().Patch(w.ctx, w.ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err == nil {
		w.rec.Scoped(in, before, time.Now(), checker.RVOf(ns))
	}
	return err
}
