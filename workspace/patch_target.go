package workspace

import (
	"bytes"
	"io"
	"io/fs"
	"strings"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/workspace/patch"
)

// current is what a file looks like now.
type current struct {
	exists  bool
	content []byte
	mode    fs.FileMode
}

// checkTarget validates a root-relative path that a patch reads or writes:
// the path rules (checkWritePath for writes, and for proposals whenever
// writes are enabled, so that a proposal is refused like its apply would
// be; checkPath otherwise), and no symlink at it or at any of its parents:
// a patch never writes through a link.
//
// The common case (a path whose existing names are all plain files and
// directories, none protected) is settled by one lstat per name; anything
// else is decided by checkTargetSlow, which gives every refusal its code
// and message.
func (w *Workspace) checkTarget(p string, write bool) (string, error) {
	rel, _, err := w.checkTargetSeen(p, write)
	return rel, err
}

// seen is what checkTarget's walk saw at the target: when known, info is
// its lstat (never a symlink's), or nil if it does not exist.
type seen struct {
	known bool
	info  fs.FileInfo
}

// checkTargetSeen is checkTarget that also says what it saw at the target,
// when its walk went there, so that reading it needs no second lstat.
func (w *Workspace) checkTargetSeen(p string, write bool) (string, seen, error) {
	if rel, last, ok := w.plainTarget(p, write); ok {
		return rel, seen{known: true, info: last}, nil
	}
	rel, err := w.checkTargetSlow(p, write)
	return rel, seen{}, err
}

// plainTarget reports whether checkTargetSlow(p, write) would accept p,
// and with which path, when it can tell from one walk: p parses, each of
// its names that exists was lstat'ed and none is a symlink (so following
// links and not following them lead to the same file, and the real path is
// the path as spelled), what exists at p is no special file and a
// directory if spelled as one, and the write rules hold for the spelled
// path. It returns false, never an error, whenever checkTargetSlow might
// refuse or must look further.
//
// With true it also returns the lstat of what is at p, or nil when some
// name on the way does not exist.
func (w *Workspace) plainTarget(p string, write bool) (string, fs.FileInfo, bool) {
	if write && !w.opts.WriteEnabled {
		return "", nil, false
	}
	writeRules := w.opts.WriteEnabled
	rel, wantDir, err := parsePath(p)
	if err != nil || (writeRules && (wantDir || rel == "." || refuseProtected(rel) != nil)) {
		return "", nil, false
	}
	var last fs.FileInfo // what is at rel, if it all exists
	for i := 0; ; {
		j := strings.IndexByte(rel[i:], '/')
		prefix := rel
		if j >= 0 {
			prefix = rel[:i+j]
		}
		fi, err := w.root.Lstat(prefix)
		if err != nil {
			if !isNotExist(err) {
				return "", nil, false
			}
			break
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", nil, false
		}
		if j < 0 {
			last = fi
			break
		}
		i += j + 1
	}
	if last != nil && (refuseSpecial(rel, last) != nil || (wantDir && !last.IsDir())) {
		return "", nil, false
	}
	return rel, last, true
}

// checkTargetSlow is checkTarget step by step: the path rules, then an
// lstat of every name for symlinks.
func (w *Workspace) checkTargetSlow(rel string, write bool) (string, error) {
	var err error
	if write || w.opts.WriteEnabled {
		rel, err = w.checkWritePath(rel)
	} else {
		rel, err = w.checkPath(rel)
	}
	if err != nil {
		return "", err
	}
	parts := strings.Split(rel, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		fi, err := w.root.Lstat(p)
		if err != nil {
			if isNotExist(err) {
				break
			}
			return "", fsError(p, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", action.Errorf(action.CodePathOutsideRoot, "path %s: %s is a symlink; patches never write through symlinks", quote(rel), quote(p))
		}
	}
	return rel, nil
}

// readCurrent reads rel (already checked) if it exists.
func (w *Workspace) readCurrent(rel string) (current, error) {
	return w.readSeen(rel, seen{})
}

// readSeen is readCurrent for a target checkTargetSeen has just walked to:
// what it saw there replaces a second lstat.
func (w *Workspace) readSeen(rel string, at seen) (current, error) {
	fi := at.info
	if !at.known {
		var err error
		fi, err = w.root.Lstat(rel)
		if isNotExist(err) {
			return current{}, nil
		}
		if err != nil {
			return current{}, fsError(rel, err)
		}
	}
	if fi == nil {
		return current{}, nil
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return current{}, action.Errorf(action.CodePathOutsideRoot, "path %s is a symlink; patches never write through symlinks", quote(rel))
	}
	// Not a symlink: what lstat saw is what a stat would see.
	f, fi, err := openStatted(w.root, rel, fi, w.dev)
	if err != nil {
		return current{}, err
	}
	defer f.Close()
	if fi.Size() > maxPatchFileBytes {
		return current{}, action.Errorf(action.CodeTooLarge, "path %s is larger than %d bytes", quote(rel), maxPatchFileBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPatchFileBytes+1))
	if err != nil {
		return current{}, fsError(rel, err)
	}
	if len(b) > maxPatchFileBytes {
		return current{}, action.Errorf(action.CodeTooLarge, "path %s is larger than %d bytes", quote(rel), maxPatchFileBytes)
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return current{}, action.Errorf(action.CodeInvalidInput, "path %s is a binary file (it contains NUL bytes); patches apply to text files", quote(rel))
	}
	return current{exists: true, content: b, mode: fi.Mode().Perm()}, nil
}

// statKind answers patch.Resolve about a clean root-relative name.
func (w *Workspace) statKind(name string) patch.Kind {
	fi, err := w.root.Lstat(name)
	switch {
	case err != nil && isNotExist(err):
		return patch.Missing
	case err != nil:
		return patch.Other
	case fi.Mode()&fs.ModeSymlink != 0:
		return patch.Symlink
	case fi.IsDir():
		return patch.Dir
	case fi.Mode().IsRegular():
		return patch.Regular
	}
	return patch.Other
}
