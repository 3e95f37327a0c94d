package pageout

import "syscall"

// madvPageout is MADV_PAGEOUT (Linux 5.4), which package syscall does not name. The package
// uses syscall, not golang.org/x/sys/unix, so that it initialises before most packages do.
const madvPageout = 21

// pageOut is madvise(MADV_PAGEOUT) over s, without making Go memory of an address it does
// not own. Not MADV_DONTNEED, which would be cheaper to fault back in: on a private mapping it
// discards pages the process wrote before the mapping became read-only (a cgo binary's
// relocations), and a test binary died of it; PAGEOUT keeps such pages.
func pageOut(s span) error { return madvise(s, madvPageout) }

func adviseRandom(s span) error { return madvise(s, syscall.MADV_RANDOM) }

func madvise(s span, advice uintptr) error {
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, s.start, s.end-s.start, advice)
	if errno != 0 {
		return errno
	}
	return nil
}
