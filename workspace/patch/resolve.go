package patch

import (
	"fmt"
	"path"
	"strings"
)

// Kind is what a path names inside the root, as reported by the stat
// callback of Resolve. It must describe the path itself, not what a
// symlink points to.
type Kind int

// Kinds of paths.
const (
	Missing Kind = iota
	Regular
	Dir
	Symlink
	Other // devices, FIFOs, sockets
)

// Resolve sets Path and OldPath of every file of p: root-relative, clean,
// slash-separated paths.
//
// strip >= 0 removes that many leading components from names written in
// ---/+++ and "diff --git" headers (like patch -p). strip < 0 guesses, per
// name, between 0 and 1 (a/ b/ prefixes or none, which models mix): for a
// file that must exist, the level at which it exists; for a file to create,
// the level used by the patch's other files, else the level whose parent
// directory exists, else 1 for an "a/" or "b/" prefix. Two levels that both
// fit are refused (ErrAmbiguous). Git's rename from/to names are never
// stripped. Envelope names are root-relative and used as written, except
// that a name to update, delete or move that does not exist is taken
// without its first component when that file exists (models add a/).
//
// Absolute names, names with "..", NUL bytes or backslashes that could leave
// the root are refused with ErrOutsideRoot, whatever the strip level. Resolve
// does not refuse symlinks or existing targets itself: the caller sees the
// kinds and decides (package workspace refuses symlinks).
func Resolve(p *Patch, strip int, stat func(name string) Kind) error {
	// Validate every name first, so a bad header is refused before any
	// guessing looks at the disk.
	if err := CheckNames(p); err != nil {
		return err
	}
	hint := -1
	for pass := 0; pass < 2; pass++ {
		for _, f := range p.Files {
			if (pass == 0) != (f.Op != OpCreate) {
				continue // existing files first: they set the hint for new ones
			}
			used, err := resolveFile(f, strip, hint, stat)
			if err != nil {
				return err
			}
			if used >= 0 && hint < 0 {
				hint = used
			}
		}
	}
	return nil
}

// CheckNames refuses, with ErrOutsideRoot, any header name of p that is
// absolute, contains "..", a backslash or a NUL byte. Resolve calls it;
// callers that choose the target themselves call it to refuse such headers
// anyway.
func CheckNames(p *Patch) error {
	for _, f := range p.Files {
		for _, n := range []string{f.OldName, f.NewName, f.GitOldName, f.GitNewName} {
			if err := checkName(n); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkName(n string) error {
	if n == "" {
		return nil
	}
	switch {
	case strings.ContainsRune(n, 0):
		return fmt.Errorf("%w: name %q contains a NUL byte", ErrOutsideRoot, n)
	case strings.HasPrefix(n, "/") || strings.HasPrefix(n, `\`) || (len(n) >= 2 && n[1] == ':'):
		return fmt.Errorf("%w: %q is an absolute path", ErrOutsideRoot, n)
	case strings.Contains(n, `\`):
		return fmt.Errorf("%w: %q contains a backslash", ErrOutsideRoot, n)
	}
	for _, c := range strings.Split(n, "/") {
		if c == ".." {
			return fmt.Errorf("%w: %q contains ..", ErrOutsideRoot, n)
		}
	}
	return nil
}

// cleanRel returns the clean root-relative form of name, or "" if nothing
// is left.
func cleanRel(name string) string {
	c := path.Clean(name)
	if c == "." || c == "/" || c == "" {
		return ""
	}
	return c
}

// resolveFile sets f.Path/f.OldPath and returns the strip level it used (-1
// when none was involved).
func resolveFile(f *File, strip, hint int, stat func(string) Kind) (int, error) {
	if f.fixedNames {
		f.OldPath, f.Path = cleanRel(f.OldName), cleanRel(f.NewName)
		// Envelope names are root-relative, but models sometimes add git's
		// a/ prefix: use the stripped name only when the name as written
		// does not exist and the stripped one does.
		if f.OldPath != "" && strip < 0 && stat(f.OldPath) == Missing {
			if alt := cleanRel(stripN(f.OldPath, 1)); alt != "" && stat(alt) == Regular {
				f.OldPath = alt
			}
		}
		if f.Op == OpDelete || f.Op == OpModify {
			f.Path, f.OldPath = f.OldPath, ""
		}
		if f.Path == "" {
			return -1, fmt.Errorf("%w: empty file name", ErrMalformed)
		}
		if f.Op == OpRename && f.OldPath == "" {
			return -1, fmt.Errorf("%w: empty file name", ErrMalformed)
		}
		return -1, nil
	}
	levels := []int{0, 1}
	if strip >= 0 {
		levels = []int{strip}
	}
	// existing picks the level at which one of names exists.
	existing := func(names ...string) (string, int, error) {
		type hit struct {
			p     string
			level int
		}
		var hits []hit
		for _, lv := range levels {
			for _, n := range names {
				if n == "" {
					continue
				}
				c := cleanRel(stripN(n, lv))
				if c == "" {
					continue
				}
				if k := stat(c); k != Missing && k != Dir {
					dup := false
					for _, h := range hits {
						dup = dup || h.p == c
					}
					if !dup {
						hits = append(hits, hit{c, lv})
					}
					break // the old name wins over the new one at the same level
				}
			}
		}
		switch len(hits) {
		case 0:
			return "", -1, fmt.Errorf("%w: %s does not exist in the workspace", ErrNotExist, firstNonEmpty(names...))
		case 1:
			return hits[0].p, hits[0].level, nil
		}
		return "", -1, fmt.Errorf("%w: %s could mean %s or %s; pass strip to choose", ErrAmbiguous, firstNonEmpty(names...), hits[0].p, hits[1].p)
	}
	// fresh picks the level for a name that does not exist yet.
	fresh := func(name string, prefer int) (string, int, error) {
		if strip >= 0 {
			c := cleanRel(stripN(name, strip))
			if c == "" {
				return "", -1, fmt.Errorf("%w: strip %d leaves nothing of %q", ErrMalformed, strip, name)
			}
			return c, strip, nil
		}
		if prefer >= 0 {
			if c := cleanRel(stripN(name, prefer)); c != "" {
				return c, prefer, nil
			}
		}
		var fits []int
		for _, lv := range levels {
			c := cleanRel(stripN(name, lv))
			if c == "" {
				continue
			}
			if parent := path.Dir(c); parent == "." || stat(parent) == Dir {
				fits = append(fits, lv)
			}
		}
		switch {
		case len(fits) == 1:
			return cleanRel(stripN(name, fits[0])), fits[0], nil
		case len(fits) > 1:
			return "", -1, fmt.Errorf("%w: new file %s could be %s or %s; pass strip to choose", ErrAmbiguous, name, cleanRel(stripN(name, 0)), cleanRel(stripN(name, 1)))
		}
		if (strings.HasPrefix(name, "a/") || strings.HasPrefix(name, "b/")) && cleanRel(stripN(name, 1)) != "" {
			return cleanRel(stripN(name, 1)), 1, nil
		}
		return cleanRel(name), 0, nil
	}

	switch f.Op {
	case OpCreate:
		name := firstNonEmpty(f.NewName, f.GitNewName)
		if name == "" {
			return -1, fmt.Errorf("%w: new file without a name", ErrMalformed)
		}
		p, lv, err := fresh(name, hint)
		f.Path = p
		return lv, err
	case OpDelete:
		p, lv, err := existing(f.OldName)
		f.Path = p
		return lv, err
	case OpRename:
		var lv int
		if f.GitOldName != "" {
			f.OldPath, lv = cleanRel(f.GitOldName), -1
			if stat(f.OldPath) == Missing {
				return -1, fmt.Errorf("%w: %s does not exist in the workspace", ErrNotExist, f.OldPath)
			}
		} else {
			p, l, err := existing(f.OldName)
			if err != nil {
				return -1, err
			}
			f.OldPath, lv = p, l
		}
		if f.GitNewName != "" {
			f.Path = cleanRel(f.GitNewName)
		} else {
			p, _, err := fresh(f.NewName, lv)
			if err != nil {
				return -1, err
			}
			f.Path = p
		}
		if f.Path == "" || f.OldPath == "" {
			return -1, fmt.Errorf("%w: rename without names", ErrMalformed)
		}
		return lv, nil
	}
	if f.OldName == "" && f.NewName == "" {
		return -1, fmt.Errorf("%w: the patch names no file; give a path", ErrMalformed)
	}
	p, lv, err := existing(f.OldName, f.NewName)
	f.Path = p
	return lv, err
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}
