package testcluster

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

const (
	// lowestPort is the first port picked: below it sit the well-known and
	// commonly configured service ports.
	lowestPort = 10000
	// ephemeralRangeFile holds the range the kernel takes a connection's
	// local port from.
	ephemeralRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"
	// portTries bounds the random picks per port before giving up.
	portTries = 200
	// bindAttempts bounds how often a component is started again after
	// another process took one of its ports between the pick and the bind.
	bindAttempts = 3
)

// freePorts returns n distinct free TCP ports on the loopback address, picked
// at random below the kernel's ephemeral range: a port picked there and
// released can be taken by any outgoing connection (the many clients of
// parallel test clusters) before the component binds it. All listeners stay
// open until every port is picked, so none repeats.
func freePorts(n int) ([]int, error) {
	hi := ephemeralLow(readFile(ephemeralRangeFile))
	ports := make([]int, 0, n)
	for range n {
		l, err := listenBelow(hi)
		if err != nil {
			return nil, fmt.Errorf("pick free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// listenBelow listens on a random free port in [lowestPort, hi), or on any
// port the kernel gives when that range is empty or full.
func listenBelow(hi int) (net.Listener, error) {
	for i := 0; hi > lowestPort && i < portTries; i++ {
		port := lowestPort + rand.IntN(hi-lowestPort)
		if l, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(port))); err == nil {
			return l, nil
		}
	}
	return net.Listen("tcp", net.JoinHostPort(loopback, "0"))
}

// ephemeralLow returns the first port of the ephemeral range as the kernel
// writes it ("32768\t60999"), or 0 when it cannot be read.
func ephemeralLow(rangeText string) int {
	fields := strings.Fields(rangeText)
	if len(fields) != 2 {
		return 0
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0
	}
	return low
}

func readFile(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(data)
}

// onFreePorts picks n ports and starts a component on them with start, which
// runs it (components.run) and waits until it is ready. When the component
// exited because a port was taken after the pick (another test process chose
// it too), it is dropped and started again on new ports, up to bindAttempts.
func (c *components) onFreePorts(name string, n int, start func(ports []int) error) error {
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(n)
		if err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
		err = start(ports)
		if err == nil || attempt == bindAttempts || !c.dropPortLoser() {
			return err
		}
		c.logf("%s lost a port to another process (attempt %d of %d); starting it on new ports", name, attempt, bindAttempts)
	}
}

// dropPortLoser removes the last started component when it has exited
// because one of its ports was in use, and reports whether it did.
func (c *components) dropPortLoser() bool {
	if len(c.processes) == 0 {
		return false
	}
	last := c.processes[len(c.processes)-1]
	if !last.exited() || !strings.Contains(tailFile(last.logPath, logTailLines), "address already in use") {
		return false
	}
	c.processes = c.processes[:len(c.processes)-1]
	return true
}

// FreePort returns a free loopback port below the ephemeral range, for a
// process a test starts beside the cluster (a reloader's metrics port).
func FreePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}
