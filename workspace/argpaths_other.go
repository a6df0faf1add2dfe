//go:build !unix

package workspace

import "io/fs"

// linkCount is unknown off Unix: FileInfo does not carry it.
func linkCount(fs.FileInfo) (uint64, bool) { return 0, false }
