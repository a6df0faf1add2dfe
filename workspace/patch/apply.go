package patch

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
)

// DefaultFuzz is the similarity threshold of the fuzzy stage: the mean
// similarity of a hunk's context lines to the file's lines at a place.
const DefaultFuzz = 0.8

// MinFuzz is the lowest threshold Apply accepts; lower values are raised to it.
const MinFuzz = 0.5

// fuzzyMargin: fuzzy places whose scores differ by less than this count as
// matching equally well.
const fuzzyMargin = 0.05

// Options tune Apply. The zero value is the default.
type Options struct {
	// Fuzz is the similarity threshold of the fuzzy stage, in [MinFuzz, 1];
	// 0 means DefaultFuzz. At 1 only context that differs in whitespace
	// alone is accepted.
	Fuzz float64
	// NoFuzzy disables the fuzzy stage.
	NoFuzzy bool
	// TrustLineNumbers lets a numbered header choose among several places
	// where the hunk matches verbatim when its stated line is exactly one
	// of them. Off by default: the stated line alone then never decides.
	// Set it only for diffs made by a tool (diff -u, git diff) against the
	// very content being patched; a model's numbers can be off by exactly
	// the period of repetitive code.
	TrustLineNumbers bool
	// Work, if set, counts the operations of the call and bounds them by
	// its limit (see Work); nil counts into a Work of the call's own.
	Work *Work
}

// HunkResult says where and how one hunk was applied.
type HunkResult struct {
	Stage Stage
	// Line is the 1-based line of the original file where the hunk's old
	// lines start (for a hunk without old lines: the line it was inserted
	// before, len+1 at the end).
	Line int
	// Offset is Line minus the stated line (0 when the header had no numbers).
	Offset int
}

// Result is the outcome of Apply.
type Result struct {
	Content []byte
	// Stage is the most tolerant stage any hunk needed (StageExact if none).
	Stage          Stage
	Hunks          []HunkResult
	Added, Removed int
}

type fileLine struct {
	text string // without the line ending
	eol  string // "\n", "\r\n" or "" (last line without newline)
}

func splitFile(m *meter, b []byte) []fileLine {
	m.bytes(len(b))
	s := string(b) // one copy: the lines are slices of it
	out := make([]fileLine, 0, bytes.Count(b, []byte{'\n'})+1)
	for len(s) > 0 {
		k := strings.IndexByte(s, '\n')
		if k < 0 {
			out = append(out, fileLine{text: s})
			break
		}
		l := fileLine{text: s[:k], eol: "\n"}
		if strings.HasSuffix(l.text, "\r") {
			l.text, l.eol = l.text[:len(l.text)-1], "\r\n"
		}
		out = append(out, l)
		s = s[k+1:]
	}
	m.add(len(out))
	return out
}

// dominantEOL is the line ending new lines get: CRLF when most lines of the
// file end so, LF otherwise.
func dominantEOL(lines []fileLine) string {
	crlf, lf := 0, 0
	for _, l := range lines {
		switch l.eol {
		case "\r\n":
			crlf++
		case "\n":
			lf++
		}
	}
	if crlf > lf {
		return "\r\n"
	}
	return "\n"
}

// oldSide returns the context and removed lines of h, in order.
func oldSide(h *Hunk) []Line {
	out := make([]Line, 0, len(h.Lines))
	for _, l := range h.Lines {
		if l.Kind != '+' {
			out = append(out, l)
		}
	}
	return out
}

// newSide returns the context and added lines of h, in order.
func newSide(h *Hunk) []Line {
	out := make([]Line, 0, len(h.Lines))
	for _, l := range h.Lines {
		if l.Kind != '-' {
			out = append(out, l)
		}
	}
	return out
}

func hasChanges(h *Hunk) bool {
	for _, l := range h.Lines {
		if l.Kind != ' ' {
			return true
		}
	}
	return false
}

// Apply is ApplyContext without a context.
func Apply(old []byte, hunks []Hunk, opts Options) (Result, error) {
	return ApplyContext(context.Background(), old, hunks, opts)
}

// ApplyContext applies hunks to the content old and returns the new
// content.
//
// Every hunk is placed by the rules of the package documentation; hunks are
// placed in the original content and must not overlap. Either all hunks
// apply or ApplyContext returns an error (a *HunkError for the first hunk
// that failed, wrapping ErrNoMatch or ErrAmbiguous) and no content.
//
// Line endings: lines keep their own endings; added lines take the file's
// dominant ending (CRLF files stay CRLF). The final newline follows the
// patch's "\ No newline at end of file" markers when a hunk reaches the end
// of the file, and is otherwise kept as it was.
//
// Cost: at most WorkAllowance of len(old) plus the bytes of the hunks'
// lines, in operations (see Work); past opts.Work's limit it stops with an
// error wrapping ErrTooCostly. It stops with an error wrapping ctx.Err()
// soon after ctx is done.
func ApplyContext(ctx context.Context, old []byte, hunks []Hunk, opts Options) (Result, error) {
	threshold := opts.Fuzz
	if threshold == 0 {
		threshold = DefaultFuzz
	}
	threshold = max(MinFuzz, min(1, threshold))
	patchLines, patchBytes := 0, 0
	for i := range hunks {
		patchLines += len(hunks[i].Lines) + 1
		patchBytes += len(hunks[i].Header) + 1
		for _, l := range hunks[i].Lines {
			patchBytes += len(l.Text) + 2
		}
	}
	m := newMeter(ctx, opts.Work, len(old)+patchBytes)
	m.add(patchLines)
	lines := splitFile(m, old)
	if m.stopped() {
		return Result{}, m.err
	}
	mt := newMatcher(m, lines, patchLines, len(old)+patchBytes)
	n := len(lines)
	slots := make([]slot, len(hunks))
	for i := range hunks {
		h := &hunks[i]
		s := &slots[i]
		s.h, s.old, s.stated = h, oldSide(h), -1
		if len(s.old) == 0 {
			// Nothing to match: only an empty file, the top ("-0,0") or an
			// explicit end-of-file marker say where the lines go.
			switch {
			case n == 0:
				s.pos, s.placed = 0, true
			case h.AtEOF:
				s.pos, s.placed = n, true
			case h.Numbered && h.OldStart == 0:
				s.pos, s.placed = 0, true
			default:
				s.err = &HunkError{Hunk: i + 1, Header: h.Header, Detail: "the hunk has no context or removed lines, so nothing tells where it goes; add context lines"}
			}
			s.stage, s.byContent = StageExact, false
			continue
		}
		if h.Numbered && h.OldStart > 0 {
			s.stated = h.OldStart - 1
		}
	}
	p := newPlacer(m, mt, slots, n, opts, threshold)
	for _, st := range []Stage{StageOffset, StageWhitespace, StageFuzzy} {
		if st == StageFuzzy && opts.NoFuzzy {
			break
		}
		for i := range slots {
			s := &slots[i]
			if !s.open() {
				continue
			}
			s.cands, s.more = nil, false
			switch st {
			case StageOffset:
				s.cands, s.more = mt.verbatim(s.old)
			case StageWhitespace:
				s.cands, s.more = mt.whitespace(s.old)
			case StageFuzzy:
				s.cands = mt.fuzzy(s.old, threshold)
			}
			if s.h.AtEOF {
				s.cands = filterInts(s.cands, func(p int) bool { return p+len(s.old) == n })
			}
			if s.h.Anchor != "" {
				s.cands = mt.anchorPlaces(s.cands, strings.TrimSpace(s.h.Anchor))
			}
			if m.stopped() {
				return Result{}, m.err
			}
		}
		p.resolve(st)
		if m.stopped() {
			return Result{}, m.err
		}
	}
	for i := range slots {
		s := &slots[i]
		if !s.placed && s.err == nil {
			line, share, detail := mt.closest(s.old)
			s.err = &HunkError{Hunk: i + 1, Header: s.h.Header, Closest: line, Similarity: share, Detail: detail}
			if hasChanges(s.h) {
				if at, _ := mt.whitespace(newSide(s.h)); len(at) > 0 {
					s.err.Detail += fmt.Sprintf("; the hunk's new lines are already at line %d: was the patch applied already?", at[0]+1)
				}
			}
		}
		if m.stopped() {
			return Result{}, m.err
		}
		if s.err != nil {
			return Result{}, s.err
		}
	}
	m.add(n + patchLines)
	return build(lines, slots)
}

func filterInts(v []int, keep func(int) bool) []int {
	var out []int
	for _, x := range v {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// build splices the placed hunks into the file.
func build(lines []fileLine, slots []slot) (Result, error) {
	order := make([]int, len(slots))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return slots[order[a]].pos < slots[order[b]].pos })
	for k := 1; k < len(order); k++ {
		a, b := &slots[order[k-1]], &slots[order[k]]
		if a.pos+len(a.old) > b.pos {
			return Result{}, &HunkError{Hunk: order[k] + 1, Header: b.h.Header, Closest: b.pos + 1, Similarity: 1,
				Detail: fmt.Sprintf("it overlaps hunk %d", order[k-1]+1)}
		}
	}
	n := len(lines)
	eol := dominantEOL(lines)
	finalNoEOL := n > 0 && lines[n-1].eol == ""
	res := Result{Stage: StageExact, Hunks: make([]HunkResult, len(slots))}
	out := make([]fileLine, 0, n+16)
	cur := 0
	for _, i := range order {
		s := &slots[i]
		out = append(out, lines[cur:s.pos]...)
		k := s.pos
		var fix func(string) string
		if s.stage == StageWhitespace || s.stage == StageFuzzy {
			fix = reindent(s.old, lines[s.pos:s.pos+len(s.old)])
		}
		for _, l := range s.h.Lines {
			switch l.Kind {
			case ' ':
				out = append(out, lines[k])
				k++
			case '-':
				k++
				res.Removed++
			case '+':
				text := l.Text
				if fix != nil {
					text = fix(text)
				}
				out = append(out, fileLine{text: text, eol: eol})
				res.Added++
			}
		}
		cur = k
		if k == n {
			switch {
			case s.h.NewNoEOL:
				finalNoEOL = true
			case s.h.OldNoEOL:
				finalNoEOL = false
			}
		}
		res.Stage = Weaker(res.Stage, s.stage)
		hr := HunkResult{Stage: s.stage, Line: s.pos + 1}
		if s.stated >= 0 {
			hr.Offset = s.pos - s.stated
		}
		res.Hunks[i] = hr
	}
	out = append(out, lines[cur:]...)
	size := 0
	for _, l := range out {
		size += len(l.text) + 2
	}
	var b bytes.Buffer
	b.Grow(size)
	for i, l := range out {
		b.WriteString(l.text)
		switch {
		case i < len(out)-1:
			if l.eol == "" {
				b.WriteString(eol)
			} else {
				b.WriteString(l.eol)
			}
		case finalNoEOL:
		case l.eol == "":
			b.WriteString(eol)
		default:
			b.WriteString(l.eol)
		}
	}
	res.Content = b.Bytes()
	if res.Content == nil {
		res.Content = []byte{}
	}
	return res, nil
}

func leadingSpace(s string) string {
	return s[:len(s)-len(strings.TrimLeft(s, " \t"))]
}

// reindent learns, from a hunk's old lines and the file lines they were
// matched with, how the patch's indentation differs from the file's, and
// returns the same change for added lines: a constant prefix added or
// removed, or one indentation unit written as another (four spaces for a
// tab). It returns nil when the indentation agrees or no single rule
// explains every line, and added lines are then kept as written.
func reindent(old []Line, file []fileLine) func(string) string {
	type pair struct{ p, f string }
	var pairs []pair
	differ := false
	for j, l := range old {
		if strings.TrimSpace(l.Text) == "" {
			continue
		}
		pr := pair{leadingSpace(l.Text), leadingSpace(file[j].text)}
		pairs = append(pairs, pr)
		differ = differ || pr.p != pr.f
	}
	if !differ {
		return nil
	}
	// A constant prefix added to every line...
	if d, ok := strings.CutSuffix(pairs[0].f, pairs[0].p); ok && d != "" {
		all := true
		for _, pr := range pairs {
			all = all && pr.f == d+pr.p
		}
		if all {
			return func(s string) string { return d + s }
		}
	}
	// ... or removed from every line ...
	if d, ok := strings.CutSuffix(pairs[0].p, pairs[0].f); ok && d != "" {
		all := true
		for _, pr := range pairs {
			all = all && pr.p == d+pr.f
		}
		if all {
			return func(s string) string { return strings.TrimPrefix(s, d) }
		}
	}
	// ... or one unit of indentation spelled as another.
	units := []string{"\t", "    ", "  "}
	depth := func(ws, unit string) (int, bool) {
		n := strings.Count(ws, unit)
		return n, strings.Repeat(unit, n) == ws
	}
	for _, up := range units {
		for _, uf := range units {
			if up == uf {
				continue
			}
			all := true
			for _, pr := range pairs {
				np, okp := depth(pr.p, up)
				nf, okf := depth(pr.f, uf)
				all = all && okp && okf && np == nf
			}
			if all {
				return func(s string) string {
					ws := leadingSpace(s)
					if n, ok := depth(ws, up); ok {
						return strings.Repeat(uf, n) + s[len(ws):]
					}
					return s
				}
			}
		}
	}
	return nil
}
