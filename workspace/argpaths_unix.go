//go:build unix

package workspace

import (
	"io/fs"
	"syscall"
)

// linkCount returns the number of hard links of fi, and false if it is
// unknown.
func linkCount(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true //nolint:unconvert // Nlink is uint16, uint32 or uint64 depending on the platform.
}
