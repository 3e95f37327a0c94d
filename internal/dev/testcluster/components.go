package testcluster

import (
	"fmt"
	"io"
)

// components are the cluster's processes, in start order, each with its log in dir.
type components struct {
	dir       string
	log       io.Writer // the cluster's progress lines
	processes []*process
	apiserver int // kube-apiserver's index in processes
}

// run starts a component with its log in dir and registers it for stopAll.
func (c *components) run(name, binary string, args ...string) (*process, error) {
	p, err := startProcess(name, binary, c.dir, args...)
	if err != nil {
		return nil, err
	}
	c.processes = append(c.processes, p)
	return p, nil
}

// checkRunning fails if any component has already exited.
func (c *components) checkRunning() error {
	for _, p := range c.processes {
		if p.exited() {
			return p.failure("exited (%v)", p.err)
		}
	}
	return nil
}

// exitedEarly returns one error for each component that has exited on its own.
func (c *components) exitedEarly() []error {
	var errs []error
	for _, p := range c.processes {
		if p.exited() {
			errs = append(errs, p.failure("exited before Stop (%v)", p.err))
		}
	}
	return errs
}

// stopAll stops components in reverse start order, clients first.
func (c *components) stopAll() {
	for i := len(c.processes) - 1; i >= 0; i-- {
		c.processes[i].stop(stopGrace)
	}
}

func (c *components) logf(format string, args ...any) {
	fmt.Fprintf(c.log, "testcluster: "+format+"\n", args...)
}
