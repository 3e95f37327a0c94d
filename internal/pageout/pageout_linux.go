package pageout

import "golang.org/x/sys/unix"

// pageOut is madvise(MADV_PAGEOUT) over s, without making Go memory of an address it does
// not own. Not MADV_DONTNEED, which would be cheaper to fault back in: on a private mapping it
// discards pages the process wrote before the mapping became read-only (a cgo binary's
// relocations), and a test binary died of it; PAGEOUT keeps such pages.
func pageOut(s span) error {
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, s.start, s.end-s.start, unix.MADV_PAGEOUT)
	if errno != 0 {
		return errno
	}
	return nil
}
