package workspace

import (
	"context"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/harness-runtime/harness/action"
)

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
	dir, err := s.w.root.OpenRoot(rel)
	if err != nil {
		return fsError(rel, err)
	}
	if name := pseudoFSOfRoot(dir); name != "" {
		dir.Close()
		return action.Errorf(action.CodeInvalidInput, "path %s is on the %s pseudo file system, which is never served", quote(rel), name)
	}
	s.dev = deviceOfRoot(dir)
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
			sc.dev = s.dev
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
		if f := readIgnoreFile(s.w.root, s.w.dev, dir, joinRel(dir, ".gitignore")); f != nil {
			stack = append(stack, f)
		}
		dir = strings.Join(parts[:i+1], "/")
	}
	return stack
}

// readIgnoreFile reads and parses the .gitignore at name (relative to
// root, whose file system is dev's) for the directory base, or returns
// nil when there is none usable.
func readIgnoreFile(root *os.Root, dev rootDevice, base, name string) *ignoreFile {
	f, fi, err := openRegular(root, name, dev)
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
			if f := readIgnoreFile(dir, s.dev, rel, ".gitignore"); f != nil {
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
			if s.dev.differs(fi) {
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
