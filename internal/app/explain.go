package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/reloader/reloader/internal/cli"
	"github.com/reloader/reloader/internal/kube"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/reloader"
)

// Report is what reloader explain prints: the running reloader it judged with, and the
// explanation of the workload. -o json prints it as it is.
type Report struct {
	Reloader Running `json:"reloader"`
	reloader.Explanation
}

// Running is the reloader whose flags explain judges with.
type Running struct {
	Found     bool       `json:"found"`
	Lease     string     `json:"lease,omitempty"`  // namespace/name of its leader Lease
	Holder    string     `json:"holder,omitempty"` // the Lease's holder identity
	RenewTime *time.Time `json:"renewTime,omitempty"`
	Pod       string     `json:"pod,omitempty"` // namespace/name of the pod whose args were read
	// Flags says where the flags came from: the pod's container args, or explain's own.
	Flags string `json:"flags"`
	// Scope is what the reloader watches, in words; State is its state ConfigMap.
	Scope string   `json:"scope"`
	State string   `json:"state"`
	Notes []string `json:"notes,omitempty"`

	env map[string]string // the pod's container environment, as far as explain knows it
}

// Explain runs reloader explain x, writing its answer to out. It reads only: every request
// that could change the cluster is refused below the clients (dryRunGuard).
func Explain(ctx context.Context, x *cli.Explain, version string, out io.Writer) error {
	kind, name, err := x.WorkloadOf()
	if err != nil {
		return err
	}
	only, err := x.ConfigOf()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	klog.SetSlogLogger(log)
	cfg, ctxNS, err := kubectlConfig(x.Kubeconfig, x.Context)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = x.KubeAPIQPS, x.KubeAPIBurst
	cfg.Wrap(dryRunGuard) // outermost: nothing explain might try is sent
	clients, err := kube.New(cfg)
	if err != nil {
		return fmt.Errorf("build Kubernetes clients: %w", err)
	}
	ns := firstNonEmpty(x.WorkloadNamespace, ctxNS, "default")
	run, flags := findReloader(ctx, clients, x, candidates(x.ReloaderNamespace, ctxNS, ns))
	rep, err := explainWith(ctx, clients, flags, &run, reloader.Query{Kind: kind, Namespace: ns, Name: name, Config: only}, log, version)
	if err != nil {
		return err
	}
	if x.Output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	_, err = io.WriteString(out, text(rep))
	return err
}

// explainWith builds a read-only controller from flags for the workload's namespace, syncs it,
// and explains the workload q names.
func explainWith(ctx context.Context, clients *kube.Clients, flags *cli.Flags, run *Running, q reloader.Query, log *slog.Logger, version string) (Report, error) {
	podNS := ""
	if run.Pod != "" {
		podNS, _, _ = strings.Cut(run.Pod, "/")
	}
	getenv := run.getenv
	if !run.Found {
		getenv, podNS = os.Getenv, firstNonEmpty(os.Getenv("POD_NAMESPACE"), q.Namespace)
	}
	namespaces, stateNSs := flags.ScopeOf(getenv, podNS)
	watchNS, stateNS, listed := namespaces[0], stateNSs[0], namespaces[0] == ""
	for i, n := range namespaces {
		if n == q.Namespace {
			watchNS, stateNS, listed = n, stateNSs[i], true
		}
	}
	run.Scope = scopeWords(namespaces, flags)
	run.State = stateNS + "/" + flags.Configmap
	rep := Report{Reloader: *run}
	if !listed {
		rep.Explanation = reloader.Explanation{Kind: q.Kind, Namespace: q.Namespace, Name: q.Name, Next: reloader.NextNotWatched,
			Decision: fmt.Sprintf("not reloaded: the reloader watches %s, not namespace %q", run.Scope, q.Namespace)}
		return rep, nil
	}
	opts := flags.Options(watchNS, stateNS, log, metrics.New(version))
	opts.DryRun, opts.ListNamespace = true, q.Namespace
	ctrl, err := reloader.New(clients, opts)
	if err != nil {
		return rep, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := ctrl.Observe(ctx); err != nil {
		return rep, err
	}
	if rep.Explanation, err = ctrl.Explainer().Explain(ctx, q); err != nil {
		return rep, err
	}
	return rep, nil
}

// scopeWords says what a reloader with these flags watches.
func scopeWords(namespaces []string, f *cli.Flags) string {
	if namespaces[0] != "" {
		return "namespaces " + strings.Join(namespaces, ", ")
	}
	s := "all namespaces"
	if f.NamespaceSelector != "" {
		s += " matching " + string(f.NamespaceSelector)
	}
	if len(f.NamespacesToIgnore) > 0 {
		s += " but " + strings.Join(f.NamespacesToIgnore, ", ")
	}
	return s
}

// kubectlConfig loads the client configuration as kubectl does: --kubeconfig, else $KUBECONFIG,
// else ~/.kube/config, else the in-cluster ServiceAccount; and the context's namespace.
func kubectlConfig(path, context string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("load the kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("read the kubeconfig context's namespace: %w", err)
	}
	return cfg, ns, nil
}

// candidates are the namespaces where the running reloader is looked for, in order, each once.
func candidates(ns ...string) []string {
	var out []string
	for _, n := range ns {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// findReloader finds the running reloader in the first of namespaces that holds it: the holder
// of its leader Lease, else a running pod labelled app.kubernetes.io/name=reloader; and parses
// its container's args. Without one, explain's own flags are used, and that is said.
func findReloader(ctx context.Context, clients *kube.Clients, x *cli.Explain, namespaces []string) (Running, *cli.Flags) {
	own := func(r Running) (Running, *cli.Flags) {
		r.Found, r.Flags = false, "explain's own flags (no running reloader found, or its args did not parse)"
		return r, &x.Flags
	}
	var r Running
	for _, ns := range namespaces {
		pod, note := leaderPod(ctx, clients, ns, x.LeaderElectionID, &r)
		if note != "" {
			r.Notes = append(r.Notes, note)
		}
		if pod == nil {
			if pod, note = labelledPod(ctx, clients, ns); note != "" {
				r.Notes = append(r.Notes, note)
			}
		}
		if pod == nil {
			continue
		}
		r.Pod = pod.Namespace + "/" + pod.Name
		c := reloaderContainer(pod)
		r.env = containerEnv(pod, c)
		f, err := cli.ParseRunning(c.Args, r.lookupEnv)
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("pod %s: %v", r.Pod, err))
			return own(r)
		}
		r.Found, r.Flags = true, fmt.Sprintf("the args of container %q of pod %s", c.Name, r.Pod)
		return r, f
	}
	r.Notes = append(r.Notes, "looked in namespaces "+strings.Join(namespaces, ", ")+" (--reloader-namespace names another)")
	return own(r)
}

// leaderPod is the pod that holds the Lease name in ns, if any; r gets the Lease's facts.
func leaderPod(ctx context.Context, clients *kube.Clients, ns, name string, r *Running) (*corev1.Pod, string) {
	lease, err := clients.Leases(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, ""
	case err != nil:
		return nil, fmt.Sprintf("Lease %s/%s: %v", ns, name, err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return nil, fmt.Sprintf("Lease %s/%s has no holder: no replica leads", ns, name)
	}
	r.Lease, r.Holder = ns+"/"+name, *lease.Spec.HolderIdentity
	if rt := lease.Spec.RenewTime; rt != nil {
		t := rt.UTC()
		r.RenewTime = &t
	}
	// A holder is "<hostname>_<random>" (leader.NewIdentity); a pod's hostname is its name.
	host := r.Holder
	if i := strings.LastIndex(host, "_"); i > 0 {
		host = host[:i]
	}
	pod, err := getPod(ctx, clients, ns, host)
	if err != nil {
		return nil, fmt.Sprintf("the Lease's holder %s: %v", r.Holder, err)
	}
	return pod, ""
}

// labelledPod is the first running pod in ns labelled app.kubernetes.io/name=reloader.
func labelledPod(ctx context.Context, clients *kube.Clients, ns string) (*corev1.Pod, string) {
	list, err := clients.Dynamic.Resource(podsGVR).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=reloader"})
	if err != nil {
		return nil, fmt.Sprintf("pods of namespace %s: %v", ns, err)
	}
	for _, item := range list.Items {
		var pod corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &pod); err == nil && pod.Status.Phase == corev1.PodRunning {
			return &pod, ""
		}
	}
	return nil, ""
}

func getPod(ctx context.Context, clients *kube.Clients, ns, name string) (*corev1.Pod, error) {
	u, err := clients.Dynamic.Resource(podsGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var pod corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pod); err != nil {
		return nil, fmt.Errorf("decode pod %s/%s: %w", ns, name, err)
	}
	return &pod, nil
}

// reloaderContainer is the pod's container named reloader, else its first.
func reloaderContainer(pod *corev1.Pod) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == "reloader" {
			return &pod.Spec.Containers[i]
		}
	}
	return &pod.Spec.Containers[0]
}

// containerEnv is what the container's environment holds of what explain can know: literal
// values, and the pod's name and namespace from the downward API.
func containerEnv(pod *corev1.Pod, c *corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = pod.Namespace
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = pod.Name
		}
	}
	return env
}

func (r *Running) lookupEnv(k string) (string, bool) {
	v, ok := r.env[k]
	return v, ok
}

func (r *Running) getenv(k string) string { return r.env[k] }

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
