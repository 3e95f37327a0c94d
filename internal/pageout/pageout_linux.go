package pageout

import "golang.org/x/sys/unix"

// pageOut is madvise(MADV_DONTNEED) over s, without making Go memory of an address it does
// not own. On a read-only file mapping it unmaps the pages and keeps them in the page cache:
// a page touched again costs a minor fault, not a read from disk (MADV_PAGEOUT, which frees
// them, made the first reloads after the start tens of milliseconds slower).
func pageOut(s span) error {
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, s.start, s.end-s.start, unix.MADV_DONTNEED)
	if errno != 0 {
		return errno
	}
	return nil
}
