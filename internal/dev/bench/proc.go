package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat; 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// memStatus is the memory of a process as /proc/<pid>/status reports it, in bytes.
type memStatus struct {
	RSS  int64 `json:"rss"`      // VmRSS
	HWM  int64 `json:"hwm"`      // VmHWM, the peak of VmRSS
	Anon int64 `json:"rss_anon"` // RssAnon: heap, stacks
	File int64 `json:"rss_file"` // RssFile: mapped pages of the executable
}

func readMemStatus(pid int) (memStatus, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memStatus{}, fmt.Errorf("read memory status of pid %d: %w", pid, err)
	}
	var m memStatus
	fields := map[string]*int64{"VmRSS:": &m.RSS, "VmHWM:": &m.HWM, "RssAnon:": &m.Anon, "RssFile:": &m.File}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || fields[f[0]] == nil {
			continue
		}
		kib, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return memStatus{}, fmt.Errorf("parse %s of pid %d: %w", f[0], pid, err)
		}
		*fields[f[0]] = kib << 10
	}
	if m.RSS == 0 {
		return memStatus{}, fmt.Errorf("pid %d: no VmRSS in /proc/%d/status", pid, pid)
	}
	return m, nil
}

// resetPeak sets VmHWM back to the current VmRSS (Linux clear_refs value 5).
func resetPeak(pid int) error {
	err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
	return wrap(err, "reset peak RSS of pid %d", pid)
}

// statFields returns /proc/<pid>/stat's fields after the command name (which, in parentheses,
// may hold spaces): index 0 is the state, the stat file's third field.
func statFields(pid, want int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < want {
		return nil, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	return f, nil
}

// cpuSeconds returns the user plus system CPU time a process has used.
func cpuSeconds(pid int) (float64, error) {
	f, err := statFields(pid, 13)
	if err != nil {
		return 0, err
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return float64(utime+stime) / clockTicks, nil
}

// majorFaults is the count of page faults that read from disk (majflt).
func majorFaults(pid int) (int64, error) {
	f, err := statFields(pid, 10)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(f[9], 10, 64)
	return n, wrap(err, "parse majflt of pid %d", pid)
}

// sampler reads VmRSS of a process at a fixed interval and keeps the largest value.
type sampler struct {
	pid  int
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu      sync.Mutex
	max     int64
	samples int
	// anon and file are the largest RssAnon and RssFile sampled: the process's own memory, and
	// the executable's clean pages, which the kernel can reclaim but the reloader reads again
	// (a limit must leave room for those in use: see the limit scenario).
	anon, file int64
}

func startSampler(pid int, every time.Duration) *sampler {
	s := &sampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop(every)
	return s
}

func (s *sampler) loop(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if m, err := readMemStatus(s.pid); err == nil {
			s.mu.Lock()
			s.max, s.samples = max(s.max, m.RSS), s.samples+1
			s.anon, s.file = max(s.anon, m.Anon), max(s.file, m.File)
			s.mu.Unlock()
		}
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// reset forgets the maximum so far.
func (s *sampler) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.max, s.samples, s.anon, s.file = 0, 0, 0, 0
}

// peak returns the largest VmRSS sampled since start or reset, and how many samples were taken.
func (s *sampler) peak() (int64, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max, s.samples
}

// split returns the largest RssAnon and RssFile sampled since start or reset.
func (s *sampler) split() (anon, file int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.anon, s.file
}

// close stops sampling; calling it again is harmless.
func (s *sampler) close() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}
