// Command devenv is what `make run` and `make demo` start: a local control plane with a fake
// node, the sample workload from testdata/, and the reloader binary in the foreground.
//
// With -demo it also edits the sample ConfigMap, waits for the Deployment to roll, prints a
// summary and exits 0; any failure exits 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/internal/dev/testcluster"
)

const namespace = "demo"

func main() {
	reloaderBin := flag.String("reloader", "bin/reloader", "path of the reloader binary")
	sample := flag.String("sample", "testdata/sample.yaml", "manifest applied into namespace "+namespace)
	demo := flag.Bool("demo", false, "edit the ConfigMap, show the rollout, and exit")
	port := flag.String("port", "8080", "port of the reloader's /metrics and health endpoints (make run PORT=...); the demo picks a free one")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *demo {
		*port = "0"
	}
	if err := run(ctx, *reloaderBin, *sample, *port, *demo); err != nil {
		fmt.Fprintln(os.Stderr, "devenv:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, reloaderBin, sample, port string, demo bool) error {
	if err := checkPortFree(port); err != nil {
		return err
	}
	say("starting etcd, kube-apiserver, controller-manager, scheduler and kwok (the first run builds them: a few minutes)")
	begin := time.Now()
	c, err := testcluster.Start(ctx, testcluster.Options{Pods: true, Log: os.Stdout})
	if err != nil {
		return err
	}
	defer func() { _ = c.Stop() }()
	say("control plane ready in %s; component logs in %s", time.Since(begin).Round(100*time.Millisecond), c.Dir)

	if err := apply(ctx, c, namespace, sample); err != nil {
		return err
	}
	say("applied %s into namespace %s", sample, namespace)
	if err := waitRolledOut(ctx, c.Client(), "web", 1); err != nil {
		return err
	}

	reloader, err := startReloader(reloaderBin, c.Kubeconfig, port)
	if err != nil {
		return err
	}
	defer reloader.terminate()
	if demo {
		return runDemo(ctx, c)
	}
	if err := waitServing(ctx, port, reloader); err != nil {
		return err
	}
	d, err := c.Client().AppsV1().Deployments(namespace).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get deployment web: %w", err)
	}
	fmt.Print(hints(c.Kubeconfig, port, d.Generation))
	return waitForExit(ctx, reloader)
}

// checkPortFree fails early, before the control plane starts, when port is taken.
func checkPortFree(port string) error {
	l, err := net.Listen("tcp", ":"+port)
	if err != nil {
		return fmt.Errorf("port %s is in use; choose another with make run PORT=...: %w", port, err)
	}
	return l.Close()
}

// waitServing waits until the reloader answers /healthz on port, so the hints are printed
// only once the reloader really serves; it fails if the reloader exits first.
func waitServing(ctx context.Context, port string, reloader *process) error {
	url := "http://127.0.0.1:" + port + "/healthz"
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("probe %s: %w", url, err)
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-reloader.done:
			return errors.Join(errors.New("the reloader exited before serving "+url), reloader.err)
		case <-ctx.Done():
			return fmt.Errorf("wait for the reloader to serve %s: %w", url, ctx.Err())
		case <-tick.C:
		}
	}
}

func say(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}

// process is the running reloader; done closes when it has exited, err then says how.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startReloader(bin, kubeconfig, port string) (*process, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return nil, fmt.Errorf("locate reloader binary: %w", err)
	}
	cmd := exec.Command(abs, "--kubeconfig", kubeconfig, "--namespace", namespace,
		"--coalesce-period", "2s", "--port", port)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	say("running %s", cmd.String())
	p, err := start(cmd)
	if err != nil {
		return nil, fmt.Errorf("start reloader %s (run `make build`): %w", abs, err)
	}
	return p, nil
}

func start(cmd *exec.Cmd) (*process, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// terminate sends SIGTERM, as Kubernetes does, and waits for the graceful flush.
func (p *process) terminate() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
}

// hints are the commands to try; the rollout wait first waits for the generation the next
// reload gives the Deployment (generation+1), since rollout status alone reports the old
// ReplicaSet as rolled out while the coalescing period is still running.
func hints(kubeconfig, port string, generation int64) string {
	k := "KUBECONFIG=" + kubeconfig + " kubectl -n " + namespace
	return fmt.Sprintf(`
==> The reloader is running in the foreground. In another terminal:

    # edit the ConfigMap (or the Secret) the Deployment uses
    %[1]s edit configmap app-config
    %[1]s patch configmap app-config --type merge -p '{"data":{"LOG_LEVEL":"debug"}}'

    # wait for the reload it causes (after the 2s coalescing period), then for its rollout
    %[1]s wait deployment/web --for=jsonpath='{.metadata.generation}'=%[3]d --timeout=60s && \
      %[1]s rollout status deployment/web --watch
    %[1]s get replicasets,pods -o wide
    %[1]s get configmap reloader-state -o yaml

    # metrics and health
    curl -s localhost:%[2]s/metrics | grep ^reloader_

Press Ctrl-C to stop the reloader and the control plane.
`, k, port, generation+1)
}

func waitForExit(ctx context.Context, reloader *process) error {
	select {
	case <-ctx.Done():
		say("stopping")
		return nil
	case <-reloader.done:
		return errors.Join(errors.New("the reloader exited"), reloader.err)
	}
}
