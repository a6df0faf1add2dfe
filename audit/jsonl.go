package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-runtime/harness/action"
)

// JSONL is an audit log in a local file, one record per line. It is safe
// for concurrent use by many goroutines, and several processes may append
// to one file: each write of a batch of records holds an exclusive flock
// on the file (where the OS has flock) while it reads the head of the
// chain, if another writer moved it, and writes its records, so the chain
// never forks.
//
// It does not rotate files and does not stop a user with write access to
// the file from rewriting it; the verifier finds such changes, except, in
// a keyed log, those made by someone who also holds the key.
type JSONL struct {
	mu       sync.Mutex
	path     string
	rw       *os.File // read-write: the flock, reading the tail, repairs
	f        *os.File // O_APPEND: records are written here
	instance string
	key      *chainKey // nil: records are unkeyed
	now      func() time.Time
	log      *slog.Logger
	hub      *Hub // nil: records are not published
	syncFile func(*os.File) error
	seq      uint64 // head of the chain as of this log's last look
	prev     string
	end      int64 // file size after this log's last look; -1: unknown
	keyed    bool  // a keyed record was seen in or written to this log
	broken   error
	closed   bool
	sealer   sealer // reused by writeBatch
	batch    []byte // writeBatch's buffer, kept for the next batch

	// written counts the lines this log has written; it changes under mu
	// and is read by the fsync leader without it.
	written atomic.Uint64
	gc      groupCommit

	// marks speed up Replay's cursor (see replay_jsonl.go).
	marks replayMarks

	// The write queue: appenders queue their events; one at a time
	// (writing) writes all that are queued.
	qmu     sync.Mutex
	queue   []appendReq
	writing bool
}

// groupCommit is the state of a JSONL's fsyncs. It has its own mutex so
// that waiting for, and handing out, fsync results never holds up writers.
// At most one appender at a time (the leader) fsyncs, outside any lock,
// for every line written when it started; the others queue as waiters and
// are told the result, or told to lead the next fsync.
type groupCommit struct {
	mu      sync.Mutex
	synced  uint64 // lines known to be on disk
	syncing bool   // a leader is fsyncing or being handed the lead
	err     error  // the first failed fsync; nothing is synced after it
	waiters []syncWaiter
}

type syncWaiter struct {
	n    uint64 // the waiter's line
	done chan syncResult
}

type syncResult struct {
	lead bool // the receiver leads the next fsync
	err  error
}

var _ Log = (*JSONL)(nil)

// OpenJSONL opens the JSONL log at path for appending, creating it with
// mode 0600 when it does not exist, and continues its chain after the last
// record. A torn last line is moved aside and recorded in the chain (see
// the package documentation); a last complete line that is not a valid
// record is refused with ErrCorrupt. Earlier records are not verified here:
// that is VerifyJSONL's job.
//
// With WithKey every record appended is keyed. A log whose last record is
// keyed can only be continued with its key: without one OpenJSONL fails
// with ErrKeyRequired, with another one with ErrWrongKey. A log whose last
// record is unkeyed (written before the chain was keyed) is continued with
// keyed records; a warning says so.
//
// path must name a regular file or nothing: a symbolic link at path is
// refused (wrapping ErrNotLogFile) and its target is neither created nor
// written. The directories above path are followed as the system does;
// call CheckOutside at start to refuse a path that reaches into the
// workspace.
func OpenJSONL(path string, opts ...Option) (*JSONL, error) {
	cfg := newConfig(opts)
	if cfg.instance == "" {
		cfg.instance = DefaultInstance()
	}
	key, err := chainKeyOf(cfg)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	rw, err := openLogFile(path, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	l := &JSONL{path: path, rw: rw, instance: cfg.instance, key: key, now: cfg.now, log: cfg.log, hub: cfg.hub,
		syncFile: (*os.File).Sync, prev: ZeroHash, end: -1}
	if err := l.open(); err != nil {
		rw.Close()
		if l.f != nil {
			l.f.Close()
		}
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	return l, nil
}

func (l *JSONL) open() error {
	var err error
	if l.f, err = openLogFile(l.path, os.O_WRONLY|os.O_APPEND); err != nil {
		return err
	}
	if err := sameFile(l.rw, l.f); err != nil {
		return err
	}
	// The file may just have been created: make its directory entry durable.
	if err := syncDir(filepath.Dir(l.path)); err != nil {
		return err
	}
	unlock, err := lockFile(context.Background(), l.rw)
	if err != nil {
		return err
	}
	defer unlock()
	if err := l.refresh(); err != nil {
		return err
	}
	if l.key != nil && !l.keyed && l.seq > 0 {
		l.log.Warn("audit log was written without a key; continuing it with keyed records (the earlier ones stay unkeyed, and verifying them needs --allow-unkeyed)",
			"path", l.path, "unkeyed_up_to_seq", l.seq, "key_id", l.key.id)
	}
	return nil
}

// sameFile fails unless a and b are one file: the log's two descriptors
// must not be split by a rename over its path between the two opens.
func sameFile(a, b *os.File) error {
	fa, err := a.Stat()
	if err != nil {
		return err
	}
	fb, err := b.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(fa, fb) {
		return fmt.Errorf("%w: %s was replaced while it was being opened", ErrNotLogFile, a.Name())
	}
	return nil
}

// refresh reads the head of the chain again if the file changed since this
// log last looked, and repairs a torn last line. The caller holds the flock.
func (l *JSONL) refresh() error {
	st, err := l.rw.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if size == l.end {
		return nil
	}
	if size < l.end {
		// Only a truncation does this: appenders never shrink the file.
		// The chain goes on from what is left; verifying against an
		// anchor shows what went.
		l.log.Warn("audit log is shorter than this process last wrote it: records were removed",
			"path", l.path, "size", size, "was", l.end)
	}
	end, last, err := lastLine(l.rw, size)
	if err != nil {
		return err
	}
	seq, prev := uint64(0), ZeroHash
	if last != nil {
		rec, err := l.checkTail(last)
		if err != nil {
			return err
		}
		seq, prev = rec.Seq, rec.Hash
	}
	l.seq, l.prev, l.end = seq, prev, end
	if end < size {
		if err := l.repairTornTail(end, size-end); err != nil {
			return fmt.Errorf("repair torn last line: %w", err)
		}
	}
	return nil
}

// checkTail parses the last record of the log, which this log is about to
// continue, and checks that its key allows that.
func (l *JSONL) checkTail(last []byte) (Record, error) {
	rec, bad := parseRecord(last, l.key)
	switch {
	case bad != nil && bad.needKey:
		return Record{}, fmt.Errorf("%w: %s (open the log with its key)", ErrKeyRequired, bad.msg)
	case bad != nil && bad.problem == ProblemWrongKey:
		return Record{}, fmt.Errorf("%w: %s", ErrWrongKey, bad.msg)
	case bad != nil:
		return Record{}, fmt.Errorf("%w: last complete record: %s (run harness audit verify)", ErrCorrupt, bad.msg)
	case rec.KeyID != "":
		l.keyed = true
	case l.keyed:
		// Appending after it would hide it: the verifier refuses an
		// unkeyed record after keyed ones, and so does this log.
		return Record{}, fmt.Errorf("%w: seq %d is unkeyed but follows keyed records: a writer without the key appended to the log (run harness audit verify)", ErrCorrupt, rec.Seq)
	}
	return rec, nil
}

// TornTailKind is the "kind" of the event a JSONL log writes (on open, or
// on append after another writer crashed) after moving a torn last line
// aside.
const TornTailKind = "audit_torn_tail"

// repairTornTail copies the n bytes after offset end aside, then writes
// over them a record saying so. The copy is durable before the log is
// changed, so the dropped bytes are never lost.
func (l *JSONL) repairTornTail(end, n int64) error {
	now := l.now()
	aside := fmt.Sprintf("%s.torn-%d", l.path, now.UnixNano())
	af, err := os.OpenFile(aside, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(af, h), io.NewSectionReader(l.rw, end, n))
	if err == nil {
		err = af.Sync()
	}
	if cerr := af.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(aside))
	}
	if err != nil {
		return fmt.Errorf("save torn bytes to %s: %w", aside, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	event := map[string]any{"kind": TornTailKind, "bytes": n, "sha256": sum, "saved_to": filepath.Base(aside)}
	rec, line, err := seal(l.seq+1, now, l.instance, l.prev, event, l.key)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if _, err := l.rw.WriteAt(line, end); err != nil {
		return err
	}
	if err := l.rw.Truncate(end + int64(len(line))); err != nil {
		return err
	}
	if err := l.rw.Sync(); err != nil {
		return err
	}
	l.seq, l.prev, l.end = rec.Seq, rec.Hash, end+int64(len(line))
	l.keyed = l.keyed || l.key != nil
	l.log.Warn("audit log ended in a torn line; moved it aside and recorded that in the chain",
		"path", l.path, "bytes", n, "sha256", sum, "saved_to", aside, "seq", rec.Seq)
	return nil
}

// lastLine finds, in the first size bytes of f, the end of the last
// complete line (the offset after its newline, 0 when there is none) and
// that line's text without the newline (nil when there is none).
func lastLine(f *os.File, size int64) (end int64, last []byte, err error) {
	nl, err := lastNewline(f, size, size)
	if err != nil || nl < 0 {
		return 0, nil, err
	}
	span := int64(maxRecordBytes) + 1
	start, err := lastNewline(f, nl, span)
	if err != nil {
		return 0, nil, err
	}
	if start < 0 && nl > span {
		return 0, nil, fmt.Errorf("%w: last line is longer than %d bytes", ErrCorrupt, maxRecordBytes)
	}
	last = make([]byte, nl-start-1)
	if _, err := f.ReadAt(last, start+1); err != nil {
		return 0, nil, err
	}
	return nl + 1, last, nil
}

// lastNewline returns the offset of the last '\n' before offset before,
// looking back at most span bytes; -1 when there is none.
func lastNewline(f *os.File, before, span int64) (int64, error) {
	buf := make([]byte, 64<<10)
	stop := max(before-span, 0)
	for pos := before; pos > stop; {
		n := min(int64(len(buf)), pos-stop)
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return pos + int64(i), nil
		}
	}
	return -1, nil
}

// Append writes event as the next record. With durable=true Append returns
// only once the record is on disk: fsync'd by this call or by a
// concurrent one that started after the record was written (group commit:
// concurrent durable appends share fsyncs, and no lock of the log is held
// during an fsync). If that fsync fails, every append waiting for it
// fails and the log is broken (ErrBroken) from then on. Concurrent appends
// are also written in groups: one appender writes every record queued so
// far in one write, under one flock. The context is checked before the
// append starts; the wait for another process's append (one write), the
// write itself and the wait for the fsync are not interrupted.
func (l *JSONL) Append(ctx context.Context, event any, durable bool) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, fmt.Errorf("audit append: %w", err)
	}
	evs, err := canonicalEvents([]any{event})
	if err != nil {
		return Record{}, err
	}
	return l.append(evs, durable)
}

// AppendAll adds events as consecutive records of the chain, all or none,
// in one write (one system call and one flock, where Append costs one of
// each per record), and returns the last. Durability is as Append's.
func (l *JSONL) AppendAll(ctx context.Context, events []any, durable bool) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, fmt.Errorf("audit append: %w", err)
	}
	if len(events) == 0 {
		return Record{}, nil
	}
	evs, err := canonicalEvents(events)
	if err != nil {
		return Record{}, err
	}
	return l.append(evs, durable)
}

// eventBytes is room for a typical event's canonical JSON: most fit, so
// that a record's event is encoded without growing its buffer.
const eventBytes = 1 << 10

// canonicalEvents returns the canonical JSON of each event, all in one
// allocation when they fit in eventBytes each. Each is its own slice,
// capped at its end, and never written again (records keep them).
func canonicalEvents(events []any) ([][]byte, error) {
	evs := make([][]byte, len(events))
	buf := make([]byte, 0, eventBytes*len(events))
	for i, event := range events {
		start := len(buf)
		var err error
		if buf, err = action.AppendCanonical(buf, event); err != nil {
			return nil, fmt.Errorf("audit append: event: %w", err)
		}
		evs[i] = buf[start:len(buf):len(buf)]
	}
	return evs, nil
}

func (l *JSONL) append(evs [][]byte, durable bool) (Record, error) {
	r := l.enqueue(evs)
	if r.err != nil {
		return Record{}, r.err
	}
	if durable {
		if err := l.waitSynced(r.n); err != nil {
			return Record{}, fmt.Errorf("audit append to %s: %w", l.path, err)
		}
	}
	return r.rec, nil
}

// appendReq is a run of events waiting in the write queue, to be written
// as consecutive records, all or none.
type appendReq struct {
	evs  [][]byte
	done chan appendResult // one message: the result, or the lead
}

type appendResult struct {
	lead bool   // the receiver writes the next batch (its own included)
	rec  Record // the last record of the request
	n    uint64 // its line number in this log's count
	err  error
}

// enqueue queues ev to be written and returns its result. If no appender
// is writing, this one writes every queued record (its own included) as
// one batch, answers the others and hands the writing on to the first
// appender queued meanwhile, if any.
func (l *JSONL) enqueue(evs [][]byte) appendResult {
	req := appendReq{evs: evs, done: make(chan appendResult, 1)}
	l.qmu.Lock()
	l.queue = append(l.queue, req)
	if l.writing {
		l.qmu.Unlock()
		if r := <-req.done; !r.lead {
			return r
		}
		l.qmu.Lock()
	} else {
		l.writing = true
	}
	batch := l.queue
	l.queue = nil
	l.qmu.Unlock()

	l.mu.Lock()
	results := l.writeBatch(batch)
	l.mu.Unlock()
	var mine appendResult
	for i, b := range batch {
		if b.done == req.done {
			mine = results[i]
			continue
		}
		b.done <- results[i]
	}

	l.qmu.Lock()
	if len(l.queue) > 0 {
		// The first queued appender writes next; it stays queued, so
		// its record is in the batch it takes.
		l.queue[0].done <- appendResult{lead: true}
	} else {
		l.writing = false
	}
	l.qmu.Unlock()
	return mine
}

// writeBatch seals the events of batch as the next records and writes
// them in one write, holding the flock, and returns each one's result.
// The caller holds mu.
func (l *JSONL) writeBatch(batch []appendReq) []appendResult {
	results := make([]appendResult, len(batch))
	failAll := func(err error) []appendResult {
		for i := range results {
			results[i] = appendResult{err: err}
		}
		return results
	}
	switch {
	case l.closed:
		return failAll(ErrClosed)
	case l.broken != nil:
		return failAll(fmt.Errorf("%w: %s: %v", ErrBroken, l.path, l.broken))
	}
	// Each appender checked its context before queueing; the flock is
	// not interrupted (see lockFile).
	unlock, err := lockFile(context.Background(), l.rw)
	if err != nil {
		return failAll(fmt.Errorf("audit append to %s: %w", l.path, err))
	}
	defer unlock()
	if err := l.refresh(); err != nil {
		return failAll(fmt.Errorf("audit append to %s: %w", l.path, err))
	}
	seq, prev := l.seq, l.prev
	n := l.written.Load()
	buf := l.batch[:0]
	defer func() {
		// Written (the system call copied it) or given up: reused by the
		// next batch, unless a large record grew it.
		if cap(buf) <= keptBufferBytes {
			l.batch = buf[:0]
		} else {
			l.batch = nil
		}
	}()
	var recs []Record // of the batch, in order, for the hub
	for i, b := range batch {
		// A request's records go in whole or not at all.
		reqSeq, reqPrev, reqN, mark, start := seq, prev, n, len(buf), len(recs)
		var rec Record
		var err error
		for _, ev := range b.evs {
			if rec, buf, err = l.sealer.appendSealed(buf, reqSeq+1, l.now(), l.instance, reqPrev, ev, l.key); err != nil {
				break
			}
			buf = append(buf, '\n')
			recs = append(recs, rec)
			reqSeq, reqPrev, reqN = rec.Seq, rec.Hash, reqN+1
		}
		if err != nil {
			buf, recs = buf[:mark], recs[:start]
			results[i] = appendResult{err: fmt.Errorf("audit append: %w", err)}
			continue
		}
		seq, prev, n = reqSeq, reqPrev, reqN
		results[i] = appendResult{rec: rec, n: n}
	}
	if len(buf) == 0 {
		return results
	}
	if _, err := l.f.Write(buf); err != nil {
		l.broken = err
		for i := range results {
			if results[i].err == nil {
				results[i] = appendResult{err: fmt.Errorf("audit append to %s: %w", l.path, err)}
			}
		}
		return results
	}
	l.seq, l.prev, l.end = seq, prev, l.end+int64(len(buf))
	l.keyed = l.keyed || l.key != nil
	l.written.Store(n)
	if l.hub != nil {
		// Under mu: the hub sees the records in the order of the chain.
		for _, rec := range recs {
			l.hub.Publish(rec)
		}
	}
	if testHookBatch != nil {
		testHookBatch(len(batch))
	}
	return results
}

// testHookBatch, when set by a test, is called with the size of every
// batch written.
var testHookBatch func(n int)

// waitSynced returns once the first n lines this log wrote are on disk.
// If no fsync is in flight it fsyncs itself (leads); otherwise it waits
// for the leader to report, and leads the next fsync if the leader hands
// it over. After a failed fsync it fails, as does every later call for a
// line not yet on disk: the kernel may have dropped anything written since
// the last good fsync. The caller holds no lock.
func (l *JSONL) waitSynced(n uint64) error {
	g := &l.gc
	g.mu.Lock()
	for {
		switch {
		case g.synced >= n:
			g.mu.Unlock()
			return nil
		case g.err != nil:
			err := g.err
			g.mu.Unlock()
			return fmt.Errorf("record not made durable: %w", err)
		case g.syncing:
			done := make(chan syncResult, 1)
			g.waiters = append(g.waiters, syncWaiter{n: n, done: done})
			g.mu.Unlock()
			r := <-done
			if !r.lead {
				if r.err != nil {
					return fmt.Errorf("record not made durable: %w", r.err)
				}
				return nil
			}
			// Handed the lead: syncing stayed true for this call.
			g.mu.Lock()
			if g.synced >= n || g.err != nil {
				l.passLead()
				continue
			}
		default:
			g.syncing = true
		}
		target := l.written.Load()
		g.mu.Unlock()
		err := l.syncFile(l.f)
		if err != nil {
			l.mu.Lock()
			if l.broken == nil {
				l.broken = fmt.Errorf("fsync: %w", err)
			}
			l.mu.Unlock()
		}
		g.mu.Lock()
		switch {
		case err != nil && g.err == nil:
			g.err = fmt.Errorf("fsync: %w", err)
		case err == nil && target > g.synced:
			g.synced = target
		}
		l.passLead()
	}
}

// passLead tells every waiter whose line is on disk (or, after a failed
// fsync, every waiter) its result, and hands the lead to the first waiter
// left, if any; otherwise no fsync is in flight any more. The caller holds
// gc.mu and leads.
func (l *JSONL) passLead() {
	g := &l.gc
	l.answerWaiters()
	if len(g.waiters) == 0 {
		g.syncing = false
		return
	}
	next := g.waiters[0]
	g.waiters = g.waiters[1:]
	next.done <- syncResult{lead: true}
}

// answerWaiters tells every waiter whose line is on disk, or every waiter
// after a failed fsync, its result, keeping the others. The caller holds
// gc.mu.
func (l *JSONL) answerWaiters() {
	g := &l.gc
	left := g.waiters[:0]
	for _, w := range g.waiters {
		switch {
		case w.n <= g.synced:
			w.done <- syncResult{}
		case g.err != nil:
			w.done <- syncResult{err: g.err}
		default:
			left = append(left, w)
		}
	}
	clear(g.waiters[len(left):])
	g.waiters = left
}

// Sync makes every record appended so far by this log durable.
func (l *JSONL) Sync() error {
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if err := l.waitSynced(l.written.Load()); err != nil {
		return fmt.Errorf("audit sync %s: %w", l.path, err)
	}
	return nil
}

// Head returns the seq and hash of the last record as this log last saw
// it (0 and ZeroHash for an empty log); other writers may have appended
// since.
func (l *JSONL) Head() (uint64, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq, l.prev
}

// Close syncs and closes the log. Append after Close returns ErrClosed;
// closing twice is not an error.
func (l *JSONL) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var err error
	if l.broken == nil {
		// An fsync in flight may still be running: this one covers
		// everything written (mu stops new writes), so every waiter
		// can be answered now.
		err = l.syncFile(l.f)
		l.gc.mu.Lock()
		if err == nil {
			l.gc.synced = max(l.gc.synced, l.written.Load())
		} else {
			l.broken = fmt.Errorf("fsync: %w", err)
			if l.gc.err == nil {
				l.gc.err = l.broken
			}
		}
		l.answerWaiters()
		l.gc.mu.Unlock()
	}
	err = errors.Join(err, l.f.Close(), l.rw.Close())
	if err != nil {
		return fmt.Errorf("audit close %s: %w", l.path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
