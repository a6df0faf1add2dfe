package workspace

import (
	"path"
	"path/filepath"
	"strings"
	"unicode"
)

// targetKind says why a command argument names a file: the program writes
// it, or reads it as code or configuration (a makefile, an include
// directory, a profile that steers the compiler).
type targetKind int

const (
	targetCode targetKind = iota
	targetWrite
)

// checkTarget checks p, a piece of word that the program writes
// (targetWrite) or reads as code (targetCode). It refuses, with
// argument_not_allowed naming word:
//
//   - an absolute path, a home directory, or ".." that climbs out of the
//     root (lexicalPathCheck);
//   - a path with a .git or .harness component anywhere, as spelled (before
//     and after cleaning "." and ".."), compared the way a case-folding
//     file system compares names (see protectedName);
//   - a path whose symlinks, resolved inside the root, lead outside it or
//     to a .git or .harness component (the workspace's resolveInRoot);
//   - for a write, an existing regular file with more than one link: the
//     other name of a hard link may be beneath .git/.
//
// Like every argument check it is a snapshot of the tree; the sandbox is
// what holds while the command runs.
func (c argChecker) checkTarget(word, p string, kind targetKind) error {
	if err := lexicalPathCheck(word, p); err != nil {
		return err
	}
	verb := "would write"
	if kind == targetCode {
		verb = "would read code"
	}
	if name := protectedComponent(p); name != "" {
		return refuseWord(word, "%s: argument %q %s beneath %s/, which no workspace action may do", c.cmd, word, verb, name)
	}
	// Resolved as spelled, not cleaned: "link/.." is where link leads, up
	// one, as the kernel walks it.
	rel := filepath.ToSlash(p)
	if path.Clean(rel) == "." {
		return nil
	}
	real, err := c.w.resolveInRoot(rel)
	if err != nil {
		return refuseWord(word, "%s: argument %q resolves outside the workspace root", c.cmd, word)
	}
	if name := protectedComponent(real); name != "" {
		return refuseWord(word, "%s: argument %q %s beneath %s/ through a symlink, which no workspace action may do", c.cmd, word, verb, name)
	}
	if kind != targetWrite {
		return nil
	}
	fi, err := c.w.root.Lstat(real)
	if err != nil {
		return nil // not there yet, or the program will fail to open it
	}
	if n, ok := linkCount(fi); ok && n > 1 && fi.Mode().IsRegular() {
		return refuseWord(word, "%s: argument %q is a file with %d hard links; writing it would change the other names too", c.cmd, word, n)
	}
	return nil
}

// protectedComponent returns the first component of p (split at '/' and
// '\') that protectedName says is .git or .harness, or "".
func protectedComponent(p string) string {
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if protectedName(part) {
			return part
		}
	}
	return ""
}

// protectedName reports whether a file system could take name for ".git"
// or ".harness": compared ignoring case (macOS and Windows fold it), with
// the characters HFS+ ignores (zero-width and other default-ignorable code
// points) removed and the trailing dots and spaces Windows drops trimmed,
// or as a Windows 8.3 short name (GIT~1, HARNES~1).
func protectedName(name string) bool {
	var b strings.Builder
	for _, r := range name {
		if unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Variation_Selector, r) {
			continue
		}
		b.WriteRune(r)
	}
	n := strings.TrimRight(b.String(), ". ")
	if strings.EqualFold(n, ".git") || strings.EqualFold(n, ".harness") {
		return true
	}
	for _, short := range []string{"GIT~", "HARNES~"} {
		if len(n) > len(short) && strings.EqualFold(n[:len(short)], short) && strings.Trim(n[len(short):], "0123456789") == "" {
			return true
		}
	}
	return false
}
