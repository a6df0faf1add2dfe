package patch

import (
	"slices"
)

// NearRadius is how far from a hunk's expected place another place of its
// lines must lie for the line numbers to choose between them (see the
// package documentation): numbers that are off by at most this many lines
// never move a hunk onto another copy of its lines.
const NearRadius = 32

// maxRounds bounds the rounds of placement at one stage; each round places
// at least one hunk, and hunks still open after the last are refused as
// ambiguous.
const maxRounds = 8

type slot struct {
	h      *Hunk
	old    []Line
	stated int   // 0-based stated place, -1 when unknown
	cands  []int // places at the current stage, sorted
	more   bool  // the hunk matches at more places than cands lists
	pos    int
	stage  Stage
	placed bool
	// byContent: the place was found by content (and order) alone, so the
	// difference between it and the stated line is evidence about the
	// numbers of the hunks near it.
	byContent bool
	err       *HunkError
	atStated  int8 // matchesAtStated: 0 unknown, 1 yes, -1 no
}

func (s *slot) open() bool { return !s.placed && s.err == nil }

// placer decides where the hunks of one Apply go.
type placer struct {
	m         *meter
	mt        *matcher
	slots     []slot
	n         int
	opts      Options
	cover     fenwick // lines of the file covered by placed hunks
	threshold float64 // of the fuzzy stage
	// byNumbers: some hunk was placed by its line numbers; places found
	// after that may depend on it, so they are no longer evidence.
	byNumbers bool
	// ordered: the last windows found the hunks in file order.
	ordered    bool
	progressed bool
	free       [][]int // per slot: its places that overlap no placed hunk
	buf        []int
}

func newPlacer(m *meter, mt *matcher, slots []slot, n int, opts Options, threshold float64) *placer {
	p := &placer{m: m, mt: mt, slots: slots, n: n, opts: opts, threshold: threshold, cover: newFenwick(n), free: make([][]int, len(slots))}
	m.add(n)
	return p
}

func (p *placer) place(i, at int, st Stage, byContent bool) {
	s := &p.slots[i]
	s.pos, s.placed, s.byContent, s.stage = at, true, byContent, st
	if st == StageOffset && (s.stated < 0 || at == s.stated) {
		s.stage = StageExact
	}
	for l := at; l < at+len(s.old); l++ {
		p.cover.add(l)
	}
	p.m.add(len(s.old) * 2)
}

// overlaps reports whether the lines [at, at+L) touch a placed hunk.
func (p *placer) overlaps(at, L int) bool {
	p.m.add(2)
	return p.cover.sum(at+L)-p.cover.sum(at) > 0
}

// computeFree sets p.free for every open slot with places.
func (p *placer) computeFree() {
	p.buf = p.buf[:0]
	type span struct{ i, a, b int }
	var spans []span
	for i := range p.slots {
		s := &p.slots[i]
		p.free[i] = nil
		if !s.open() || len(s.cands) == 0 {
			continue
		}
		a := len(p.buf)
		for _, c := range s.cands {
			if !p.overlaps(c, len(s.old)) {
				p.buf = append(p.buf, c)
			}
		}
		spans = append(spans, span{i, a, len(p.buf)})
	}
	for _, sp := range spans {
		p.free[sp.i] = p.buf[sp.a:sp.b:sp.b]
	}
}

// resolve places what can be placed at stage st, by the rules of the
// package documentation, and marks the hunks that matched but could not be
// placed.
func (p *placer) resolve(st Stage) {
	for round := 0; round < maxRounds && !p.m.stopped(); round++ {
		// Content: a hunk with one free place goes there. Sweeping both
		// ways lets a placement free the hunks on either side of it in
		// the same round.
		progress := false
		for k := 0; k < 2*len(p.slots); k++ {
			i := k
			if k >= len(p.slots) {
				i = 2*len(p.slots) - 1 - k
			}
			if p.onlyFreePlace(i, st) {
				progress = true
			}
		}
		if progress {
			continue
		}
		// Order: the places left to each hunk by those before and after it.
		p.computeFree()
		win := p.windows()
		for i := range p.slots {
			s := &p.slots[i]
			if s.open() && len(win[i]) == 1 && !s.more {
				p.place(i, win[i][0], st, !p.byNumbers)
				progress = true
			}
		}
		if progress {
			continue
		}
		// Line numbers, where the evidence singles out one place.
		p.byLineNumbers(st, win)
		if !p.progressed {
			break
		}
		p.progressed = false
	}
	p.computeFree()
	for i := range p.slots {
		s := &p.slots[i]
		if !s.open() || len(s.cands) == 0 {
			continue
		}
		free := p.free[i]
		if len(free) == 0 && s.more {
			free = s.cands // taken, but more places were not listed
		}
		if len(free) == 0 {
			s.err = &HunkError{Hunk: i + 1, Header: s.h.Header, Closest: s.cands[0] + 1, Similarity: 1,
				Detail: "its lines only match where another hunk of this file applies"}
			continue
		}
		places := make([]int, len(free))
		for k, c := range free {
			places[k] = c + 1
		}
		s.err = &HunkError{Hunk: i + 1, Header: s.h.Header, Ambiguous: true, Places: places, MorePlaces: s.more}
	}
}

// onlyFreePlace places slot i at its one place that overlaps no placed
// hunk, if it has exactly one.
func (p *placer) onlyFreePlace(i int, st Stage) bool {
	s := &p.slots[i]
	if !s.open() || len(s.cands) == 0 || s.more {
		return false
	}
	free := -1
	for _, c := range s.cands {
		if !p.overlaps(c, len(s.old)) {
			if free >= 0 {
				return false
			}
			free = c
		}
	}
	if free < 0 {
		return false
	}
	p.place(i, free, st, len(s.cands) == 1 || !p.byNumbers)
	return true
}

// windows returns, for each open slot with places, its free places that
// keep the hunks in the order they are written, counting the placed hunks
// and the places of the others (a place is kept when some choice of places
// for all the hunks puts them in order with it). When no such choice
// exists the hunks are not in file order and order tells nothing: the free
// places are returned.
func (p *placer) windows() [][]int {
	type part struct {
		i     int
		fixed bool
	}
	var parts []part
	win := make([][]int, len(p.slots))
	for i := range p.slots {
		s := &p.slots[i]
		switch {
		case s.placed:
			parts = append(parts, part{i, true})
		case s.open() && len(p.free[i]) > 0 && !s.more:
			win[i] = p.free[i]
			parts = append(parts, part{i, false})
		}
	}
	p.m.add(len(p.slots))
	inOrder := true
	// Forward: each hunk starts at or after the earliest end of the one
	// before it.
	prevEnd := 0
	for _, pt := range parts {
		s := &p.slots[pt.i]
		if pt.fixed {
			if s.pos < prevEnd {
				inOrder = false
				break
			}
			prevEnd = s.pos + len(s.old)
			continue
		}
		k, _ := slices.BinarySearch(win[pt.i], prevEnd)
		p.m.add(1 + len(win[pt.i])>>4)
		win[pt.i] = win[pt.i][k:]
		if len(win[pt.i]) == 0 {
			inOrder = false
			break
		}
		prevEnd = win[pt.i][0] + len(s.old)
	}
	// Backward: each hunk ends at or before the latest start of the one
	// after it.
	nextStart := p.n
	for k := len(parts) - 1; inOrder && k >= 0; k-- {
		pt := parts[k]
		s := &p.slots[pt.i]
		if pt.fixed {
			if s.pos+len(s.old) > nextStart {
				inOrder = false
				break
			}
			nextStart = s.pos
			continue
		}
		w := win[pt.i]
		e, _ := slices.BinarySearch(w, nextStart-len(s.old)+1)
		win[pt.i] = w[:e]
		if e == 0 {
			inOrder = false
			break
		}
		nextStart = win[pt.i][e-1]
	}
	p.ordered = inOrder
	if !inOrder {
		for _, pt := range parts {
			if !pt.fixed {
				win[pt.i] = p.free[pt.i]
			}
		}
	}
	return win
}

// byLineNumbers places the open hunks whose line numbers, with the
// evidence for them, single out one of their places:
//   - the stated line, when the numbers hold for every hunk (see
//     numbersHold) and the hunk's lines do not repeat near it: no other
//     place within NearRadius/4 lines (a number off by a few lines is the
//     commonest mistake) and at most one within NearRadius (in code that
//     repeats more closely, a number off by one repetition is a likely
//     mistake);
//   - otherwise the stated line moved by the shift that the nearest hunks
//     placed by content show (both, when there are two, showing the same
//     shift), when no other place lies within NearRadius lines of it: hunks
//     are shifted by different amounts as often as not, and a shift seen at
//     one hunk says nothing exact about another in code that repeats.
//
// Options.TrustLineNumbers lets the stated line choose among verbatim
// places without these conditions.
func (p *placer) byLineNumbers(st Stage, win [][]int) {
	before, after := p.evidence()
	hold := p.numbersHold(st)
	// Hunks are placed in patch order; each must still fit after the
	// hunks placed before it in this pass and before the hunks placed
	// earlier that come after it.
	nextFixed := make([]int, len(p.slots)+1)
	nextFixed[len(p.slots)] = p.n
	for i := len(p.slots) - 1; i >= 0; i-- {
		nextFixed[i] = nextFixed[i+1]
		if s := &p.slots[i]; s.placed {
			nextFixed[i] = s.pos
		}
	}
	lastEnd := 0
	for i := range p.slots {
		s := &p.slots[i]
		if s.placed {
			lastEnd = max(lastEnd, s.pos+len(s.old))
			continue
		}
		w := win[i]
		if !s.open() || len(w) == 0 || s.more || s.stated < 0 {
			continue
		}
		at, ok := p.expected(i, st, w, hold, before[i], after[i])
		if !ok || p.overlaps(at, len(s.old)) {
			continue
		}
		if p.ordered && (at < lastEnd || at+len(s.old) > nextFixed[i+1]) {
			continue
		}
		p.place(i, at, st, false)
		p.byNumbers, p.progressed = true, true
		lastEnd = max(lastEnd, at+len(s.old))
	}
}

// expected is the place the numbers of slot i choose among w, if they do.
func (p *placer) expected(i int, st Stage, w []int, hold bool, before, after int) (int, bool) {
	s := &p.slots[i]
	p.m.add(4)
	if p.opts.TrustLineNumbers && st == StageOffset {
		if _, found := slices.BinarySearch(w, s.stated); found {
			return s.stated, true
		}
	}
	at, repeats := s.stated, 1
	if !hold {
		var d int
		switch {
		case before >= 0 && after >= 0:
			b, a := &p.slots[before], &p.slots[after]
			d = b.pos - b.stated
			if a.pos-a.stated != d {
				return 0, false
			}
		case before >= 0:
			b := &p.slots[before]
			d = b.pos - b.stated
		case after >= 0:
			a := &p.slots[after]
			d = a.pos - a.stated
		default:
			return 0, false
		}
		at, repeats = s.stated+d, 0
	}
	if _, found := slices.BinarySearch(w, at); !found {
		return 0, false
	}
	if others(w, at, NearRadius) > repeats || repeats > 0 && others(w, at, NearRadius/4) > 0 {
		return 0, false
	}
	return at, true
}

// others counts the places of w other than at within r lines of it.
func others(w []int, at, r int) int {
	lo, _ := slices.BinarySearch(w, at-r)
	hi, _ := slices.BinarySearch(w, at+r+1)
	return hi - lo - 1
}

// numbersHold reports whether the line numbers of the patch are borne out
// wherever they can be checked at stage st: every hunk has numbers, the
// stated places follow one another without overlapping, each placed hunk
// is at its stated line, and each other hunk matches there
// (among its places at this stage, or, without places yet, by the most
// tolerant comparison the options allow). A patch made by a tool against
// this content always passes; numbers that are off pass only where every
// hunk lands on a copy of its own lines.
func (p *placer) numbersHold(st Stage) bool {
	any, end := false, 0
	for i := range p.slots {
		s := &p.slots[i]
		if len(s.old) == 0 || s.err != nil {
			continue
		}
		// The stated places must be in order and apart, as a tool writes
		// them: numbers that make two hunks overlap are not all right.
		if s.stated < end {
			return false
		}
		end = s.stated + len(s.old)
		switch {
		case s.placed:
			if s.pos != s.stated {
				return false
			}
		case len(s.cands) > 0:
			if _, found := slices.BinarySearch(s.cands, s.stated); !found {
				return false
			}
		default:
			if !p.matchesAtStated(i) {
				return false
			}
		}
		any = true
	}
	p.m.add(len(p.slots))
	return any
}

// matchesAtStated reports, once per slot, whether its old lines match at
// its stated line by the most tolerant comparison the options allow.
func (p *placer) matchesAtStated(i int) bool {
	s := &p.slots[i]
	if s.atStated == 0 {
		s.atStated = -1
		if p.mt.looseAt(s.old, s.stated) || !p.opts.NoFuzzy && p.mt.fuzzyAt(s.old, s.stated, p.threshold) {
			s.atStated = 1
		}
	}
	return s.atStated > 0
}

// evidence returns, per slot, the nearest slot before and after it (-1 if
// none) placed by content with a stated line.
func (p *placer) evidence() (before, after []int) {
	before, after = make([]int, len(p.slots)), make([]int, len(p.slots))
	last := -1
	for i := range p.slots {
		before[i] = last
		if s := &p.slots[i]; s.placed && s.byContent && s.stated >= 0 {
			last = i
		}
	}
	last = -1
	for i := len(p.slots) - 1; i >= 0; i-- {
		after[i] = last
		if s := &p.slots[i]; s.placed && s.byContent && s.stated >= 0 {
			last = i
		}
	}
	p.m.add(2 * len(p.slots))
	return before, after
}

// fenwick counts covered lines; sum(k) is the count among lines [0, k).
type fenwick []int32

func newFenwick(n int) fenwick { return make(fenwick, n+1) }

func (f fenwick) add(line int) {
	for i := line + 1; i < len(f); i += i & -i {
		f[i]++
	}
}

func (f fenwick) sum(k int) int {
	s := 0
	for i := min(k, len(f)-1); i > 0; i -= i & -i {
		s += int(f[i])
	}
	return s
}
