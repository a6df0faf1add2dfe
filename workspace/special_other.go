//go:build !unix

package workspace

import (
	"io/fs"
	"os"
)

const openFlags = os.O_RDONLY

func deviceOf(fi fs.FileInfo) (uint64, bool) { return 0, false }
