package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// ErrInsideRoot is returned (wrapped) by CheckOutside for a path that
// reaches into the workspace root.
var ErrInsideRoot = errors.New("inside the workspace root")

// maxLinks bounds the symbolic links CheckOutside follows for one path, as
// the kernel's own limit does (40 on Linux): a loop is an error, not a hang.
const maxLinks = 40

// CheckOutside returns an error (wrapping ErrInsideRoot) when path, a file
// Harness keeps for itself (the audit log, the HMAC key), is the workspace
// root or lies beneath it, so that a configuration placing it there is
// refused at start. Code the workspace controls may read and write
// anything beneath the root, so a log kept there can be rewritten and a
// key kept there read.
//
// A relative path or root is taken from the current directory, as opening
// it would. path is followed component by component as the system would
// open it, through every symbolic link, and every place that walk passes
// is checked, not only where it ends: a path that only passes through the
// workspace (a link inside the root pointing back out, or "root/sub/../..")
// is refused too, because the workspace can change what it passes through.
// The root is compared both as given and with its symbolic links resolved,
// and a directory of the walk that is the root itself (the same file, as a
// bind mount would show it) counts as the root. Components that do not
// exist yet are taken as they are written.
//
// It does not see a subdirectory of the root mounted elsewhere, and it
// compares names byte for byte, so on a case-insensitive file system a
// path that differs from the root only in letter case is not found. A
// postgres:// or postgresql:// target is not a path and is accepted, as is
// an empty path (nothing configured). The error names path and root as
// given, and the place inside the root the walk reached.
func CheckOutside(root, path string) error {
	if path == "" || IsPostgres(path) {
		return nil
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return fmt.Errorf("workspace root %s: %w", root, err)
	}
	realRoot := resolveExisting(absRoot)
	rootInfo, _ := os.Stat(realRoot)

	start := path
	if !filepath.IsAbs(start) {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("check %s: %w", path, err)
		}
		// Not filepath.Join, which would clean "link/.." away before the
		// link is followed.
		start = wd + string(filepath.Separator) + start
	}
	refuse := func(loc string) error {
		reach := ""
		if loc != filepath.Clean(start) {
			reach = fmt.Sprintf(" (it reaches %s)", loc)
		}
		return fmt.Errorf("%s is %w %s%s: Harness's own files (audit log, HMAC key) must live outside the workspace, where commands and file actions cannot reach them",
			path, ErrInsideRoot, root, reach)
	}
	beneath := func(loc string) bool {
		return (loc != absRoot && within(loc, absRoot)) || (loc != realRoot && within(loc, realRoot))
	}
	// The root's own entry lies in its parent, out of the workspace's
	// reach, so a walk may pass the root (a relative path from it, or
	// "root/../x"); an entry beneath it is the workspace's to change.
	final, err := walkPath(start, func(loc string) error {
		if beneath(loc) {
			return refuse(loc)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if final == absRoot || final == realRoot {
		return refuse(final)
	}
	if fi, err := os.Stat(final); err == nil && rootInfo != nil && fi.IsDir() && os.SameFile(fi, rootInfo) {
		return refuse(final)
	}
	return nil
}

// within reports whether p is dir or lies beneath it; both are clean
// absolute paths.
func within(p, dir string) bool {
	if p == dir {
		return true
	}
	if !strings.HasSuffix(dir, string(filepath.Separator)) {
		dir += string(filepath.Separator)
	}
	return strings.HasPrefix(p, dir)
}

// resolveExisting resolves the symbolic links of the longest part of the
// absolute path p that exists and appends the rest as written.
func resolveExisting(p string) string {
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// walkPath follows the absolute path p as the system resolves it, one
// component at a time, calls visit with every place reached (each
// directory entry named on the way: a symbolic link where it lies, then
// the places its target leads through) as a clean path free of links, and
// returns where the walk ends. It stops at the first error visit returns.
func walkPath(p string, visit func(loc string) error) (string, error) {
	vol := filepath.VolumeName(p)
	todo := splitPath(p[len(vol):])
	cur := vol + string(filepath.Separator)
	links := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if name == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		if err := visit(next); err != nil {
			return "", err
		}
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			// Opening it fails or creates it; either way it is this name.
			cur = next
			continue
		case err != nil:
			return "", fmt.Errorf("check %s: %w", p, err)
		case fi.Mode()&fs.ModeSymlink == 0:
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("check %s: more than %d symbolic links (a loop?)", p, maxLinks)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("check %s: %w", p, err)
		}
		if filepath.IsAbs(target) {
			tvol := filepath.VolumeName(target)
			cur = tvol + string(filepath.Separator)
			target = target[len(tvol):]
		}
		todo = append(splitPath(target), todo...)
	}
	return cur, nil
}

// splitPath returns the names of p's components, without empty ones and ".".
func splitPath(p string) []string {
	var out []string
	for _, s := range strings.FieldsFunc(p, func(r rune) bool { return r < utf8.RuneSelf && os.IsPathSeparator(uint8(r)) }) {
		if s != "." {
			out = append(out, s)
		}
	}
	return out
}
