package workspace

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"github.com/harness-runtime/harness/action"
)

// matcher finds the next matching line. Exactly one of lit and re is the
// primary test. req, when set with re, is a set of literals one of which
// every match contains (rg's "inner literal" idea): the buffer is scanned
// for them with bytes.Index and the regexp runs only on lines that hold
// one, which avoids running Go's NFA over whole files.
//
// fold, when set, is a lower-case ASCII fragment of a case-insensitive
// literal query: req then holds the two cases of its least common byte,
// and a candidate is a place where the fragment occurs in any case.
type matcher struct {
	lit    []byte
	re     *regexp.Regexp
	req    [][]byte
	fold   []byte
	foldAt int // index in fold of the byte req looks for
}

// newMatcher compiles the query. A regexp is rewritten so that it can
// never match a newline, which makes searching a whole buffer equivalent
// to searching line by line.
func newMatcher(query string, isRegex, fold bool) (*matcher, error) {
	if !isRegex && !fold {
		return &matcher{lit: []byte(query)}, nil
	}
	pattern := query
	if !isRegex {
		pattern = regexp.QuoteMeta(query)
	}
	flags := syntax.Perl
	if fold {
		flags |= syntax.FoldCase
	}
	tree, err := syntax.Parse(pattern, flags)
	if err != nil {
		return nil, action.Errorf(action.CodeInvalidInput, "regex: %v", err)
	}
	tree = lineLocal(tree.Simplify())
	if tree.Op == syntax.OpLiteral && tree.Flags&syntax.FoldCase == 0 {
		return &matcher{lit: []byte(string(tree.Rune))}, nil
	}
	re, err := regexp.Compile(tree.String())
	if err != nil {
		return nil, action.Errorf(action.CodeInvalidInput, "regex: %v", err)
	}
	if fold && !isRegex {
		if frag := foldFragment(query); frag != nil {
			k := rarestByte(frag)
			c := frag[k]
			req := [][]byte{{c}}
			if c >= 'a' && c <= 'z' {
				req = append(req, []byte{c - 'a' + 'A'})
			}
			return &matcher{re: re, req: req, fold: frag, foldAt: k}, nil
		}
	}
	return &matcher{re: re, req: requiredLiterals(tree)}, nil
}

// foldFragment returns the longest part of an ASCII query that ASCII case
// folding finds exactly as Unicode case folding does, lower-cased, or nil.
// Only "k" and "s" have non-ASCII fold partners (KELVIN SIGN, LONG S), so
// the fragment avoids them; a non-ASCII query gets no fragment.
func foldFragment(q string) []byte {
	best, start := "", 0
	for i := 0; i <= len(q); i++ {
		if i < len(q) {
			c := q[i]
			if c >= utf8.RuneSelf {
				return nil
			}
			if c != 'k' && c != 'K' && c != 's' && c != 'S' {
				continue
			}
		}
		if i-start > len(best) {
			best = q[start:i]
		}
		start = i + 1
	}
	if best == "" {
		return nil
	}
	return bytes.ToLower([]byte(best))
}

// letterFrequency lists lower-case letters from the most to the least
// common in source code and prose, to pick a rare byte to scan for.
const letterFrequency = "etaoinsrhldcumfpgwybvkxjqz"

// rarestByte returns the index of the byte of frag least likely to occur
// in text: a letter late in letterFrequency, else any non-letter.
func rarestByte(frag []byte) int {
	best, bestScore := 0, -1
	for i, c := range frag {
		score := 13 // digits and punctuation: about as rare as a mid letter
		if j := strings.IndexByte(letterFrequency, c); j >= 0 {
			score = j
		} else if c == ' ' {
			score = -1
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// hasFoldAt reports whether buf holds the lower-case ASCII fragment frag
// at i, in any mix of cases.
func hasFoldAt(buf []byte, i int, frag []byte) bool {
	if i+len(frag) > len(buf) {
		return false
	}
	for j, c := range frag {
		b := buf[i+j]
		if b >= 'A' && b <= 'Z' {
			b += 'a' - 'A'
		}
		if b != c {
			return false
		}
	}
	return true
}

// lineLocal rewrites t in place so that it matches within one line:
// classes and "." lose "\n", literals containing "\n" can never match,
// and text anchors become line anchors.
func lineLocal(t *syntax.Regexp) *syntax.Regexp {
	switch t.Op {
	case syntax.OpAnyChar:
		t.Op = syntax.OpAnyCharNotNL
	case syntax.OpCharClass:
		var out []rune
		for i := 0; i+1 < len(t.Rune); i += 2 {
			lo, hi := t.Rune[i], t.Rune[i+1]
			if lo <= '\n' && '\n' <= hi {
				if lo < '\n' {
					out = append(out, lo, '\n'-1)
				}
				if hi > '\n' {
					out = append(out, '\n'+1, hi)
				}
				continue
			}
			out = append(out, lo, hi)
		}
		if len(out) == 0 {
			return &syntax.Regexp{Op: syntax.OpNoMatch}
		}
		t.Rune = out
	case syntax.OpLiteral:
		for _, r := range t.Rune {
			if r == '\n' {
				return &syntax.Regexp{Op: syntax.OpNoMatch}
			}
		}
	case syntax.OpBeginText:
		t.Op = syntax.OpBeginLine
	case syntax.OpEndText:
		t.Op = syntax.OpEndLine
		t.Flags &^= syntax.WasDollar
	}
	for i, sub := range t.Sub {
		t.Sub[i] = lineLocal(sub)
	}
	return t
}

// maxRequiredLiterals bounds the literal set of a prefilter; beyond it
// scanning for each literal costs more than it saves.
const maxRequiredLiterals = 8

// requiredLiterals returns a set of non-empty, case-sensitive literals of
// which every match of t contains at least one, or nil when it finds no
// useful set. Of the candidates it prefers the set whose shortest member
// is longest (fewer false candidates), then the smaller set.
func requiredLiterals(t *syntax.Regexp) [][]byte {
	switch t.Op {
	case syntax.OpLiteral:
		if t.Flags&syntax.FoldCase != 0 || len(t.Rune) == 0 {
			return nil
		}
		return [][]byte{[]byte(string(t.Rune))}
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiterals(t.Sub[0])
	case syntax.OpRepeat:
		if t.Min >= 1 {
			return requiredLiterals(t.Sub[0])
		}
	case syntax.OpConcat:
		var best [][]byte
		for _, sub := range t.Sub {
			if set := requiredLiterals(sub); betterSet(set, best) {
				best = set
			}
		}
		return best
	case syntax.OpAlternate:
		var set [][]byte
		for _, sub := range t.Sub {
			s := requiredLiterals(sub)
			if s == nil {
				return nil
			}
			set = append(set, s...)
		}
		if len(set) > maxRequiredLiterals {
			return nil
		}
		return set
	case syntax.OpCharClass:
		// A small ASCII class such as [Ee] or [-+] is a set of one-byte
		// literals.
		var set [][]byte
		for i := 0; i+1 < len(t.Rune); i += 2 {
			for r := t.Rune[i]; r <= t.Rune[i+1]; r++ {
				if r >= utf8.RuneSelf || len(set) >= maxRequiredLiterals {
					return nil
				}
				set = append(set, []byte{byte(r)})
			}
		}
		return set
	}
	return nil
}

func betterSet(a, b [][]byte) bool {
	if a == nil {
		return false
	}
	if b == nil {
		return true
	}
	if sa, sb := shortest(a), shortest(b); sa != sb {
		return sa > sb
	}
	return len(a) < len(b)
}

func shortest(set [][]byte) int {
	n := len(set[0])
	for _, l := range set[1:] {
		n = min(n, len(l))
	}
	return n
}

// litCursor remembers, per required literal, where it next occurs in the
// current buffer (-2 unknown, -1 nowhere after the last search), so each
// literal is scanned once per buffer however many candidates there are.
type litCursor []int

func (c litCursor) reset() {
	for i := range c {
		c[i] = -2
	}
}

// next returns the position of the first match in buf[from:], where from
// is the start of a line and buf ends at a line boundary. cur belongs to
// the caller, has one slot per required literal, and is reset whenever buf
// changes.
func (m *matcher) next(buf []byte, from int, cur litCursor) (int, bool) {
	if m.re == nil {
		i := bytes.Index(buf[from:], m.lit)
		return from + i, i >= 0
	}
	if m.req == nil {
		loc := m.re.FindIndex(buf[from:])
		if loc == nil {
			return 0, false
		}
		return from + loc[0], true
	}
	for from < len(buf) {
		cand := m.nextCandidate(buf, from, cur)
		if cand < 0 {
			return 0, false
		}
		if m.fold != nil && (cand < m.foldAt || !hasFoldAt(buf, cand-m.foldAt, m.fold)) {
			from = cand + 1
			continue
		}
		ls, le := lineBounds(buf, cand)
		// Most candidate lines do not match; Match, which tracks no
		// positions, rejects them about twice as fast as FindIndex.
		if line := buf[ls:le]; m.re.Match(line) {
			if loc := m.re.FindIndex(line); loc != nil {
				return ls + loc[0], true
			}
		}
		from = le + 1
	}
	return 0, false
}

// nextCandidate returns the first position at or after from where one of
// the required literals occurs, or -1.
func (m *matcher) nextCandidate(buf []byte, from int, cur litCursor) int {
	best := -1
	for i, lit := range m.req {
		p := cur[i]
		if p == -2 || (p >= 0 && p < from) {
			p = -1
			if j := bytes.Index(buf[from:], lit); j >= 0 {
				p = from + j
			}
			cur[i] = p
		}
		if p >= 0 && (best < 0 || p < best) {
			best = p
		}
	}
	return best
}

// lineBounds returns the start of the line holding buf[pos] and the index
// of its terminating "\n" (or len(buf)).
func lineBounds(buf []byte, pos int) (int, int) {
	ls := bytes.LastIndexByte(buf[:pos], '\n') + 1
	le := bytes.IndexByte(buf[pos:], '\n')
	if le < 0 {
		return ls, len(buf)
	}
	return ls, pos + le
}
