package workspace

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/harness-runtime/harness/action"
)

// Limits on paths taken from input. They match Linux's PATH_MAX and
// NAME_MAX; longer paths could never be opened, and refusing them early
// keeps error messages about the input rather than about the kernel.
const (
	maxPathBytes = 4096
	maxNameBytes = 255
	// maxSymlinkHops bounds symlink resolution in resolveInRoot, as the
	// kernel's MAXSYMLINKS does.
	maxSymlinkHops = 40
)

// parsePath checks a path exactly as it was given, before any cleaning,
// and returns it as a clean slash-separated root-relative path.
//
// wantDir reports that the input names a directory by its spelling (a
// trailing "/", "/." or "/.."): filepath.Clean would drop that suffix and
// turn "file.txt/." into "file.txt", so the caller must insist on a
// directory instead.
//
// parsePath is purely lexical: it never touches the disk.
func parsePath(p string) (rel string, wantDir bool, err error) {
	if p == "" {
		return ".", true, nil
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", false, action.Errorf(action.CodeInvalidInput, "path contains a NUL byte")
	}
	if len(p) > maxPathBytes {
		return "", false, action.Errorf(action.CodeInvalidInput, "path is longer than %d bytes", maxPathBytes)
	}
	if p[0] == '/' {
		return "", false, action.Errorf(action.CodePathOutsideRoot, "path %q is absolute", p)
	}
	depth := 0
	parts := strings.Split(p, "/")
	for _, part := range parts {
		switch part {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return "", false, action.Errorf(action.CodePathOutsideRoot, "path %q leaves the workspace root", p)
			}
		default:
			if len(part) > maxNameBytes {
				return "", false, action.Errorf(action.CodeInvalidInput, "path has a name longer than %d bytes", maxNameBytes)
			}
			depth++
		}
	}
	last := parts[len(parts)-1]
	wantDir = last == "" || last == "." || last == ".."
	return path.Clean(p), wantDir, nil
}

// checkPath validates a path taken from input and returns it as a clean
// slash-separated path relative to the root ("." for the root itself).
//
// It refuses, looking at the path as given: NUL bytes, over-long paths or
// names (invalid_input), absolute paths and ".." that leaves the root
// (path_outside_root). It then resolves the path through the root: a
// symlink, or a symlinked parent, that points outside the root is refused
// with path_outside_root, a path that exists but is a device, FIFO or
// socket is refused with invalid_input, and a path spelled as a directory
// ("dir/", "dir/.") that exists but is not one is refused with
// invalid_input. A path that does not exist is accepted (it may be about to
// be created).
//
// The check is a snapshot: the tree may change after it returns. Callers
// must still do every file operation through w.root, which re-checks
// confinement at the moment of the operation.
func (w *Workspace) checkPath(p string) (string, error) {
	rel, _, err := w.statPath(p)
	return rel, err
}

// statPath is checkPath that also returns what the stat found there: nil
// when nothing is there yet.
func (w *Workspace) statPath(p string) (string, fs.FileInfo, error) {
	rel, wantDir, err := parsePath(p)
	if err != nil {
		return "", nil, err
	}
	fi, err := w.statParsed(p, rel, wantDir)
	if err != nil {
		return "", nil, err
	}
	return rel, fi, nil
}

// statParsed is statPath of p, which parsePath has turned into rel and
// wantDir.
func (w *Workspace) statParsed(p, rel string, wantDir bool) (fs.FileInfo, error) {
	fi, err := w.root.Stat(rel)
	switch {
	case err == nil:
		if err := refuseSpecial(rel, fi); err != nil {
			return nil, err
		}
		if wantDir && !fi.IsDir() {
			return nil, action.Errorf(action.CodeInvalidInput, "path %q is not a directory", p)
		}
	case isNotExist(err):
		// Not there yet. A parent that is a symlink leading outside would
		// have failed resolution with an escape error, not this one.
		return nil, nil
	default:
		return nil, fsError(rel, err)
	}
	return fi, nil
}

// checkWritePath is checkPath plus the rules for writes. It refuses, in
// this order: any write when Options.WriteEnabled is false
// (write_disabled); paths spelled as directories (invalid_input); and
// paths that lead, as spelled or after resolving symlinks inside the root,
// beneath a ".git" directory at any depth or beneath ".harness" at the top
// (path_outside_root). Names are compared case-insensitively, so ".GIT"
// on a case-insensitive file system is refused too.
//
// Like checkPath this is a snapshot; a concurrent writer inside the root
// could swap a directory for a symlink into .git after the check. That
// cannot leave the root, since writes go through w.root.
func (w *Workspace) checkWritePath(p string) (string, error) {
	if !w.opts.WriteEnabled {
		return "", action.Errorf(action.CodeWriteDisabled, "writes are disabled for this workspace")
	}
	rel, err := w.checkPath(p)
	if err != nil {
		return "", err
	}
	if _, wantDir, _ := parsePath(p); wantDir || rel == "." {
		return "", action.Errorf(action.CodeInvalidInput, "path %q names a directory, not a file", p)
	}
	if err := refuseProtected(rel); err != nil {
		return "", err
	}
	real, err := w.resolveInRoot(rel)
	if err != nil {
		return "", err
	}
	if err := refuseProtected(real); err != nil {
		return "", err
	}
	return rel, nil
}

// refuseProtected refuses root-relative paths beneath .git (any depth, so
// nested repositories and submodules are covered) or beneath .harness.
func refuseProtected(rel string) error {
	for i, part := range strings.Split(rel, "/") {
		if strings.EqualFold(part, ".git") || (i == 0 && strings.EqualFold(part, ".harness")) {
			return action.Errorf(action.CodePathOutsideRoot, "writes beneath %s/ are refused", part)
		}
	}
	return nil
}

// resolveInRoot resolves the symlinks of a clean root-relative path, using
// only Lstat and Readlink through w.root, and returns the real
// root-relative path. Components that do not exist are kept as spelled. A
// link whose target is absolute or climbs above the root is refused with
// path_outside_root. It is used to apply name-based rules (such as the
// .git rule) to where a path really leads; confinement itself is enforced
// by os.Root on every operation.
func (w *Workspace) resolveInRoot(rel string) (string, error) {
	pending := splitRel(rel)
	var done []string
	hops := 0
	for len(pending) > 0 {
		name := pending[0]
		pending = pending[1:]
		if name == ".." {
			if len(done) == 0 {
				return "", action.Errorf(action.CodePathOutsideRoot, "path %q leads outside the workspace root", rel)
			}
			done = done[:len(done)-1]
			continue
		}
		cur := strings.Join(append(done, name), "/")
		fi, err := w.root.Lstat(cur)
		if err != nil {
			if isNotExist(err) {
				done = append(done, name)
				done = append(done, pending...)
				return path.Clean(strings.Join(done, "/")), nil
			}
			return "", fsError(rel, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, name)
			continue
		}
		hops++
		if hops > maxSymlinkHops {
			return "", action.Errorf(action.CodeInvalidInput, "path %q: too many levels of symbolic links", rel)
		}
		target, err := w.root.Readlink(cur)
		if err != nil {
			return "", fsError(rel, err)
		}
		if strings.HasPrefix(target, "/") {
			return "", action.Errorf(action.CodePathOutsideRoot, "path %q is a symlink that leads outside the workspace root", rel)
		}
		pending = append(splitRel(target), pending...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return strings.Join(done, "/"), nil
}

// splitRel splits a relative slash path into its names, dropping empty and
// "." names but keeping "..".
func splitRel(p string) []string {
	var out []string
	for _, part := range strings.Split(p, "/") {
		if part != "" && part != "." {
			out = append(out, part)
		}
	}
	return out
}

// refuseSpecial refuses anything that is neither a regular file, a
// directory nor a symlink: devices, FIFOs, sockets. Reading a FIFO can
// block forever and a device can have side effects on open.
func refuseSpecial(rel string, fi fs.FileInfo) error {
	m := fi.Mode()
	if m.IsRegular() || m.IsDir() || m&fs.ModeSymlink != 0 {
		return nil
	}
	return action.Errorf(action.CodeInvalidInput, "path %q is a special file (%s); only regular files and directories are served", rel, kindOf(m))
}

func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeDevice != 0 && m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeIrregular != 0:
		return "irregular file"
	}
	return "special file"
}

// errEscapeText is the text of os.Root's unexported errPathEscapes. It is
// the only way to tell an escape from other errors.
const errEscapeText = "path escapes from parent"

func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func isEscape(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == errEscapeText {
			return true
		}
	}
	return false
}

// fsError turns an error from an os.Root operation on rel into an
// *action.Error with a stable code, keeping the original as its cause.
func fsError(rel string, err error) error {
	var code action.Code
	var msg string
	switch {
	case err == nil:
		return nil
	case isEscape(err):
		code, msg = action.CodePathOutsideRoot, "leads outside the workspace root"
	case isNotExist(err):
		code, msg = action.CodeNotFound, "does not exist"
	case errors.Is(err, syscall.ELOOP):
		code, msg = action.CodeInvalidInput, "has too many levels of symbolic links"
	case errors.Is(err, syscall.ENAMETOOLONG):
		code, msg = action.CodeInvalidInput, "is too long"
	case errors.Is(err, fs.ErrPermission):
		code, msg = action.CodeInvalidInput, "is not accessible (permission denied)"
	case errors.Is(err, syscall.EISDIR):
		code, msg = action.CodeInvalidInput, "is a directory"
	default:
		code, msg = action.CodeInternal, "could not be accessed"
	}
	return &action.Error{Code: code, Message: "path " + quote(rel) + " " + msg, Err: err}
}

func quote(s string) string {
	if s == "" {
		s = "."
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}
