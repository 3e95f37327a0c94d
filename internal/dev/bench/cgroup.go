package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// memCgroup is a memory cgroup the bench makes for one reloader, with a limit, as a container
// runtime does for a container. What its limit counts is what a container's does: anonymous
// memory, kernel memory, and the page cache the group reads in (the executable's pages
// among it), which the kernel reclaims before it kills.
type memCgroup struct {
	dir   string
	v2    bool
	limit int64 // bytes
}

// Where the hierarchies are: v1's memory controller, or the unified v2 tree.
const (
	cgroupV1Memory = "/sys/fs/cgroup/memory"
	cgroupV2Root   = "/sys/fs/cgroup"
)

// newMemCgroup makes the cgroup name with a memory limit of limit bytes and no swap, in v1's
// memory hierarchy if mounted, else in v2's root (which may hold children with controllers).
func newMemCgroup(name string, limit int64) (*memCgroup, error) {
	if _, err := os.Stat(filepath.Join(cgroupV1Memory, "memory.limit_in_bytes")); err == nil {
		c := &memCgroup{dir: filepath.Join(cgroupV1Memory, name), limit: limit}
		// memsw (memory and swap) may not be below the memory limit, so it comes second; it is
		// absent without swap accounting.
		return c, c.make([][2]string{{"memory.limit_in_bytes", strconv.FormatInt(limit, 10)},
			{"memory.memsw.limit_in_bytes", strconv.FormatInt(limit, 10)}})
	}
	ctl, err := os.ReadFile(filepath.Join(cgroupV2Root, "cgroup.controllers"))
	if err != nil || !slices.Contains(strings.Fields(string(ctl)), "memory") {
		return nil, errNoCgroup
	}
	if err := os.WriteFile(filepath.Join(cgroupV2Root, "cgroup.subtree_control"), []byte("+memory"), 0); errors.Is(err, os.ErrPermission) {
		return nil, errNoCgroup
	} else if err != nil {
		return nil, fmt.Errorf("enable the memory controller for children of %s: %w", cgroupV2Root, err)
	}
	c := &memCgroup{dir: filepath.Join(cgroupV2Root, name), v2: true, limit: limit}
	return c, c.make([][2]string{{"memory.max", strconv.FormatInt(limit, 10)}, {"memory.swap.max", "0"}})
}

// errNoCgroup says that the machine has no memory cgroup the bench may make.
var errNoCgroup = errors.New("no memory cgroup controller (v1 or v2) that this user may use")

// make creates the directory and writes settings (file, value) in order; a setting whose file
// does not exist is skipped (swap limits, where swap is not accounted).
func (c *memCgroup) make(settings [][2]string) error {
	if err := os.Mkdir(c.dir, 0o755); errors.Is(err, os.ErrPermission) {
		return errNoCgroup
	} else if err != nil {
		return fmt.Errorf("create cgroup %s: %w", c.dir, err)
	}
	for _, set := range settings {
		file, v := set[0], set[1]
		err := os.WriteFile(filepath.Join(c.dir, file), []byte(v), 0)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			_ = c.remove()
			return fmt.Errorf("set %s of cgroup %s: %w", file, c.dir, err)
		}
	}
	return nil
}

// procs is the file a process writes its pid to, to join the cgroup.
func (c *memCgroup) procs() string { return filepath.Join(c.dir, "cgroup.procs") }

// remove deletes the cgroup; it must hold no process.
func (c *memCgroup) remove() error {
	return wrap(os.Remove(c.dir), "remove cgroup %s", c.dir)
}

// cgroupStats is what a memory cgroup counted since it was made.
type cgroupStats struct {
	Peak     int64 `json:"peak"` // the largest charge: anonymous, kernel and page cache
	OOMKills int64 `json:"oom_kills"`
}

func (c *memCgroup) stats() (cgroupStats, error) {
	if c.v2 {
		var s cgroupStats
		ev, err := c.keyed("memory.events")
		if err != nil {
			return s, err
		}
		s.OOMKills = ev["oom_kill"]
		s.Peak, err = c.int("memory.peak")
		return s, err
	}
	peak, err1 := c.int("memory.max_usage_in_bytes")
	oom, err2 := c.keyed("memory.oom_control")
	return cgroupStats{Peak: peak, OOMKills: oom["oom_kill"]}, errors.Join(err1, err2)
}

func (c *memCgroup) int(file string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, file))
	if err != nil {
		return 0, fmt.Errorf("read cgroup %s: %w", file, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, wrap(err, "parse cgroup %s", file)
}

// keyed reads a file of "key value" lines.
func (c *memCgroup) keyed(file string) (map[string]int64, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, file))
	if err != nil {
		return nil, fmt.Errorf("read cgroup %s: %w", file, err)
	}
	out := map[string]int64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if n, err := strconv.ParseInt(v, 10, 64); ok && err == nil {
			out[k] = n
		}
	}
	return out, nil
}

// evictFile drops a file's clean pages from the page cache, so that the next process to read
// it is charged for them, as a container is for its image's files the first time it runs. It
// returns the bytes still cached after, which pages that some process maps keep.
func evictFile(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("evict %s from the page cache: %w", path, err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return 0, fmt.Errorf("evict %s from the page cache: %w", path, err)
	}
	return cachedBytes(f)
}

// cachedBytes counts the file's pages in the page cache (mincore over a mapping of it).
func cachedBytes(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0, wrap(err, "stat %s", f.Name())
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, fmt.Errorf("map %s: %w", f.Name(), err)
	}
	defer func() { _ = unix.Munmap(m) }()
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return 0, fmt.Errorf("mincore %s: %w", f.Name(), errno)
	}
	var n int64
	for _, v := range vec {
		n += int64(v & 1)
	}
	return n * int64(page), nil
}
