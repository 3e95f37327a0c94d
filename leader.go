package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"reloader/metrics"
)

// election runs the controller only while this replica holds the Lease.
//
// client-go's elector releases the Lease as soon as its context ends, without waiting for the
// leader's work to stop. So SIGTERM stops the controller first (flushing pending reloads while
// still holding the Lease) and only then ends the election, which releases it. A Lease lost
// while running ends the process at once, without a flush, so a new leader never acts beside
// an old one.
type election struct {
	client    kubernetes.Interface
	namespace string
	name      string
	lease     time.Duration
	renew     time.Duration
	retry     time.Duration
	log       *slog.Logger
	metrics   *metrics.Metrics
	leading   atomic.Bool
}

func (e *election) identity() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return host + "_" + hex.EncodeToString(b)
}

// run blocks until ctx ends (and, if leading, the controller has stopped), or exits the process
// when the Lease is lost.
func (e *election) run(ctx context.Context, work func(context.Context) error) error {
	id := e.identity()
	electionCtx, stopElection := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElection()
	result := make(chan error, 1)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: e.namespace, Name: e.name},
			Client:     e.client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration: e.lease, RenewDeadline: e.renew, RetryPeriod: e.retry,
		ReleaseOnCancel: true,
		Name:            e.name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaderCtx context.Context) {
				e.leading.Store(true)
				e.metrics.Leader.Set(1)
				e.log.Info("became leader", "lease", e.namespace+"/"+e.name, "identity", id)
				go e.exitIfLost(ctx, leaderCtx)
				result <- work(ctx)
				stopElection()
			},
			OnStoppedLeading: func() {
				e.leading.Store(false)
				e.metrics.Leader.Set(0)
			},
		},
	})
	if err != nil {
		return fmt.Errorf("--leader-elect: %w", err)
	}
	e.log.Info("waiting to become leader", "lease", e.namespace+"/"+e.name, "identity", id)
	go func() {
		<-ctx.Done()
		if !e.leading.Load() {
			stopElection() // a standby has nothing to flush
		}
	}()
	le.Run(electionCtx)
	select {
	case err := <-result:
		return err
	default:
		return nil
	}
}

// exitIfLost ends the process when the Lease is lost for any reason but our own shutdown.
func (e *election) exitIfLost(shutdown, leader context.Context) {
	<-leader.Done()
	if shutdown.Err() == nil {
		e.log.Error("lost the leader Lease; exiting without flushing so the new leader acts alone", "lease", e.namespace+"/"+e.name)
		os.Exit(1)
	}
}
