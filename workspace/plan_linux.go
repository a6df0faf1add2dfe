//go:build linux

package workspace

import (
	"encoding/binary"
	"io/fs"
	"syscall"
)

// appendChangeID appends what identifies one version of a file: its inode
// and its change time, which the kernel sets on every write and no program
// can set back.
func appendChangeID(b []byte, fi fs.FileInfo) []byte {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		b = binary.LittleEndian.AppendUint64(b, uint64(st.Ino))
		b = binary.LittleEndian.AppendUint64(b, uint64(st.Ctim.Sec))
		return binary.LittleEndian.AppendUint64(b, uint64(st.Ctim.Nsec))
	}
	return binary.LittleEndian.AppendUint64(b, uint64(fi.ModTime().UnixNano()))
}
