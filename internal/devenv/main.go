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
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/reloader/reloader/internal/testcluster"
)

const namespace = "demo"

func main() {
	reloaderBin := flag.String("reloader", "bin/reloader", "path of the reloader binary")
	sample := flag.String("sample", "testdata/sample.yaml", "manifest applied into namespace "+namespace)
	demo := flag.Bool("demo", false, "edit the ConfigMap, show the rollout, and exit")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *reloaderBin, *sample, *demo); err != nil {
		fmt.Fprintln(os.Stderr, "devenv:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, reloaderBin, sample string, demo bool) error {
	say("starting etcd, kube-apiserver, controller-manager, scheduler and kwok (the first run builds them: a few minutes)")
	begin := time.Now()
	c, err := testcluster.Start(ctx, testcluster.Options{Pods: true, Log: os.Stdout})
	if err != nil {
		return err
	}
	defer c.Stop()
	say("control plane ready in %s; component logs in %s", time.Since(begin).Round(100*time.Millisecond), c.Dir)

	if err := apply(ctx, c, namespace, sample); err != nil {
		return err
	}
	say("applied %s into namespace %s", sample, namespace)
	if err := waitRolledOut(ctx, c.Client(), "web", 1); err != nil {
		return err
	}

	port := "8080"
	if demo {
		port = "0"
	}
	reloader, err := startReloader(reloaderBin, c.Kubeconfig, port)
	if err != nil {
		return err
	}
	defer terminate(reloader)
	if demo {
		return runDemo(ctx, c)
	}
	printHints(c.Kubeconfig, port)
	return waitForExit(ctx, reloader)
}

func say(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}

func startReloader(bin, kubeconfig, port string) (*exec.Cmd, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return nil, fmt.Errorf("locate reloader binary: %w", err)
	}
	cmd := exec.Command(abs, "--kubeconfig", kubeconfig, "--namespace", namespace,
		"--coalesce-period", "2s", "--port", port)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	say("running %s", cmd.String())
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start reloader %s (run `make build`): %w", abs, err)
	}
	return cmd, nil
}

// terminate sends SIGTERM, as Kubernetes does, and waits for the graceful flush.
func terminate(cmd *exec.Cmd) {
	if cmd.ProcessState != nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
}

func printHints(kubeconfig, port string) {
	k := "KUBECONFIG=" + kubeconfig + " kubectl -n " + namespace
	fmt.Printf(`
==> The reloader is running in the foreground. In another terminal:

    # edit the ConfigMap (or the Secret) the Deployment uses
    %[1]s edit configmap app-config
    %[1]s patch configmap app-config --type merge -p '{"data":{"LOG_LEVEL":"debug"}}'

    # watch the rollout it causes
    %[1]s rollout status deployment/web --watch
    %[1]s get replicasets,pods -o wide
    %[1]s get configmap reloader-state -o yaml

    # metrics and health
    curl -s localhost:%[2]s/metrics | grep ^reloader_

Press Ctrl-C to stop the reloader and the control plane.
`, k, port)
}

func waitForExit(ctx context.Context, reloader *exec.Cmd) error {
	exited := make(chan error, 1)
	go func() { exited <- reloader.Wait() }()
	select {
	case <-ctx.Done():
		say("stopping")
		return nil
	case err := <-exited:
		return errors.Join(errors.New("the reloader exited"), err)
	}
}
