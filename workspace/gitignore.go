package workspace

import (
	"fmt"
	"path"
	"strings"
)

// globPattern is one compiled gitignore-style pattern: "*", "?" and
// "[...]" within a name (path.Match syntax, "\" escapes), and "**" as a
// whole name matching zero or more names.
type globPattern struct {
	segs     []string
	anchored bool // matched against the whole relative path, not the base name
	dirOnly  bool // pattern ended in "/": matches directories only
	negate   bool // pattern started with "!": re-includes
}

// compileGlob compiles a gitignore-style pattern (already stripped of
// comments, "!" and surrounding blanks). A pattern containing "/" other
// than at its end is anchored; otherwise it matches a base name at any
// depth.
func compileGlob(p string) (globPattern, error) {
	var g globPattern
	if strings.HasSuffix(p, "/") {
		g.dirOnly = true
		p = strings.TrimRight(p, "/")
	}
	if strings.Contains(p, "/") {
		g.anchored = true
		p = strings.TrimLeft(p, "/")
	}
	if p == "" {
		return g, fmt.Errorf("empty pattern")
	}
	g.segs = strings.Split(p, "/")
	for _, s := range g.segs {
		if s == "**" {
			continue
		}
		if _, err := path.Match(s, ""); err != nil {
			return g, fmt.Errorf("pattern %q: %w", p, err)
		}
	}
	return g, nil
}

// match reports whether rel (slash separated, relative to the pattern's
// base directory) matches.
func (g *globPattern) match(rel string, isDir bool) bool {
	if g.dirOnly && !isDir {
		return false
	}
	if !g.anchored {
		return len(g.segs) == 1 && matchName(g.segs[0], path.Base(rel))
	}
	return matchSegs(g.segs, strings.Split(rel, "/"))
}

func matchName(pat, name string) bool {
	if pat == "**" {
		return true
	}
	ok, _ := path.Match(pat, name)
	return ok
}

// matchSegs matches pattern names against path names, "**" spanning zero
// or more names. It runs in O(len(pat)*len(names)) time (dynamic
// programming), so hostile patterns such as "**/**/**/…" stay cheap.
func matchSegs(pat, names []string) bool {
	// cur[j]: pat[:i] matches names[:j].
	cur := make([]bool, len(names)+1)
	next := make([]bool, len(names)+1)
	cur[0] = true
	for i := range pat {
		clear(next)
		if pat[i] == "**" {
			seen := false
			for j := 0; j <= len(names); j++ {
				seen = seen || cur[j]
				next[j] = seen
			}
		} else {
			for j := 1; j <= len(names); j++ {
				next[j] = cur[j-1] && matchName(pat[i], names[j-1])
			}
		}
		cur, next = next, cur
	}
	return cur[len(names)]
}

// ignoreFile holds the rules of one .gitignore file.
type ignoreFile struct {
	base  string // root-relative directory holding the file, "." for the root
	rules []globPattern
}

// parseGitignore parses .gitignore content as git does: blank lines and
// "#" comments are skipped, trailing blanks are dropped unless escaped,
// "!" negates, "\#" and "\!" are literal. Malformed patterns are skipped
// (git ignores them too).
func parseGitignore(base string, data []byte) *ignoreFile {
	f := &ignoreFile{base: base}
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		line = trimTrailingBlanks(line)
		if line == "" || line[0] == '#' {
			continue
		}
		negate := false
		if line[0] == '!' {
			negate = true
			line = line[1:]
		} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		g, err := compileGlob(line)
		if err != nil {
			continue
		}
		g.negate = negate
		f.rules = append(f.rules, g)
	}
	return f
}

func trimTrailingBlanks(s string) string {
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		if len(s) >= 2 && s[len(s)-2] == '\\' {
			return s[:len(s)-2] + s[len(s)-1:]
		}
		s = s[:len(s)-1]
	}
	return s
}

// decide returns whether the file's rules match rel (root-relative) and,
// if so, whether the last matching rule ignores it.
func (f *ignoreFile) decide(rel string, isDir bool) (matched, ignored bool) {
	sub := rel
	if f.base != "." {
		if !strings.HasPrefix(rel, f.base+"/") {
			return false, false
		}
		sub = rel[len(f.base)+1:]
	}
	for i := len(f.rules) - 1; i >= 0; i-- {
		if f.rules[i].match(sub, isDir) {
			return true, !f.rules[i].negate
		}
	}
	return false, false
}

// ignoreStack is the .gitignore files that apply to a directory, the
// outermost first. A deeper file overrides a shallower one.
type ignoreStack []*ignoreFile

func (s ignoreStack) ignored(rel string, isDir bool) bool {
	for i := len(s) - 1; i >= 0; i-- {
		if m, ign := s[i].decide(rel, isDir); m {
			return ign
		}
	}
	return false
}
