// Package pageout keeps the executable's resident pages to those in use. Importing it advises
// the kernel, as the package initialises (before client-go's packages and the API types do),
// that the executable is read at random: a fault reads its one page, not the 128 KiB around
// it, which a container's memory limit would count. Executable hands back the pages the process
// touched only while it started: client-go's and the API types' init code, the start-up
// list's decoding. The kernel maps the cached pages 64 KiB around each fault and keeps them
// mapped, so without it most of the executable stays resident. Pages in use fault back in on
// their next use.
package pageout

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// span is one mapping of the executable: [start, end).
type span struct{ start, end uintptr }

// spans parses /proc/self/maps (r) for the read-only mappings of file exe: code, constants,
// the tables the runtime reads. Written data pages are the process's own copies, not the file's.
func spans(r io.Reader, exe string) ([]span, error) {
	var out []span
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[5] != exe || strings.Contains(f[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			return nil, fmt.Errorf("read mapping %q", f[0])
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("read mapping %q", f[0])
		}
		out = append(out, span{uintptr(start), uintptr(end)})
	}
	return out, sc.Err()
}

// Executable advises the kernel to reclaim the resident pages of the executable's read-only
// mappings, and returns how many bytes of mappings it advised. Where the kernel does not support
// it (before Linux 5.4, or not Linux) it returns an error and changes nothing.
func Executable() (int, error) { return each(pageOut) }

// each gives advise every read-only mapping of the executable, and returns how many bytes of
// mappings it advised.
func each(advise func(span) error) (int, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("find the executable: %w", err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("read the mappings: %w", err)
	}
	defer f.Close()
	all, err := spans(f, exe)
	if err != nil {
		return 0, fmt.Errorf("read the mappings: %w", err)
	}
	n := 0
	for _, s := range all {
		if err := advise(s); err != nil {
			return n, fmt.Errorf("advise the kernel: %w", err)
		}
		n += int(s.end - s.start)
	}
	return n, nil
}

// Where the kernel cannot, nothing changes: the advice saves memory, nothing depends on it.
func init() { _, _ = each(adviseRandom) }
