//go:build !linux

package workspace

import (
	"encoding/binary"
	"io/fs"
)

// appendChangeID appends the modification time, the best this platform
// offers to tell versions of a file apart.
func appendChangeID(b []byte, fi fs.FileInfo) []byte {
	return binary.LittleEndian.AppendUint64(b, uint64(fi.ModTime().UnixNano()))
}
