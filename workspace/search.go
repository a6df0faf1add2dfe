package workspace

import (
	"bytes"
	"context"
	"io"
	"os"
	"regexp"
	"regexp/syntax"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/harness-runtime/harness/action"
)

const (
	defaultMaxResults = 100
	// hardMaxResults caps max_results whatever the input asks.
	hardMaxResults = 100_000
	// maxQueryBytes bounds the query; RE2 compiles in linear time but a
	// megabyte pattern is never a real search.
	maxQueryBytes = 4096
	// maxLineText is how much of a matching line a result carries.
	maxLineText = 240
	// searchBufSize is the initial read buffer per worker; it grows for
	// longer lines up to searchMaxLine, beyond which a line is searched in
	// pieces (a match straddling two pieces is missed, line numbers stay
	// right).
	searchBufSize = 64 << 10
	searchMaxLine = 4 << 20
	// maxIgnoreFileBytes bounds a .gitignore read during a search.
	maxIgnoreFileBytes = 1 << 20
)

// searchText implements workspace_search_text.
//
// Input: query (required); regex (RE2 syntax, so matching time is linear
// in the input: no catastrophic backtracking); case_insensitive; path (a
// directory or one file, default the root); glob (gitignore-style: without
// "/" it matches the file name, with "/" the root-relative path; "**"
// spans directories); max_results (default 100, capped at 100000).
//
// Matching is per line: a match never spans a newline ("\s" and "[^x]"
// do not match "\n", "^" and "$" match at line boundaries). The walk skips
// .git directories, paths ignored by .gitignore files (from the root down
// to each directory; no global excludes), symlinks (never followed),
// directories on other devices, special files, and binary files (NUL in
// the first 8 KiB), and directories deeper than 256 levels. An explicitly
// named file is searched even if ignored. It stops after
// Options.MaxSearchFiles files or max_results matches.
//
// Payload: {"query", "matches": [{"path": root-relative, "line": 1-based,
// "column": 1-based byte offset of the match in the line, "text": the
// line, at most 240 bytes around the match}], "files_searched": files
// opened and scanned, "truncated": true when the file cap or max_results
// cut the search short}. Matches are ordered by path (depth first, names in
// byte order), then line; for a given tree and input they are the same on
// every run, though files_searched may vary when results are truncated.
func (w *Workspace) searchText(ctx context.Context, in map[string]any) (map[string]any, error) {
	q, err := parseSearchInput(in)
	if err != nil {
		return nil, err
	}
	m, err := newMatcher(q.query, q.regex, q.caseInsensitive)
	if err != nil {
		return nil, err
	}
	rel, err := w.checkPath(q.path)
	if err != nil {
		return nil, err
	}
	s := &search{
		ctx:        ctx,
		w:          w,
		m:          m,
		glob:       q.glob,
		maxResults: q.maxResults,
		maxFiles:   w.opts.MaxSearchFiles,
	}
	if err := s.run(rel); err != nil {
		return nil, err
	}
	matches := make([]any, len(s.matches))
	for i, mt := range s.matches {
		matches[i] = map[string]any{"path": mt.path, "line": mt.line, "column": mt.column, "text": mt.text}
	}
	return map[string]any{
		"query":          q.query,
		"matches":        matches,
		"files_searched": s.filesSearched.Load(),
		"truncated":      s.truncated,
	}, nil
}

type searchInput struct {
	query           string
	path            string
	regex           bool
	caseInsensitive bool
	glob            *globPattern
	maxResults      int
}

func parseSearchInput(in map[string]any) (searchInput, error) {
	var q searchInput
	var ok bool
	var err error
	if q.query, ok, err = strArg(in, "query"); err != nil {
		return q, err
	}
	if !ok || q.query == "" {
		return q, action.Errorf(action.CodeInvalidInput, "query is required and must not be empty")
	}
	if len(q.query) > maxQueryBytes {
		return q, action.Errorf(action.CodeInvalidInput, "query is longer than %d bytes", maxQueryBytes)
	}
	if q.path, _, err = strArg(in, "path"); err != nil {
		return q, err
	}
	if q.regex, err = boolArg(in, "regex", false); err != nil {
		return q, err
	}
	if q.caseInsensitive, err = boolArg(in, "case_insensitive", false); err != nil {
		return q, err
	}
	glob, _, err := strArg(in, "glob")
	if err != nil {
		return q, err
	}
	if glob != "" {
		if strings.IndexByte(glob, 0) >= 0 || len(glob) > maxPathBytes {
			return q, action.Errorf(action.CodeInvalidInput, "glob is not a valid pattern")
		}
		g, err := compileGlob(glob)
		if err != nil {
			return q, action.Errorf(action.CodeInvalidInput, "glob: %v", err)
		}
		q.glob = &g
	}
	n, err := intArg(in, "max_results", defaultMaxResults)
	if err != nil {
		return q, err
	}
	if n < 1 {
		return q, action.Errorf(action.CodeInvalidInput, "max_results must be at least 1")
	}
	q.maxResults = int(min(n, hardMaxResults))
	return q, nil
}

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

type match struct {
	path   string
	line   int
	column int
	text   string
}

// search is one workspace_search_text run: a walker goroutine lists
// directories depth first in byte order and numbers the files it queues;
// GOMAXPROCS workers scan them; the caller's goroutine collects results in
// file order and stops everything once the files before it hold
// max_results matches, so the answer does not depend on scheduling.
type search struct {
	ctx        context.Context
	w          *Workspace
	m          *matcher
	glob       *globPattern
	maxResults int
	maxFiles   int

	dev    uint64
	hasDev bool

	filesSearched atomic.Int64
	filesCapped   atomic.Bool  // the walk stopped at maxFiles or skipped too-deep directories
	total         atomic.Int64 // batches queued by a walk that ran to its end, else -1
	matches       []match
	truncated     bool
}

// dirHandle is a directory opened as its own root, shared by the files
// queued from it and closed when the last of them is done.
type dirHandle struct {
	root *os.Root
	refs atomic.Int32
}

func (d *dirHandle) release() {
	if d.refs.Add(-1) == 0 {
		d.root.Close()
	}
}

// searchJob is a batch of files from one directory. Batching keeps the
// channel hand-offs (and the scheduler work behind them) per batch rather
// than per file; seq numbers batches in walk order.
type searchJob struct {
	seq   int
	dir   *dirHandle
	names []string
	rels  []string
}

// maxBatch is the most files in one searchJob.
const maxBatch = 32

type searchResult struct {
	seq     int
	matches []match
}

func (s *search) run(rel string) error {
	fi, err := s.w.root.Stat(rel)
	if err != nil {
		return fsError(rel, err)
	}
	if !fi.IsDir() {
		return s.scanOne(rel)
	}
	s.dev, s.hasDev = deviceOf(fi)
	dir, err := s.w.root.OpenRoot(rel)
	if err != nil {
		return fsError(rel, err)
	}
	if name := pseudoFSOfRoot(dir); name != "" {
		dir.Close()
		return action.Errorf(action.CodeInvalidInput, "path %s is on the %s pseudo file system, which is never served", quote(rel), name)
	}
	ignores := s.ancestorIgnores(rel)

	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	workers := max(1, runtime.GOMAXPROCS(0))
	jobs := make(chan searchJob, 4*workers)
	results := make(chan searchResult, 4*workers)
	s.total.Store(-1)

	go func() {
		defer close(jobs)
		ws := &walkState{jobs: jobs}
		if !s.walk(ctx, dir, rel, 0, ignores, ws) {
			s.total.Store(int64(ws.seq))
		}
		if ws.batch.dir != nil { // a batch left unsent by a cut walk
			ws.batch.dir.release()
		}
	}()

	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := newScanner(s.m, s.maxResults)
			sc.dev, sc.hasDev = s.dev, s.hasDev
			for job := range jobs {
				if ctx.Err() != nil {
					job.dir.release()
					continue
				}
				var ms []match
				for i, name := range job.names {
					// One match past max_results is the proof that the
					// answer is truncated.
					if len(ms) > s.maxResults || ctx.Err() != nil {
						break
					}
					sc.limit = s.maxResults + 1 - len(ms)
					fm, scanned := sc.scanFile(ctx, job.dir.root, name, job.rels[i])
					if scanned {
						s.filesSearched.Add(1)
					}
					ms = append(ms, fm...)
				}
				job.dir.release()
				results <- searchResult{seq: job.seq, matches: ms}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(results)
	}()

	// Collect in file order: a file's matches count only once every file
	// queued before it is done, so which matches fill max_results does
	// not depend on which worker ran first.
	pending := make(map[int][]match)
	frontier := 0
	full := false
	for r := range results {
		if full {
			continue
		}
		pending[r.seq] = r.matches
		for !full {
			ms, ok := pending[frontier]
			if !ok {
				break
			}
			delete(pending, frontier)
			frontier++
			s.matches = append(s.matches, ms...)
			if len(s.matches) >= s.maxResults {
				full = true
				cancel()
			}
		}
	}
	if err := s.ctx.Err(); err != nil {
		return action.Errorf(action.CodeTimeout, "search interrupted: %v", err)
	}
	if len(s.matches) > s.maxResults {
		s.matches = s.matches[:s.maxResults]
		s.truncated = true
	}
	if s.filesCapped.Load() {
		s.truncated = true
	}
	if full && int64(frontier) != s.total.Load() {
		// Stopped on max_results with files left (or the walk cut short).
		s.truncated = true
	}
	return nil
}

// scanOne searches the single file rel, opened like a read: symlinks are
// followed only inside the root and special files are refused.
func (s *search) scanOne(rel string) error {
	f, fi, err := s.w.openFile(rel)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := newScanner(s.m, s.maxResults+1)
	ms, binary, err := sc.scan(s.ctx, f, fi.Size(), rel)
	if err != nil {
		if s.ctx.Err() != nil {
			return action.Errorf(action.CodeTimeout, "search interrupted: %v", err)
		}
		return fsError(rel, err)
	}
	if !binary {
		s.filesSearched.Add(1)
	}
	if len(ms) > s.maxResults {
		ms, s.truncated = ms[:s.maxResults], true
	}
	s.matches = ms
	return nil
}

// ancestorIgnores loads the .gitignore files of every directory from the
// root down to rel's parent, so that a search of a sub-directory honours
// the same rules as a search from the root.
func (s *search) ancestorIgnores(rel string) ignoreStack {
	if rel == "." {
		return nil
	}
	var stack ignoreStack
	dir := "."
	parts := strings.Split(rel, "/")
	for i := range parts {
		if f := readIgnoreFile(s.w.root, dir, joinRel(dir, ".gitignore")); f != nil {
			stack = append(stack, f)
		}
		dir = strings.Join(parts[:i+1], "/")
	}
	return stack
}

// readIgnoreFile reads and parses the .gitignore at name (relative to
// root) for the directory base, or returns nil when there is none usable.
func readIgnoreFile(root *os.Root, base, name string) *ignoreFile {
	f, fi, err := openRegular(root, name)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi.Size() > maxIgnoreFileBytes {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreFileBytes))
	if err != nil {
		return nil
	}
	return parseGitignore(base, data)
}

// walkState is the walker's running state: the batch being filled, the
// next batch number and the number of files queued.
type walkState struct {
	jobs  chan<- searchJob
	batch searchJob
	seq   int
	files int
}

// flush sends the pending batch, if any. It reports false when the
// search was cancelled first (the batch's handle reference is dropped).
func (ws *walkState) flush(ctx context.Context) bool {
	if len(ws.batch.names) == 0 {
		return true
	}
	job := ws.batch
	job.seq = ws.seq
	ws.batch = searchJob{}
	select {
	case ws.jobs <- job:
		ws.seq++
		return true
	case <-ctx.Done():
		job.dir.release()
		return false
	}
}

// walk queues the files of dir (root-relative rel) and recurses into its
// sub-directories. It takes ownership of dir. It reports whether it was
// cut short (cancelled, or the file cap reached).
func (s *search) walk(ctx context.Context, dir *os.Root, rel string, depth int, ignores ignoreStack, ws *walkState) (cut bool) {
	h := &dirHandle{root: dir}
	h.refs.Store(1)
	defer h.release()
	if ctx.Err() != nil {
		return true
	}
	ents, err := readDirTypes(dir)
	if err != nil {
		return false // unreadable directory: skipped, as ripgrep does
	}
	slices.SortFunc(ents, func(a, b dirEntry) int { return strings.Compare(a.name, b.name) })
	for _, e := range ents {
		if e.name == ".gitignore" && e.mode.IsRegular() {
			if f := readIgnoreFile(dir, rel, ".gitignore"); f != nil {
				ignores = append(ignores[:len(ignores):len(ignores)], f)
			}
			break
		}
	}
	for _, e := range ents {
		if ctx.Err() != nil {
			return true
		}
		name := e.name
		childRel := joinRel(rel, name)
		switch {
		case e.mode.IsDir():
			if name == ".git" || ignores.ignored(childRel, true) {
				continue
			}
			fi, err := dir.Lstat(name)
			if err != nil || !fi.IsDir() {
				continue
			}
			if d, ok := deviceOf(fi); s.hasDev && ok && d != s.dev {
				continue // a mount point: not crossed
			}
			if depth+1 >= maxWalkDepth {
				s.filesCapped.Store(true) // reported as truncated
				continue
			}
			// Files of this directory that sort before the sub-directory
			// are queued before its contents.
			if !ws.flush(ctx) {
				return true
			}
			sub, err := dir.OpenRoot(name)
			if err != nil {
				continue
			}
			if s.walk(ctx, sub, childRel, depth+1, ignores, ws) {
				return true
			}
		case e.mode.IsRegular():
			if ignores.ignored(childRel, false) {
				continue
			}
			if s.glob != nil && !s.glob.match(childRel, false) {
				continue
			}
			if ws.files >= s.maxFiles {
				s.filesCapped.Store(true)
				ws.flush(ctx)
				return true
			}
			ws.files++
			if ws.batch.dir == nil {
				h.refs.Add(1)
				ws.batch.dir = h
			}
			ws.batch.names = append(ws.batch.names, name)
			ws.batch.rels = append(ws.batch.rels, childRel)
			if len(ws.batch.names) >= maxBatch && !ws.flush(ctx) {
				return true
			}
		}
	}
	return !ws.flush(ctx)
}

// scanner is one worker's state: its read buffer is reused across files.
type scanner struct {
	m      *matcher
	buf    []byte
	limit  int
	cur    litCursor
	dev    uint64 // device of the search root, when hasDev
	hasDev bool
}

func newScanner(m *matcher, limit int) *scanner {
	return &scanner{m: m, buf: make([]byte, searchBufSize), limit: limit, cur: make(litCursor, len(m.req))}
}

// scanFile searches the file name of dir (rel from the workspace root).
// scanned is false when the file could not be opened, is not a regular
// file, or is binary.
func (sc *scanner) scanFile(ctx context.Context, dir *os.Root, name, rel string) (ms []match, scanned bool) {
	f, err := dir.OpenFile(name, openFlags, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	// The type seen in the directory listing may be stale: check the
	// handle itself, so a FIFO or device swapped in is never read.
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	// A file on another device than the search root (a bind mount, or an
	// overlay file system's lower layer) may be a view of /proc or /sys:
	// check its file system then, and only then, to keep the common case
	// at one fstat.
	if d, ok := deviceOf(fi); sc.hasDev && ok && d != sc.dev && pseudoFSOf(f) != "" {
		return nil, false
	}
	ms, binary, _ := sc.scan(ctx, f, fi.Size(), rel)
	return ms, !binary
}

// scan streams r through the buffer, a region of whole lines at a time,
// and returns up to sc.limit matches. size is the length fstat reported
// at open: reading stops there, which saves a read per file (a file that
// grows meanwhile is searched as it was).
func (sc *scanner) scan(ctx context.Context, r io.Reader, size int64, rel string) (ms []match, binary bool, err error) {
	buf := sc.buf
	n := 0          // bytes held in buf
	lineNo := 1     // line number of buf[0]
	var total int64 // bytes read so far
	first := true
	eof := size == 0
	for n > 0 || !eof {
		if ctx.Err() != nil {
			return ms, false, ctx.Err()
		}
		if n == len(buf) && len(buf) < searchMaxLine {
			nb := make([]byte, 2*len(buf))
			copy(nb, buf[:n])
			buf = nb
			sc.buf = nb
		}
		for n < len(buf) && !eof {
			k, rerr := r.Read(buf[n:])
			n += k
			total += int64(k)
			switch {
			case rerr == io.EOF, rerr == nil && k == 0:
				eof = true
			case rerr != nil:
				return ms, false, rerr
			case size >= 0 && total >= size:
				eof = true
			}
		}
		if first {
			first = false
			if bytes.IndexByte(buf[:min(n, binarySniffBytes)], 0) >= 0 {
				return nil, true, nil
			}
		}
		end := n
		if !eof {
			end = bytes.LastIndexByte(buf[:n], '\n') + 1
			if end == 0 {
				if len(buf) < searchMaxLine {
					continue // grow and read more of this line
				}
				end = n // a line longer than the cap: searched in pieces
			}
		}
		region := buf[:end]
		sc.cur.reset()
		counted := 0
		from := 0
		for from < len(region) {
			pos, ok := sc.m.next(region, from, sc.cur)
			if !ok || (pos == len(region) && region[pos-1] == '\n') {
				// An empty match after the last "\n" is at the start of
				// the next region's first line, not on a line of this one.
				break
			}
			ls, le := lineBounds(region, pos)
			lineNo += bytes.Count(region[counted:ls], newline)
			counted = ls
			ms = append(ms, match{path: rel, line: lineNo, column: pos - ls + 1, text: lineText(region[ls:le], pos-ls)})
			if len(ms) >= sc.limit {
				return ms, false, nil
			}
			from = le + 1
		}
		lineNo += bytes.Count(region[counted:], newline)
		n = copy(buf, buf[end:n])
	}
	return ms, false, nil
}

var newline = []byte{'\n'}

// lineText returns the line for a result: without its "\r", valid UTF-8,
// and at most maxLineText bytes, taken around col when the line is longer.
func lineText(line []byte, col int) string {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) > maxLineText {
		start := max(0, min(col-maxLineText/4, len(line)-maxLineText))
		for start > 0 && !utf8.RuneStart(line[start]) {
			start--
		}
		end := min(len(line), start+maxLineText)
		for end < len(line) && end > start && !utf8.RuneStart(line[end]) {
			end--
		}
		line = line[start:end]
	}
	return strings.ToValidUTF8(string(line), "\uFFFD")
}
