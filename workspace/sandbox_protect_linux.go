//go:build linux

package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/harness-runtime/harness/action"
	"golang.org/x/sys/unix"
)

// placeholderMode is the permission of the empty directory that stands in
// for a missing .git or .harness while a command runs: readable by its
// owner only (so the service can lock it), writable by nobody without
// capabilities. An empty directory with exactly this mode is taken for a
// placeholder, also one left by another Harness process.
const placeholderMode = 0o400

// protectedEntry is one of protectedNames as held for one command.
type protectedEntry struct {
	name        string
	file        *os.File // passed to the helper, which binds what it names
	placeholder bool     // an empty placeholder, share-locked while held
}

// holdProtected opens each of protectedNames in the root for the helper to
// bind read-only. A name that does not exist is created as an empty
// placeholder directory (mode 0400): the command cannot create the real
// thing, since the name is taken by a read-only mount in its namespace, and
// a git run outside meanwhile sees an empty directory, not a repository.
// Placeholders are held with a shared flock, so that concurrent commands
// (of this or another Harness process) share one, and the last one to
// finish removes it (releaseProtected).
//
// A protected name that is a symlink (or a device, FIFO or socket) is
// refused: the sandbox cannot keep a command from replacing it. So is a
// repository whose gitdir or commondir lies elsewhere in the root, where
// the command could write hooks.
func (w *Workspace) holdProtected() ([]protectedEntry, error) {
	dir, err := w.root.Open(".")
	if err != nil {
		return nil, &action.Error{Code: action.CodeInternal, Message: "open the workspace root", Err: err}
	}
	defer dir.Close()
	dirfd := int(dir.Fd())
	var held []protectedEntry
	for _, name := range protectedNames {
		e, err := holdOne(dirfd, name)
		if err == nil && name == ".git" {
			err = w.checkGitDirsOutside(e)
		}
		if err != nil {
			if e.file != nil {
				e.file.Close()
			}
			w.releaseProtected(held, false)
			return nil, err
		}
		held = append(held, e)
	}
	return held, nil
}

func holdOne(dirfd int, name string) (protectedEntry, error) {
	e := protectedEntry{name: name}
	for range 8 {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		switch {
		case errors.Is(err, unix.ENOENT):
			if err := unix.Mkdirat(dirfd, name, placeholderMode); err != nil && !errors.Is(err, unix.EEXIST) {
				return e, &action.Error{Code: action.CodeInternal, Message: "create the " + name + " placeholder", Err: err}
			}
			continue
		case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP), errors.Is(err, unix.EACCES):
			// Not a directory (or one the service may not read): hold it
			// as it is, if it is a regular file or directory.
			fd, err = unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			if err != nil {
				return e, &action.Error{Code: action.CodeInternal, Message: "open " + name, Err: err}
			}
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				unix.Close(fd)
				return e, &action.Error{Code: action.CodeInternal, Message: "stat " + name, Err: err}
			}
			if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG && t != unix.S_IFDIR {
				unix.Close(fd)
				e := action.Errorf(action.CodeCommandNotAllowed,
					"%s in the workspace is a %s: the sandbox cannot keep a command from replacing it, so no command runs until it is a directory, a file or absent",
					name, fileTypeName(t))
				e.Payload = map[string]any{"path": name}
				return protectedEntry{name: name}, e
			}
			e.file = os.NewFile(uintptr(fd), name)
			return e, nil
		case err != nil:
			return e, &action.Error{Code: action.CodeInternal, Message: "open " + name, Err: err}
		}
		f := os.NewFile(uintptr(fd), name)
		ok, err := isPlaceholder(f)
		if err != nil {
			f.Close()
			return e, &action.Error{Code: action.CodeInternal, Message: "read " + name, Err: err}
		}
		if !ok {
			e.file = f
			return e, nil
		}
		if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
			f.Close()
			return e, &action.Error{Code: action.CodeInternal, Message: "lock the " + name + " placeholder", Err: err}
		}
		// The last holder may have removed it between the open and the lock.
		if !sameFileAt(dirfd, name, fd) {
			f.Close()
			continue
		}
		e.file, e.placeholder = f, true
		return e, nil
	}
	return e, action.Errorf(action.CodeInternal, "%s in the workspace keeps changing; the command does not run", name)
}

// isPlaceholder reports whether the open directory f is empty with exactly
// placeholderMode.
func isPlaceholder(f *os.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if fi.Mode().Perm() != placeholderMode || fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky) != 0 {
		return false, nil
	}
	names, err := f.Readdirnames(1)
	if len(names) > 0 {
		return false, nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return true, nil
}

// sameFileAt reports whether name in dirfd is (without following a
// symlink) the file open as fd.
func sameFileAt(dirfd int, name string, fd int) bool {
	var a, b unix.Stat_t
	if unix.Fstatat(dirfd, name, &a, unix.AT_SYMLINK_NOFOLLOW) != nil || unix.Fstat(fd, &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// releaseProtected closes what holdProtected opened and removes each
// placeholder that no other command holds any more, when remove is set.
// It is called once the command and everything it started have ended, so
// nothing of the command can take the name in the moment after. Without
// the PID namespace that is not certain (a process may have left the
// process group), and placeholders are left in place (remove false): an
// empty directory, which git outside takes for no repository.
func (w *Workspace) releaseProtected(held []protectedEntry, remove bool) {
	var dirfd = -1
	if remove {
		if dir, err := w.root.Open("."); err == nil {
			defer dir.Close()
			dirfd = int(dir.Fd())
		}
	}
	for _, e := range held {
		if e.placeholder && dirfd >= 0 {
			fd := int(e.file.Fd())
			if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil && sameFileAt(dirfd, e.name, fd) {
				if ok, _ := isPlaceholder(e.file); ok {
					// Fails, harmlessly, if something was put inside meanwhile.
					_ = unix.Unlinkat(dirfd, e.name, unix.AT_REMOVEDIR)
				}
			}
		}
		e.file.Close()
	}
}

// checkGitDirsOutside refuses a .git that sends git to a repository
// directory elsewhere in the root ("gitdir:" in a .git file, or commondir
// in a .git directory), where the command could write hooks and
// configuration that git outside would run. Such directories outside the
// root are beyond the command's reach already (Landlock).
func (w *Workspace) checkGitDirsOutside(e protectedEntry) error {
	var target, base string
	fi, err := e.file.Stat()
	if err != nil || e.placeholder {
		return nil
	}
	dir := w.rootPath
	if fi.Mode().IsRegular() {
		b, err := readSmall(e.file.Fd(), "")
		if err != nil {
			return nil
		}
		line, _, _ := strings.Cut(string(b), "\n")
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
		if !ok {
			return nil
		}
		target, base = strings.TrimSpace(rest), dir
	} else {
		b, err := readSmall(e.file.Fd(), "commondir")
		if err != nil {
			return nil
		}
		target, base = strings.TrimSpace(string(bytes.TrimRight(b, "\r\n"))), filepath.Join(dir, ".git")
	}
	if target == "" {
		return nil
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(base, target)
	}
	target = filepath.Clean(target)
	gitDir := filepath.Join(dir, ".git")
	if (target == dir || strings.HasPrefix(target, dir+string(filepath.Separator))) &&
		target != gitDir && !strings.HasPrefix(target, gitDir+string(filepath.Separator)) {
		rel, _ := filepath.Rel(dir, target)
		ae := action.Errorf(action.CodeCommandNotAllowed,
			".git in the workspace points git at %s, elsewhere in the root, where a command could write what git runs; no command runs until that changes",
			filepath.ToSlash(rel))
		ae.Payload = map[string]any{"path": ".git"}
		return ae
	}
	return nil
}

// readSmall reads up to 4 KiB of the regular file name beneath the
// directory fd (or of fd itself when name is ""), never following a
// symlink nor blocking on a FIFO.
func readSmall(fd uintptr, name string) ([]byte, error) {
	path := fmt.Sprintf("/proc/self/fd/%d", fd)
	var f int
	var err error
	if name == "" {
		f, err = unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	} else {
		f, err = unix.Openat(int(fd), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(f)
	var st unix.Stat_t
	if err := unix.Fstat(f, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, errors.New("not a regular file")
	}
	buf := make([]byte, 4096)
	n, err := unix.Read(f, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

func fileTypeName(t uint32) string {
	switch t {
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "device"
	}
	return "special file"
}
