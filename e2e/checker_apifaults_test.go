package e2e

import (
	"context"
	"fmt"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/reloader/reloader/e2e/checker"
)

// apiFaults are the faults of the API server as the reloader sees it: outages (the gate it
// reaches the API server through closes), restarts, and refusals of its writes.
type apiFaults struct {
	*env
	gate *gate

	mu     sync.Mutex
	reopen *time.Timer
	cutAt  time.Time         // when the outage in force began
	lifts  map[string]func() // refusals in force, by workload
	// refusedTill: when each workload's last refusal ends (or ended); the reloader retries a
	// refused patch within refusedRetry of that.
	refusedTill map[string]time.Time
}

// outage cuts the reloaders off the API server for d, in the background.
func (f *apiFaults) outage(d time.Duration) {
	f.faults["outage"]++
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reopen != nil {
		f.reopen.Stop()
	}
	from := time.Now()
	f.cutAt = from
	f.gate.close()
	f.reopen = time.AfterFunc(d, func() {
		f.gate.open.Store(true)
		f.rec.CutOff(from, time.Now())
	})
}

// restart restarts the API server, down for d: everything the reloader missed meanwhile is a
// blind spell.
func (f *apiFaults) restart(d time.Duration) error {
	f.faults["apiserver-restart"]++
	from := time.Now()
	if err := f.cl.RestartAPIServer(f.ctx, d, f.rnd.IntN(2) == 0); err != nil {
		return fmt.Errorf("restart the API server: %w", err)
	}
	f.rec.CutOff(from, time.Now())
	return nil
}

// refuse makes the API server refuse, for d and in the background, through a
// ValidatingAdmissionPolicy, the reloads of workload name: changes of its template, or, for a
// Job, its creation again.
func (f *apiFaults) refuse(name string, d time.Duration, inForce bool) {
	f.faults["refusal"]++
	f.mu.Lock()
	l := f.rec.Workloads.Live(name)
	if f.lifts[name] != nil || l == nil {
		f.mu.Unlock()
		return
	}
	policyName := "refuse-" + f.ns + "-" + name
	rule := admissionv1.Rule{APIGroups: []string{checker.WorkloadKinds[l.Kind].GVR.Group}, APIVersions: []string{"v1"}, Resources: []string{checker.WorkloadKinds[l.Kind].GVR.Resource}}
	other := fmt.Sprintf("object.metadata.namespace != %q || object.metadata.name != %q", f.ns, name)
	op, allowed := admissionv1.Update, other+" || object.spec.template == oldObject.spec.template"
	switch l.Kind {
	case checker.KindCronJob:
		allowed = other + " || object.spec.jobTemplate == oldObject.spec.jobTemplate"
	case checker.KindJob:
		op, allowed = admissionv1.Create, other
	}
	remove, err := f.cl.DenyWrites(f.ctx, policyName, rule, op, allowed, "refused by the checker's admission policy")
	if err != nil {
		f.t.Logf("refusal of %s not put in force: %v", name, err)
	}
	var once sync.Once
	// Lifting retries: the API server may be restarting when the refusal ends.
	lift := func() {
		once.Do(func() {
			_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				return remove(ctx) == nil, nil
			})
		})
	}
	f.lifts[name] = lift
	f.refusedTill[name] = time.Now().Add(d)
	f.mu.Unlock()
	f.t.Cleanup(lift)
	if inForce && err == nil {
		f.waitRefused(l.Kind, name)
	}
	time.AfterFunc(d, func() {
		lift()
		f.mu.Lock()
		delete(f.lifts, name)
		f.mu.Unlock()
	})
}

// waitRefused waits, up to 10 s, until the API server applies the refusal of name's reloads: it
// applies a new policy some time after its creation.
func (f *apiFaults) waitRefused(kind, name string) {
	probe := []byte(`{"spec":{"template":{"metadata":{"annotations":{"checker/probe":"x"}}}}}`)
	if kind == checker.KindCronJob {
		probe = []byte(`{"spec":{"jobTemplate":{"spec":{"template":{"metadata":{"annotations":{"checker/probe":"x"}}}}}}}`)
	}
	dry := []string{metav1.DryRunAll}
	err := wait.PollUntilContextTimeout(f.ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		if kind == checker.KindJob {
			u, _ := checker.NewWorkload(checker.KindJob, name, nil, checker.PodTemplate(checker.KindJob, name, nil))
			_, err = f.workloads(kind).Create(ctx, u, metav1.CreateOptions{DryRun: dry})
		} else {
			_, err = f.workloads(kind).Patch(ctx, name, types.MergePatchType, probe, metav1.PatchOptions{DryRun: dry})
		}
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsNotFound(err), nil
	})
	if err != nil {
		f.t.Logf("refusal of %s not seen in force: %v", name, err)
	}
}

// end ends the outage and the refusals in force: the gate opens and the refusals are lifted.
func (f *apiFaults) end() {
	f.mu.Lock()
	if f.reopen != nil && f.reopen.Stop() {
		f.gate.open.Store(true)
		f.rec.CutOff(f.cutAt, time.Now())
	}
	for name, lift := range f.lifts {
		lift()
		delete(f.lifts, name)
		f.refusedTill[name] = time.Now()
	}
	f.mu.Unlock()
}

// refusedRetry is how long after a refusal ends the reloader retries the refused patch at the
// latest (reloader's refusedRetryMax), with a margin.
const refusedRetry = 31 * time.Second

// retriedBy is when the reloader has retried a patch of workload name that a refusal of the
// checker's refused, if that may still be ahead: a reload explain finds due may be waiting
// for it, so the caller asks again after it. Zero otherwise.
func (f *apiFaults) retriedBy(name string) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	till, ok := f.refusedTill[name]
	if !ok || time.Since(till) > refusedRetry {
		return time.Time{}
	}
	return till.Add(refusedRetry)
}
