//go:build linux

package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/harness-runtime/harness/action"
	"golang.org/x/sys/unix"
)

// placeholderMode is the permission of the empty file that stands in for a
// missing .git or .harness while a command runs: readable by its owner
// only (so the service can lock it), writable by nobody without
// capabilities. An empty regular file with exactly this mode is taken for a
// placeholder, also one left by another Harness process.
//
// A file rather than a directory: creating and removing it costs no data
// block (a directory's costs a discard on some file systems, about a
// millisecond), and git run outside meanwhile stops at it ("invalid gitfile
// format") instead of looking further up.
const placeholderMode = 0o400

// protectedEntry is one of protectedNames as held for one command.
type protectedEntry struct {
	name        string
	file        *os.File // passed to the helper, which binds what it names
	placeholder bool     // an empty placeholder, share-locked while held
}

// holdProtected opens each of protectedNames in the root for the helper to
// bind read-only. A name that does not exist is created as an empty
// placeholder file (mode 0400): the command cannot create the real thing,
// since the name is taken by a read-only mount in its namespace.
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
		if err == nil && name == ".git" && e.file != nil {
			err = w.checkGitDirsOutside(e)
		}
		if err != nil {
			if e.file != nil {
				e.file.Close()
			}
			w.releaseProtected(held, false)
			return nil, err
		}
		if e.file != nil {
			held = append(held, e)
		}
	}
	return held, nil
}

func holdOne(dirfd int, name string) (protectedEntry, error) {
	e := protectedEntry{name: name}
	internal := func(what string, err error) (protectedEntry, error) {
		return e, &action.Error{Code: action.CodeInternal, Message: what + " " + name, Err: err}
	}
	for range 8 {
		fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			fd, err = unix.Openat(dirfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, placeholderMode)
			if errors.Is(err, unix.EEXIST) {
				continue
			}
			if errors.Is(err, unix.EROFS) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
				// The service may not create it (a read-only root, or one
				// it may not write to): the command, with less, may not
				// either, and there is nothing to hold.
				return e, nil
			}
			if err != nil {
				return internal("create a placeholder for", err)
			}
			if err := unix.Fchmod(fd, placeholderMode); err != nil { // whatever the umask
				unix.Close(fd)
				return internal("create a placeholder for", err)
			}
		} else if err != nil {
			return internal("open", err)
		}
		f := os.NewFile(uintptr(fd), name)
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return internal("stat", err)
		}
		switch {
		case fi.IsDir() || (fi.Mode().IsRegular() && !isPlaceholder(fi)):
			e.file = f
			return e, nil
		case !fi.Mode().IsRegular():
			f.Close()
			ae := action.Errorf(action.CodeCommandNotAllowed,
				"%s in the workspace is a %s: the sandbox cannot keep a command from replacing it, so no command runs until it is a directory, a file or absent",
				name, fileTypeName(fi.Mode()))
			ae.Payload = map[string]any{"path": name}
			return e, ae
		}
		// A placeholder: lock it (an O_PATH descriptor cannot be locked).
		if isOPath(int(f.Fd())) {
			lf, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
			f.Close()
			if err != nil {
				return internal("open the placeholder", err)
			}
			f = os.NewFile(uintptr(lf), name)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
			f.Close()
			return internal("lock the placeholder", err)
		}
		// The last holder may have removed it between the open and the lock.
		if !sameFileAt(dirfd, name, int(f.Fd())) {
			f.Close()
			continue
		}
		e.file, e.placeholder = f, true
		return e, nil
	}
	return e, action.Errorf(action.CodeInternal, "%s in the workspace keeps changing; the command does not run", name)
}

// isPlaceholder reports whether fi is an empty regular file with exactly
// placeholderMode.
func isPlaceholder(fi os.FileInfo) bool {
	return fi.Mode().IsRegular() && fi.Size() == 0 && fi.Mode().Perm() == placeholderMode &&
		fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky) == 0
}

// isOPath reports whether fd was opened with O_PATH.
func isOPath(fd int) bool {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	return err == nil && flags&unix.O_PATH != 0
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
// process group), and placeholders are left in place (remove false).
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
				if fi, err := e.file.Stat(); err == nil && isPlaceholder(fi) {
					_ = unix.Unlinkat(dirfd, e.name, 0)
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

func fileTypeName(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "symlink"
	case m&os.ModeNamedPipe != 0:
		return "FIFO"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
