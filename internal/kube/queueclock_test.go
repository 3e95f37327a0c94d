package kube

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestTheQueueClockTicksNoFasterThanItsMinimum(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now())
	c := QueueClock{fake}
	fast := c.NewTicker(500 * time.Millisecond) // the queue's stuck-sync gauges
	slow := c.NewTicker(10 * time.Second)       // the delaying queue's heartbeat
	defer fast.Stop()
	defer slow.Stop()

	fake.Step(QueueMinTick - time.Millisecond)
	select {
	case <-fast.C():
		t.Fatalf("a 500 ms ticker ticked before %s", QueueMinTick)
	default:
	}
	fake.Step(time.Millisecond)
	select {
	case <-fast.C():
	default:
		t.Fatalf("a 500 ms ticker did not tick at %s", QueueMinTick)
	}
	fake.Step(10*time.Second - QueueMinTick)
	select {
	case <-slow.C():
	default:
		t.Fatal("a 10 s ticker did not tick at 10 s")
	}
}
