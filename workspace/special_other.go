//go:build !unix

package workspace

import (
	"io/fs"
	"os"
)

const openFlags = os.O_RDONLY

const tempFlags = os.O_WRONLY | os.O_CREATE | os.O_EXCL

func deviceOf(fi fs.FileInfo) (uint64, bool) { return 0, false }
