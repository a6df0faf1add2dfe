//go:build linux

package workspace

import (
	"io/fs"
	"syscall"
)

// statKey is the key of fi, the lstat of path; ok is false where the
// platform gives no change time (then the key must not be trusted).
func statKey(path string, fi fs.FileInfo) (k fileStatKey, ok bool) {
	k = fileStatKey{path: path, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok {
		k.ino, k.ctime = st.Ino, st.Ctim.Nano()
	}
	return k, ok
}
