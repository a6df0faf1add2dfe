package workspace

import (
	"path/filepath"
	"strings"

	"github.com/harness-runtime/harness/action"
)

// checkPath validates a path taken from input and returns it as a clean
// slash-separated path relative to the root ("." for the root itself).
// It refuses, before any cleaning, absolute paths, NUL bytes, ".." that
// leaves the root and over-long names.
//
// TODO(workspace-files): harden (see issue 3); this is the minimal version.
func (w *Workspace) checkPath(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if strings.ContainsRune(p, 0) {
		return "", action.Errorf(action.CodeInvalidInput, "path contains a NUL byte")
	}
	if filepath.IsAbs(p) {
		return "", action.Errorf(action.CodePathOutsideRoot, "path %q is absolute", p)
	}
	if !filepath.IsLocal(p) {
		return "", action.Errorf(action.CodePathOutsideRoot, "path %q leaves the workspace root", p)
	}
	return filepath.ToSlash(filepath.Clean(p)), nil
}

// checkWritePath is checkPath plus the rules for writes: nothing beneath
// .git/ or .harness/ may be written by any workspace action.
func (w *Workspace) checkWritePath(p string) (string, error) {
	rel, err := w.checkPath(p)
	if err != nil {
		return "", err
	}
	first, _, _ := strings.Cut(rel, "/")
	if first == ".git" || first == ".harness" {
		return "", action.Errorf(action.CodePathOutsideRoot, "writes beneath %s/ are refused", first)
	}
	return rel, nil
}
