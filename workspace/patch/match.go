package patch

import (
	"fmt"
	"index/suffixarray"
	"math/bits"
	"slices"
	"strings"
)

// Bounds of the matcher. Each keeps one search proportional to the hunk
// that asked for it, whatever the file.
const (
	// directPlaces: a hunk one of whose lines occurs at most this many
	// times in the file is looked for at those occurrences, one check per
	// line; otherwise in a suffix array of the file, built once.
	directPlaces = 16
	// maxPlaces bounds the places listed for one hunk; a hunk that matches
	// at more is refused as ambiguous (its places cannot all be weighed).
	maxPlaces = 256
	// maxFuzzyStarts bounds the places the fuzzy stage scores for one hunk:
	// a hunk that could fit at more is too repetitive to score safely.
	maxFuzzyStarts = 4096
	// maxSimilarityBytes bounds the lines compared by edit distance; longer
	// lines are equal or not.
	maxSimilarityBytes = 256
	// closestVotes bounds, per line of a hunk that matched nowhere, the
	// occurrences of its lines counted to find its closest place; the
	// rarest lines vote first.
	closestVotes = 64
)

// lineIDs numbers the distinct lines of a file so that a hunk's lines are
// compared as integers, and lists where each number occurs.
type lineIDs struct {
	ids   []int32          // the number of each line
	dict  map[string]int32 // text -> number
	start []int32          // the lines numbered k are pos[start[k]:start[k+1]]
	pos   []int32
	sa    *suffixarray.Index // over the numbers, 4 bytes each; built on demand
}

func newLineIDs(m *meter, texts []string) *lineIDs {
	x := &lineIDs{ids: make([]int32, len(texts)), dict: make(map[string]int32, len(texts))}
	var count []int32
	for i, t := range texts {
		if !m.bytes(len(t)) {
			return x
		}
		id, ok := x.dict[t]
		if !ok {
			id = int32(len(count))
			x.dict[t] = id
			count = append(count, 0)
		}
		x.ids[i] = id
		count[id]++
	}
	x.start = make([]int32, len(count)+1)
	for k, c := range count {
		x.start[k+1] = x.start[k] + c
	}
	x.pos = make([]int32, len(texts))
	fill := slices.Clone(x.start[:len(count)])
	for i, id := range x.ids {
		x.pos[fill[id]] = int32(i)
		fill[id]++
	}
	m.add(2 * len(texts))
	return x
}

// occurrences returns the sorted lines numbered id.
func (x *lineIDs) occurrences(id int32) []int32 { return x.pos[x.start[id]:x.start[id+1]] }

// lookup returns the number of t, or -1 when no line of the file is t.
func (x *lineIDs) lookup(m *meter, t string) int32 {
	m.bytes(len(t))
	if id, ok := x.dict[t]; ok {
		return id
	}
	return -1
}

// encode writes ids 4 bytes each, the first byte of each with its high bit
// set and the others without, so that a match in the encoded text always
// starts at a line.
func encode(ids []int32) []byte {
	b := make([]byte, 4*len(ids))
	for i, id := range ids {
		b[4*i] = 0x80 | byte(id>>21)&0x7f
		b[4*i+1] = byte(id>>14) & 0x7f
		b[4*i+2] = byte(id>>7) & 0x7f
		b[4*i+3] = byte(id) & 0x7f
	}
	return b
}

// places returns the sorted places (0-based first lines) where the lines
// numbered q occur in a row, at most limit of them; more reports that
// there are more than returned. Its cost is proportional to len(q) (times
// the logarithm of the file's length on the suffix-array path), plus the
// places returned, plus once per file the suffix array.
func (x *lineIDs) places(m *meter, q []int32, limit int) (out []int, more bool) {
	n, L := len(x.ids), len(q)
	if L == 0 || L > n {
		return nil, false
	}
	best, bestCount := -1, int32(1<<30)
	for j, id := range q {
		if id < 0 {
			return nil, false
		}
		if c := x.start[id+1] - x.start[id]; c < bestCount {
			best, bestCount = j, c
		}
	}
	m.add(L)
	if bestCount <= directPlaces {
		for _, o := range x.occurrences(q[best]) {
			p := int(o) - best
			if p >= 0 && p+L <= n && x.equalAt(m, p, q) {
				out = append(out, p)
			}
		}
		if len(out) > limit {
			return out[:limit], true
		}
		return out, false
	}
	if x.sa == nil {
		// SA-IS is linear; count its steps per byte of the encoded file.
		if !m.add(16 * n) {
			return nil, false
		}
		x.sa = suffixarray.New(encode(x.ids))
	}
	// Each of the ~log2(4n) steps of the binary search compares up to 4L bytes.
	if !m.bytes(4 * L * (bits.Len(uint(4*n)) + 1)) {
		return nil, false
	}
	found := x.sa.Lookup(encode(q), limit+1)
	m.add(len(found) * bits.Len(uint(len(found)))) // and sorting them
	out = make([]int, len(found))
	for i, b := range found {
		out[i] = b / 4
	}
	slices.Sort(out)
	if len(out) > limit {
		return out[:limit], true
	}
	return out, false
}

// equalAt reports whether the lines from p on are numbered q.
func (x *lineIDs) equalAt(m *meter, p int, q []int32) bool {
	j := 0
	for j < len(q) && x.ids[p+j] == q[j] {
		j++
	}
	m.add(1 + j)
	return j == len(q)
}

// matcher finds the places of a hunk's old lines in one file.
type matcher struct {
	m     *meter
	lines []fileLine
	norm  []string // each line without leading and trailing whitespace
	exact *lineIDs
	loose *lineIDs // over norm; built on demand

	// placesLeft bounds the places listed over all hunks of a call, so
	// that many hunks that each match in many places cost what the input
	// allows; a hunk listed after it ran out is treated as matching at too
	// many places.
	placesLeft int
	// fuzzyLeft bounds the operations of the fuzzy stage over all hunks;
	// a hunk that the fuzzy stage could not finish scoring is not placed
	// by it.
	fuzzyLeft int64
	stamp     []int32 // per line, for collecting distinct fuzzy starts
	gen       int32
	row       [2][]int // rows of the edit-distance table
}

func newMatcher(m *meter, lines []fileLine, patchLines int, input int) *matcher {
	mt := &matcher{m: m, lines: lines, norm: make([]string, len(lines))}
	texts := make([]string, len(lines))
	for i, l := range lines {
		texts[i] = l.text
		mt.norm[i] = strings.TrimSpace(l.text)
	}
	m.add(len(lines))
	mt.exact = newLineIDs(m, texts)
	mt.placesLeft = len(lines) + patchLines + 4096
	mt.fuzzyLeft = 4*int64(input) + 1<<18
	return mt
}

func (mt *matcher) looseIDs() *lineIDs {
	if mt.loose == nil {
		mt.loose = newLineIDs(mt.m, mt.norm)
	}
	return mt.loose
}

func (mt *matcher) ids(x *lineIDs, texts []string) []int32 {
	q := make([]int32, len(texts))
	for j, t := range texts {
		q[j] = x.lookup(mt.m, t)
	}
	return q
}

// search lists the places of q in x within the call-wide bound on listed
// places: once it is spent, a hunk with several places gets a few of
// them, enough for a message, and counts as matching at too many.
func (mt *matcher) search(x *lineIDs, q []int32) ([]int, bool) {
	limit := max(8, min(maxPlaces, mt.placesLeft))
	out, more := x.places(mt.m, q, limit)
	if len(out) > 1 {
		mt.placesLeft -= len(out)
		if mt.placesLeft < 0 {
			more = true
		}
	}
	return out, more
}

// verbatim lists the places where old matches the file exactly (line
// endings aside).
func (mt *matcher) verbatim(old []Line) ([]int, bool) {
	texts := make([]string, len(old))
	for j, l := range old {
		texts[j] = l.Text
	}
	return mt.search(mt.exact, mt.ids(mt.exact, texts))
}

// looseAt reports whether old matches the file at p without leading and
// trailing whitespace.
func (mt *matcher) looseAt(old []Line, p int) bool {
	if p < 0 || p+len(old) > len(mt.lines) {
		return false
	}
	j := 0
	for j < len(old) && mt.norm[p+j] == strings.TrimSpace(old[j].Text) {
		j++
	}
	mt.m.bytes(j * 16)
	return j == len(old)
}

// fuzzyAt reports whether old fits at p by the rule of the fuzzy stage
// (its score at p reaches threshold; whether another place scores better
// is not asked).
func (mt *matcher) fuzzyAt(old []Line, p int, threshold float64) bool {
	if p < 0 || p+len(old) > len(mt.lines) || mt.fuzzyLeft <= 0 {
		return false
	}
	x := mt.looseIDs()
	norm := normLines(old)
	q := mt.ids(x, norm)
	context := 0
	for _, l := range old {
		if l.Kind != '-' {
			context++
		}
	}
	if context == 0 {
		return false
	}
	s, ok := mt.score(old, norm, q, p, context, threshold, nil)
	return ok && s+1e-12 >= threshold
}

// whitespace lists the places where old matches without leading and
// trailing whitespace.
func (mt *matcher) whitespace(old []Line) ([]int, bool) {
	x := mt.looseIDs()
	return mt.search(x, mt.ids(x, normLines(old)))
}

func normLines(old []Line) []string {
	out := make([]string, len(old))
	for j, l := range old {
		out[j] = strings.TrimSpace(l.Text)
	}
	return out
}

// fuzzy lists the best places where every removed line matches without
// whitespace and the context lines are similar enough on average; places
// within fuzzyMargin of the best score are all returned. A hunk that could
// fit at more than maxFuzzyStarts places, or whose scoring would go past
// the call's fuzzy allowance, gets none.
func (mt *matcher) fuzzy(old []Line, threshold float64) []int {
	L := len(old)
	if L == 0 || L > len(mt.lines) || mt.fuzzyLeft <= 0 {
		return nil
	}
	x := mt.looseIDs()
	norm := normLines(old)
	q := mt.ids(x, norm)
	anchor, context := -1, 0
	for j, l := range old {
		if l.Kind == '-' {
			if q[j] < 0 {
				return nil // a removed line that is not in the file
			}
			if anchor < 0 || x.start[q[j]+1]-x.start[q[j]] < x.start[q[anchor]+1]-x.start[q[anchor]] {
				anchor = j
			}
		} else {
			context++
		}
	}
	if context == 0 {
		return nil // nothing to be fuzzy about: the whitespace stage decided
	}
	// Distinct starts, collected with a per-line stamp; each line of the
	// hunk may vote for a start once, so the votes looked at are bounded
	// by L times the starts kept.
	if mt.stamp == nil {
		mt.stamp = make([]int32, len(mt.lines))
	}
	mt.gen++
	var starts []int
	seen := 0
	add := func(p int) bool {
		seen++
		if p < 0 || p+L > len(mt.lines) || mt.stamp[p] == mt.gen {
			return seen <= L*maxFuzzyStarts
		}
		mt.stamp[p] = mt.gen
		starts = append(starts, p)
		return len(starts) <= maxFuzzyStarts
	}
	if anchor >= 0 {
		for _, o := range x.occurrences(q[anchor]) {
			if !add(int(o) - anchor) {
				mt.fuzzyCharge(seen)
				return nil
			}
		}
	} else {
		for j := range old {
			if norm[j] == "" || q[j] < 0 {
				continue
			}
			for _, o := range x.occurrences(q[j]) {
				if !add(int(o) - j) {
					mt.fuzzyCharge(seen)
					return nil // too repetitive to score safely: refuse rather than guess
				}
			}
		}
	}
	if !mt.fuzzyCharge(seen + len(starts)) {
		return nil
	}
	slices.Sort(starts)
	type scored struct {
		p     int
		score float64
	}
	var ok []scored
	best := 0.0
	memo := map[[2]int32]float64{}
	for _, p := range starts {
		s, fit := mt.score(old, norm, q, p, context, threshold, memo)
		if mt.fuzzyLeft < 0 {
			return nil // out of allowance: no place rather than a partial choice
		}
		if !fit || s+1e-12 < threshold {
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

// fuzzyCharge counts n operations of the fuzzy stage against the call's
// fuzzy allowance and reports whether it lasts.
func (mt *matcher) fuzzyCharge(n int) bool {
	mt.fuzzyLeft -= int64(n)
	if mt.fuzzyLeft < 0 {
		mt.fuzzyLeft = -1
		return false
	}
	return mt.m.add(n)
}

// score is the mean similarity of old's context lines to the file's lines
// at p, when every removed line matches there; fit is false when a removed
// line differs, when the remaining lines cannot lift the mean to threshold,
// or when the fuzzy allowance ran out (then mt.fuzzyLeft < 0). memo, if
// not nil, keeps similarities by file line and hunk line.
func (mt *matcher) score(old []Line, norm []string, q []int32, p, context int, threshold float64, memo map[[2]int32]float64) (float64, bool) {
	x := mt.loose
	sum, seen := 0.0, 0
	for j, l := range old {
		fid := x.ids[p+j]
		if l.Kind == '-' {
			if !mt.fuzzyCharge(1) || fid != q[j] {
				return 0, false
			}
			continue
		}
		key := [2]int32{fid, int32(j)}
		s, done := memo[key]
		if !done {
			if !mt.fuzzyCharge(1 + len(mt.norm[p+j])*len(norm[j])/64) {
				return 0, false
			}
			s = mt.similarity(mt.norm[p+j], norm[j])
			if memo != nil {
				memo[key] = s
			}
		}
		if !mt.fuzzyCharge(1) {
			return 0, false
		}
		sum += s
		seen++
		// Stop once the remaining lines cannot lift the mean to the threshold.
		if (sum+float64(context-seen))/float64(context) < threshold {
			return 0, false
		}
	}
	return sum / float64(context), true
}

// similarity is 1 minus the edit distance over the longer length.
func (mt *matcher) similarity(a, b string) float64 {
	if a == b {
		return 1
	}
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	if len(a) > maxSimilarityBytes || len(b) > maxSimilarityBytes {
		return 0
	}
	if cap(mt.row[0]) < len(b)+1 {
		mt.row[0], mt.row[1] = make([]int, len(b)+1, maxSimilarityBytes+1), make([]int, len(b)+1, maxSimilarityBytes+1)
	}
	prev, cur := mt.row[0][:len(b)+1], mt.row[1][:len(b)+1]
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
// for error messages. Lines vote for the places their occurrences imply,
// the rarest lines first, up to closestVotes occurrences per line of the
// hunk in all: lines too common to count say least about the place.
func (mt *matcher) closest(old []Line) (line int, share float64, detail string) {
	L := len(old)
	if L == 0 || len(mt.lines) == 0 {
		return 0, 0, ""
	}
	x := mt.looseIDs()
	norm := normLines(old)
	q := mt.ids(x, norm)
	count := func(j int) int {
		if q[j] < 0 || norm[j] == "" {
			return 0
		}
		return int(x.start[q[j]+1] - x.start[q[j]])
	}
	voters := make([]int, 0, L)
	for j := range old {
		if count(j) > 0 {
			voters = append(voters, j)
		}
	}
	slices.SortStableFunc(voters, func(a, b int) int { return count(a) - count(b) })
	left := closestVotes * L
	votes := map[int]int{}
	for _, j := range voters {
		occ := x.occurrences(q[j])
		if len(occ) > left {
			if len(votes) > 0 {
				break
			}
			occ = occ[:left]
		}
		left -= len(occ)
		mt.m.add(len(occ))
		for _, o := range occ {
			p := int(o) - j
			if p >= 0 && p+L <= len(mt.lines) {
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
	// The share is of the lines with text that match at that place, voters
	// or not.
	matching := 0
	for j := range old {
		if mt.norm[bestP+j] == norm[j] {
			if norm[j] != "" {
				matching++
			}
		} else if detail == "" {
			kind := "context"
			if old[j].Kind == '-' {
				kind = "removed"
			}
			detail = fmt.Sprintf("at line %d the file has %q where the hunk's %s line is %q",
				bestP+j+1, mt.lines[bestP+j].text, kind, old[j].Text)
		}
	}
	mt.m.add(L)
	return bestP + 1, float64(matching) / float64(L), detail
}

// anchorPlaces keeps, for each line equal to anchor, the first place at or
// after it. Without such a line the anchor is ignored.
func (mt *matcher) anchorPlaces(cands []int, anchor string) []int {
	x := mt.looseIDs()
	id := x.lookup(mt.m, anchor)
	if id < 0 || len(cands) <= 1 {
		return cands
	}
	var out []int
	occ := x.occurrences(id)
	mt.m.add(len(occ))
	for _, a := range occ {
		k, _ := slices.BinarySearch(cands, int(a))
		if k < len(cands) && (len(out) == 0 || out[len(out)-1] != cands[k]) {
			out = append(out, cands[k])
		}
	}
	return out
}
