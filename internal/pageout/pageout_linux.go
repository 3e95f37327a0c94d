package pageout

import "golang.org/x/sys/unix"

// pageOut is madvise(MADV_PAGEOUT) over s, without making Go memory of an address it does not own.
func pageOut(s span) error {
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, s.start, s.end-s.start, unix.MADV_PAGEOUT)
	if errno != 0 {
		return errno
	}
	return nil
}
