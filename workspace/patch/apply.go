package patch

import (
	"bytes"
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

func splitFile(b []byte) []fileLine {
	var out []fileLine
	for len(b) > 0 {
		k := bytes.IndexByte(b, '\n')
		if k < 0 {
			out = append(out, fileLine{text: string(b)})
			break
		}
		l := fileLine{text: string(b[:k]), eol: "\n"}
		if strings.HasSuffix(l.text, "\r") {
			l.text, l.eol = l.text[:len(l.text)-1], "\r\n"
		}
		out = append(out, l)
		b = b[k+1:]
	}
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

type matcher struct {
	lines []fileLine
	norm  []string
	index map[string][]int // normalized text -> line numbers (0-based)
}

func newMatcher(lines []fileLine) *matcher {
	m := &matcher{lines: lines, norm: make([]string, len(lines))}
	for i, l := range lines {
		m.norm[i] = strings.TrimSpace(l.text)
	}
	return m
}

func (m *matcher) lineIndex() map[string][]int {
	if m.index == nil {
		m.index = make(map[string][]int, len(m.norm))
		for i, s := range m.norm {
			m.index[s] = append(m.index[s], i)
		}
	}
	return m.index
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

// verbatim lists the places where old matches the file exactly (line
// endings aside).
func (m *matcher) verbatim(old []Line) []int {
	var out []int
	L := len(old)
	if L == 0 {
		return nil
	}
	for _, p := range m.lineIndex()[strings.TrimSpace(old[0].Text)] {
		if p+L > len(m.lines) {
			continue
		}
		ok := true
		for j := range old {
			if m.lines[p+j].text != old[j].Text {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, p)
		}
	}
	return out
}

// loose lists the places where old matches without leading and trailing
// whitespace.
func (m *matcher) loose(old []Line) []int {
	var out []int
	L := len(old)
	if L == 0 {
		return nil
	}
	norm := make([]string, L)
	for j, l := range old {
		norm[j] = strings.TrimSpace(l.Text)
	}
	for _, q := range m.lineIndex()[norm[0]] {
		p := q
		if p+L > len(m.lines) {
			continue
		}
		ok := true
		for j := 1; j < L; j++ {
			if m.norm[p+j] != norm[j] {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, p)
		}
	}
	return out
}

// fuzzy lists the best places where every removed line matches without
// whitespace and the context lines are similar enough on average; places
// within fuzzyMargin of the best score are all returned.
func (m *matcher) fuzzy(old []Line, threshold float64) []int {
	L := len(old)
	norm := make([]string, L)
	firstRemoved, context := -1, 0
	for j, l := range old {
		norm[j] = strings.TrimSpace(l.Text)
		if l.Kind == '-' && firstRemoved < 0 {
			firstRemoved = j
		}
		if l.Kind == ' ' {
			context++
		}
	}
	if context == 0 {
		return nil // nothing to be fuzzy about: the whitespace stage decided
	}
	seen := map[int]bool{}
	var starts []int
	add := func(p int) {
		if p >= 0 && p+L <= len(m.lines) && !seen[p] {
			seen[p] = true
			starts = append(starts, p)
		}
	}
	idx := m.lineIndex()
	if firstRemoved >= 0 {
		for _, q := range idx[norm[firstRemoved]] {
			add(q - firstRemoved)
		}
	} else {
		for j := range old {
			if norm[j] == "" {
				continue
			}
			for _, q := range idx[norm[j]] {
				add(q - j)
			}
		}
	}
	sort.Ints(starts)
	if len(starts) > maxFuzzyStarts {
		return nil // too repetitive to score safely: refuse rather than guess
	}
	type scored struct {
		p     int
		score float64
	}
	var ok []scored
	best := 0.0
	for _, p := range starts {
		sum, fail, seen := 0.0, false, 0
		for j, l := range old {
			if l.Kind == '-' {
				if m.norm[p+j] != norm[j] {
					fail = true
					break
				}
				continue
			}
			sum += similarity(m.norm[p+j], norm[j])
			seen++
			// Stop once the remaining lines cannot lift the mean to the threshold.
			if (sum+float64(context-seen))/float64(context) < threshold {
				fail = true
				break
			}
		}
		if fail {
			continue
		}
		s := sum / float64(context)
		if s+1e-12 < threshold {
			continue
		}
		ok = append(ok, scored{p, s})
		if s > best {
			best = s
		}
	}
	var out []int
	for _, c := range ok {
		if c.score > best-fuzzyMargin {
			out = append(out, c.p)
		}
	}
	return out
}

// maxFuzzyStarts bounds the places the fuzzy stage scores for one hunk.
const maxFuzzyStarts = 4096

// maxSimilarityBytes bounds the lines compared by edit distance; longer
// lines are equal or not.
const maxSimilarityBytes = 256

// similarity is 1 minus the edit distance over the longer length.
func similarity(a, b string) float64 {
	if a == b {
		return 1
	}
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	if len(a) > maxSimilarityBytes || len(b) > maxSimilarityBytes {
		return 0
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			c = min(c, prev[j]+1, cur[j-1]+1)
			cur[j] = c
		}
		prev, cur = cur, prev
	}
	return 1 - float64(prev[len(b)])/float64(max(len(a), len(b)))
}

// closest finds the place where most old lines match without whitespace,
// for error messages.
func (m *matcher) closest(old []Line) (line int, share float64, detail string) {
	L := len(old)
	if L == 0 || len(m.lines) == 0 {
		return 0, 0, ""
	}
	norm := make([]string, L)
	for j, l := range old {
		norm[j] = strings.TrimSpace(l.Text)
	}
	votes := map[int]int{}
	idx := m.lineIndex()
	for j := range old {
		if norm[j] == "" {
			continue
		}
		for _, q := range idx[norm[j]] {
			p := q - j
			if p >= 0 && p+L <= len(m.lines) {
				votes[p]++
			}
		}
	}
	bestP, bestV := -1, 0
	for p, v := range votes {
		if v > bestV || (v == bestV && p < bestP) {
			bestP, bestV = p, v
		}
	}
	if bestP < 0 {
		return 0, 0, fmt.Sprintf("no line of the hunk was found in the file (first: %q)", old[0].Text)
	}
	for j := range old {
		if m.norm[bestP+j] != norm[j] {
			kind := "context"
			if old[j].Kind == '-' {
				kind = "removed"
			}
			detail = fmt.Sprintf("at line %d the file has %q where the hunk's %s line is %q",
				bestP+j+1, m.lines[bestP+j].text, kind, old[j].Text)
			break
		}
	}
	return bestP + 1, float64(bestV) / float64(L), detail
}

type slot struct {
	h         *Hunk
	old       []Line
	stated    int // 0-based stated place, -1 when unknown
	cands     []int
	pos       int
	stage     Stage
	placed    bool
	byContent bool
	err       *HunkError
}

// Apply applies hunks to the content old and returns the new content.
//
// Every hunk is placed by the rules of the package documentation; hunks are
// placed in the original content and must not overlap. Either all hunks
// apply or Apply returns an error (a *HunkError for the first hunk that
// failed, wrapping ErrNoMatch or ErrAmbiguous) and no content.
//
// Line endings: lines keep their own endings; added lines take the file's
// dominant ending (CRLF files stay CRLF). The final newline follows the
// patch's "\ No newline at end of file" markers when a hunk reaches the end
// of the file, and is otherwise kept as it was.
func Apply(old []byte, hunks []Hunk, opts Options) (Result, error) {
	threshold := opts.Fuzz
	if threshold == 0 {
		threshold = DefaultFuzz
	}
	threshold = max(MinFuzz, min(1, threshold))
	lines := splitFile(old)
	m := newMatcher(lines)
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

	for _, st := range []Stage{StageOffset, StageWhitespace, StageFuzzy} {
		if st == StageFuzzy && opts.NoFuzzy {
			break
		}
		for i := range slots {
			s := &slots[i]
			if s.placed || s.err != nil {
				continue
			}
			switch st {
			case StageOffset:
				s.cands = m.verbatim(s.old)
			case StageWhitespace:
				s.cands = m.loose(s.old)
			case StageFuzzy:
				s.cands = m.fuzzy(s.old, threshold)
			}
			if s.h.AtEOF {
				s.cands = filterInts(s.cands, func(p int) bool { return p+len(s.old) == n })
			}
			if s.h.Anchor != "" {
				s.cands = anchorFilter(m, s.cands, strings.TrimSpace(s.h.Anchor))
			}
		}
		place := func(i, p int, byContent bool) {
			s := &slots[i]
			s.pos, s.placed, s.byContent = p, true, byContent
			s.stage = st
			if st == StageOffset && (s.stated < 0 || p == s.stated) {
				s.stage = StageExact
			}
		}
		for progress := true; progress; {
			progress = false
			for i := range slots {
				s := &slots[i]
				if s.placed || s.err != nil || len(s.cands) == 0 {
					continue
				}
				if free := freePlaces(slots, i); len(free) == 1 {
					place(i, free[0], true)
					progress = true
				}
			}
			if progress {
				continue
			}
			for i := range slots {
				s := &slots[i]
				if s.placed || s.err != nil || len(s.cands) == 0 {
					continue
				}
				win := inWindow(slots, i, freePlaces(slots, i))
				if len(win) == 1 {
					place(i, win[0], true)
					progress = true
					continue
				}
				if d, ok := drift(slots, i); ok && s.stated >= 0 && containsInt(win, s.stated+d) {
					place(i, s.stated+d, false)
					progress = true
					continue
				}
				if opts.TrustLineNumbers && st == StageOffset && s.stated >= 0 && containsInt(win, s.stated) {
					place(i, s.stated, false)
					progress = true
				}
			}
		}
		for i := range slots {
			s := &slots[i]
			if s.placed || s.err != nil || len(s.cands) == 0 {
				continue
			}
			free := freePlaces(slots, i)
			if len(free) == 0 {
				s.err = &HunkError{Hunk: i + 1, Header: s.h.Header, Closest: s.cands[0] + 1, Similarity: 1,
					Detail: "its lines only match where another hunk of this file applies"}
				continue
			}
			places := make([]int, len(free))
			for k, p := range free {
				places[k] = p + 1
			}
			s.err = &HunkError{Hunk: i + 1, Header: s.h.Header, Ambiguous: true, Places: places}
		}
	}
	for i := range slots {
		s := &slots[i]
		if !s.placed && s.err == nil {
			line, share, detail := m.closest(s.old)
			s.err = &HunkError{Hunk: i + 1, Header: s.h.Header, Closest: line, Similarity: share, Detail: detail}
			if at := m.loose(newSide(s.h)); len(at) > 0 && hasChanges(s.h) {
				s.err.Detail += fmt.Sprintf("; the hunk's new lines are already at line %d: was the patch applied already?", at[0]+1)
			}
		}
		if s.err != nil {
			return Result{}, s.err
		}
	}
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

func containsInt(v []int, x int) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}

// anchorFilter keeps, for each line equal to anchor, the first place at or
// after it. Without such a line the anchor is ignored.
func anchorFilter(m *matcher, cands []int, anchor string) []int {
	occ := m.lineIndex()[anchor]
	if len(occ) == 0 || len(cands) <= 1 {
		return cands
	}
	var out []int
	for _, a := range occ {
		k := sort.SearchInts(cands, a)
		if k < len(cands) && !containsInt(out, cands[k]) {
			out = append(out, cands[k])
		}
	}
	sort.Ints(out)
	return out
}

// freePlaces returns the candidates of slot i that overlap no placed hunk.
func freePlaces(slots []slot, i int) []int {
	s := &slots[i]
	L := len(s.old)
	return filterInts(s.cands, func(p int) bool {
		for j := range slots {
			o := &slots[j]
			if j == i || !o.placed {
				continue
			}
			oL := len(o.old)
			if p < o.pos+oL && o.pos < p+L {
				return false
			}
			if L == 0 && p > o.pos && p < o.pos+oL {
				return false
			}
		}
		return true
	})
}

// inWindow keeps the places that respect the order of the hunks: after the
// placed hunks written before slot i and before those written after it.
func inWindow(slots []slot, i int, places []int) []int {
	lo, hi := 0, int(^uint(0)>>1)
	for j := range slots {
		o := &slots[j]
		if !o.placed {
			continue
		}
		if j < i {
			lo = max(lo, o.pos+len(o.old))
		} else if j > i {
			hi = min(hi, o.pos)
		}
	}
	L := len(slots[i].old)
	return filterInts(places, func(p int) bool { return p >= lo && p+L <= hi })
}

// drift returns the shift between stated and actual places shown by the
// nearest hunks placed by content before and after slot i, when they agree.
func drift(slots []slot, i int) (int, bool) {
	var before, after *slot
	for j := i - 1; j >= 0; j-- {
		if o := &slots[j]; o.placed && o.byContent && o.stated >= 0 {
			before = o
			break
		}
	}
	for j := i + 1; j < len(slots); j++ {
		if o := &slots[j]; o.placed && o.byContent && o.stated >= 0 {
			after = o
			break
		}
	}
	switch {
	case before != nil && after != nil:
		d1, d2 := before.pos-before.stated, after.pos-after.stated
		return d1, d1 == d2
	case before != nil:
		return before.pos - before.stated, true
	case after != nil:
		return after.pos - after.stated, true
	}
	return 0, false
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
	var b bytes.Buffer
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
