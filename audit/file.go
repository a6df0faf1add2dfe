package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrNotLogFile is returned (wrapped) by OpenJSONL and VerifyJSONLFile
// when the log's path is a symbolic link or anything else than a regular
// file.
var ErrNotLogFile = errors.New("audit: not a regular file")

// openLogFile opens the JSONL log at path with flag (plus O_NOFOLLOW and,
// with O_CREATE, mode 0600) and returns it only if it is a regular file
// that path names itself. A symbolic link at path is refused, never
// followed: with O_CREATE, following a dangling link would create its
// target, wherever it points, and appending to a link to an existing file
// would write into that file. Directories above path are resolved as
// usual; CheckOutside is what refuses a path that passes through the
// workspace.
//
// Where the platform has no O_NOFOLLOW (not Unix), a link is found only
// after the open, by comparing the file opened with what path itself
// names; then the open has already followed it.
func openLogFile(path string, flag int) (*os.File, error) {
	// Looked at first so that a named pipe at path is refused instead of
	// blocking the open.
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, symlinkError(path)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%w: %s is a %s", ErrNotLogFile, path, kindOf(fi.Mode()))
		}
	}
	f, err := os.OpenFile(path, flag|oNoFollow, 0o600)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, symlinkError(path)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%w: %s is a %s", ErrNotLogFile, path, kindOf(fi.Mode()))
	}
	if err == nil {
		// The same check where O_NOFOLLOW exists costs one lstat, and
		// also finds a rename over path between the open and now.
		lfi, lerr := os.Lstat(path)
		switch {
		case lerr != nil:
			err = lerr
		case lfi.Mode()&fs.ModeSymlink != 0:
			err = symlinkError(path)
		case !os.SameFile(fi, lfi):
			err = fmt.Errorf("%w: %s was replaced while it was being opened", ErrNotLogFile, path)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func symlinkError(path string) error {
	target, _ := os.Readlink(path)
	return fmt.Errorf("%w: %s is a symbolic link (to %q); Harness opens its audit log only at its real path, never through a link: remove the link or configure the path it points to",
		ErrNotLogFile, path, target)
}

func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	default:
		return "special file"
	}
}
