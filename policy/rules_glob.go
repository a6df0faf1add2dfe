package policy

import (
	"errors"
	"path"
	"strconv"
	"strings"
)

// Glob patterns of the rules' glob() helper, with doublestar semantics:
// the pattern and the path are split at "/"; a segment "**" matches zero
// or more whole segments; any other segment matches one segment as
// path.Match does (*, ?, [class], \ escapes; * and ? never cross a "/");
// {a,b} chooses among alternatives and may hold "/". A leading dot is not
// special: "*" matches ".env". "*.pem" matches "key.pem" but not
// "dir/key.pem", which "**/*.pem" matches.

// maxGlobAlternatives bounds what one pattern's braces expand to, so that a
// pattern cannot multiply its own matching cost without end.
const maxGlobAlternatives = 64

var errGlobBraces = errors.New("unbalanced { } or more than 64 alternatives")

// globPattern is a pattern checked, expanded and split once.
type globPattern struct {
	alts [][]segment // brace-free alternatives, split at "/"
}

// segment is one "/"-separated part of a pattern.
type segment struct {
	text string
	kind segKind
	lit  string // the literal part of segPrefix and segSuffix
}

type segKind uint8

const (
	segGeneral segKind = iota // matched by path.Match
	segLiteral                // no wildcard: compared as it is
	segAny                    // "**"
	segPrefix                 // "lit*"
	segSuffix                 // "*lit"
)

// compileGlob checks a pattern, expands its braces and splits it.
func compileGlob(pattern string) (globPattern, error) {
	if strings.HasPrefix(pattern, "/") {
		return globPattern{}, errors.New("a pattern is relative to the workspace root: drop the leading /")
	}
	alts, err := expandBraces(pattern)
	if err != nil {
		return globPattern{}, err
	}
	g := globPattern{alts: make([][]segment, 0, len(alts))}
	for _, a := range alts {
		var segs []segment
		for seg := range strings.SplitSeq(a, "/") {
			if seg == "**" {
				segs = append(segs, segment{text: seg, kind: segAny})
				continue
			}
			if _, err := path.Match(bangClass(seg), ""); err != nil {
				return globPattern{}, errors.New("bad segment " + strconv.Quote(seg) + ": " + err.Error())
			}
			segs = append(segs, newSegment(seg))
		}
		g.alts = append(g.alts, segs)
	}
	return g, nil
}

// match reports whether name, a slash-separated path relative to the
// root, matches. The empty name (an action without a path) matches no
// pattern.
func (g globPattern) match(name string) bool {
	return g.matchBase(name, baseName(name))
}

// baseName is the last segment of name.
func baseName(name string) string { return name[strings.LastIndexByte(name, '/')+1:] }

// matchBase is match with name's baseName computed by the caller, once
// for all the patterns it tries.
func (g globPattern) matchBase(name, base string) bool {
	if name == "" {
		return false
	}
	for _, a := range g.alts {
		// The last segment of name can only be matched by the last of the
		// pattern unless that is "**": most names fail here, cheaply.
		if last := &a[len(a)-1]; last.kind != segAny && !last.matches(base) {
			continue
		}
		// Likewise the first segment, for patterns anchored at a directory.
		if first := &a[0]; len(a) > 1 && first.kind == segLiteral && !hasDirPrefix(name, first.text) {
			continue
		}
		if matchSegments(a, name) {
			return true
		}
	}
	return false
}

// hasDirPrefix reports whether name's first segment is dir.
func hasDirPrefix(name, dir string) bool {
	return strings.HasPrefix(name, dir) && (len(name) == len(dir) || name[len(dir)] == '/')
}

// matchSegments matches name against brace-free pattern segments. A "**"
// works as * does in a plain wildcard match, over segments instead of
// characters, so the greedy algorithm with one backtracking point
// suffices: the work is bounded by the pattern's segments times the
// name's, whatever the number of "**", and nothing is allocated.
func matchSegments(pat []segment, name string) bool {
	end := len(name)
	pos, pi := 0, 0 // pos > end: every segment of name is consumed
	starPi, starPos := -1, 0
	for pos <= end {
		if pi < len(pat) && pat[pi].kind == segAny {
			starPi, starPos = pi, pos
			pi++
			continue
		}
		j := nextSlash(name, pos)
		if pi < len(pat) && (&pat[pi]).matches(name[pos:j]) {
			pi, pos = pi+1, j+1
			continue
		}
		if starPi < 0 {
			return false
		}
		// The last "**" takes one more segment of name.
		starPos = nextSlash(name, starPos) + 1
		pi, pos = starPi+1, starPos
	}
	for pi < len(pat) && pat[pi].kind == segAny {
		pi++
	}
	return pi == len(pat)
}

// newSegment classifies a segment so that the common shapes ("*.pem",
// ".env*", "id_rsa") are compared without path.Match.
func newSegment(seg string) segment {
	const meta = `*?[\`
	switch {
	case !strings.ContainsAny(seg, meta):
		return segment{text: seg, kind: segLiteral}
	case len(seg) > 1 && seg[0] == '*' && !strings.ContainsAny(seg[1:], meta):
		return segment{text: seg, kind: segSuffix, lit: seg[1:]}
	case len(seg) > 1 && seg[len(seg)-1] == '*' && !strings.ContainsAny(seg[:len(seg)-1], meta):
		return segment{text: seg, kind: segPrefix, lit: seg[:len(seg)-1]}
	}
	return segment{text: bangClass(seg)}
}

// bangClass writes a class negated as the shells do, [!a], as path.Match
// wants it, [^a].
func bangClass(seg string) string {
	b := []byte(seg)
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '\\':
			i++
		case b[i] == '[' && i+1 < len(b) && b[i+1] == '!':
			b[i+1] = '^'
		}
	}
	return string(b)
}

func (s *segment) matches(name string) bool {
	switch s.kind {
	case segLiteral:
		return s.text == name
	case segSuffix:
		return strings.HasSuffix(name, s.lit)
	case segPrefix:
		return strings.HasPrefix(name, s.lit)
	case segAny:
		return true
	}
	ok, _ := path.Match(s.text, name)
	return ok
}

func nextSlash(s string, from int) int {
	if i := strings.IndexByte(s[from:], '/'); i >= 0 {
		return from + i
	}
	return len(s)
}

// expandBraces returns the alternatives of a pattern's {a,b} groups,
// nested or not. A "\{" is a literal brace.
func expandBraces(p string) ([]string, error) {
	open := -1
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			open = i
		}
		if open >= 0 {
			break
		}
	}
	if open < 0 {
		if strings.ContainsRune(unescaped(p), '}') {
			return nil, errGlobBraces
		}
		return []string{p}, nil
	}
	// The matching close brace and the top-level commas between.
	depth, start := 0, open+1
	var parts []string
	end := -1
	for i := open + 1; i < len(p) && end < 0; i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			if depth == 0 {
				parts = append(parts, p[start:i])
				end = i
			} else {
				depth--
			}
		case ',':
			if depth == 0 {
				parts = append(parts, p[start:i])
				start = i + 1
			}
		}
	}
	if end < 0 {
		return nil, errGlobBraces
	}
	prefix, suffix := p[:open], p[end+1:]
	var out []string
	for _, part := range parts {
		alts, err := expandBraces(prefix + part + suffix)
		if err != nil {
			return nil, err
		}
		out = append(out, alts...)
		if len(out) > maxGlobAlternatives {
			return nil, errGlobBraces
		}
	}
	return out, nil
}

// unescaped drops escaped characters, for the check of a stray "}".
func unescaped(p string) string {
	if !strings.ContainsRune(p, '\\') {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' {
			i++
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}
