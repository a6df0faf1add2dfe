//go:build !linux

package workspace

import (
	"io/fs"
	"os"
)

func pseudoFSOf(f *os.File) string { return "" }

// dirEntry is a name and file type of a directory entry.
type dirEntry struct {
	name string
	mode fs.FileMode // type bits only
}

// readDirTypes lists dir, unsorted.
func readDirTypes(dir *os.Root) ([]dirEntry, error) {
	infos, err := readDirInfo(dir)
	if err != nil {
		return nil, err
	}
	out := make([]dirEntry, len(infos))
	for i, fi := range infos {
		out[i] = dirEntry{name: fi.Name(), mode: fi.Mode().Type()}
	}
	return out, nil
}
