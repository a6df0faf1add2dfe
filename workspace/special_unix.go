//go:build unix

package workspace

import (
	"io/fs"
	"os"
	"syscall"
)

// openFlags are the flags of every read-only open. O_NONBLOCK keeps an
// open of a FIFO (swapped in after our type check) from blocking; the
// opened handle is then checked and refused if it is not a regular file.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK

// tempFlags create a patch's temporary file. O_NONBLOCK, which changes
// nothing for a regular file, saves the four fcntl calls the os package
// spends on a blocking descriptor it cannot poll.
const tempFlags = os.O_WRONLY | os.O_CREATE | os.O_EXCL | syscall.O_NONBLOCK

// deviceOf returns the device number of fi, and false if it is unknown.
func deviceOf(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Dev), true //nolint:unconvert // Dev is int32 or uint64 depending on the platform.
}
